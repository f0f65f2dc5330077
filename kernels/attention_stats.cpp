#include "kernels/attention_stats.hpp"

#include <omp.h>

#include <string>

#include "core/attention.hpp"
#include "core/input_error.hpp"
#include "core/metrics.hpp"
#include "greedy/eviction/optimum/step_oracle.hpp"
#include "kernels/detail/kernel_runner.hpp"

namespace subevict::kernels {
namespace {

/// The reference: core's exact attention and greedy's step oracle, one head at a time.
void reference_stats(const Workload& w, const AttentionStatsOptions& opt, AttentionStats& out) {
  const Shape& s = w.shape();
  const int n = s.tokens, heads = s.layers * s.q_heads;
  const double scale = w.score_scale();
#pragma omp parallel for schedule(dynamic)
  for (int h = 0; h < heads; ++h) {
    const int layer = h / s.q_heads, q_head = h % s.q_heads;
    const ConstHeadMap q = w.q(layer, q_head), k = w.k(layer, s.kv_head_of(q_head));
    const Eigen::MatrixXd a = causal_attention(q, k, scale);
    const std::size_t at = std::size_t(h) * n;
    std::int64_t below = 0;
    for (int i = 0; i < n; ++i) {
      out.log_normalizer[at + i] = log_sum_exp(causal_logits(q, k, i, scale));
      below += count_below(a.row(i).head(i + 1).transpose(), opt.tau);
    }
    const Eigen::VectorXd columns = accumulated_attention(a);
    for (int j = 0; j < n; ++j) out.column_sum[at + j] = columns[j];
    const greedy::StepOracle oracle = greedy::step_oracle(a, opt.budget);
    for (int i = 0; i < n; ++i) out.oracle_mass[at + i] = oracle.per_step[i];
    out.below_tau[std::size_t(h)] = below;
  }
}

void validate(const AttentionStatsOptions& options) {
  if (!(options.tau > 0.0 && options.tau <= 1.0)) {
    throw InputError("attention statistics", "tau", "a ratio in (0, 1]", std::to_string(options.tau));
  }
  if (options.budget < 0) {
    throw InputError("attention statistics", "budget", "a size >= 0", std::to_string(options.budget));
  }
}

/// The statistics of validated options by `runner` (the portable / cuda layouts).
AttentionStats run_stats(const Workload& workload, const AttentionStatsOptions& options,
                         const detail::StatsRunner& runner) {
  const Shape& s = workload.shape();
  const detail::StatsInput in{detail::to_dims(s), workload.score_scale(), workload.q_data().data(), workload.k_data().data(),
                              options.tau, options.budget};
  detail::StatsOutput result;
  runner(in, result);
  AttentionStats out;
  out.shape = s;
  out.log_normalizer = std::move(result.log_normalizer);
  out.column_sum = std::move(result.column_sum);
  out.oracle_mass = std::move(result.oracle_mass);
  out.below_tau = std::move(result.below_tau);
  return out;
}

}  // namespace

AttentionStats attention_stats(const Workload& workload, const AttentionStatsOptions& options, Backend backend) {
  validate(options);
  require_available(backend);
  require_global_attention(workload, "attention statistics");
  if (backend == Backend::kReference) {
    const Shape& s = workload.shape();
    const std::size_t rows = std::size_t(s.layers) * s.q_heads * s.tokens;
    AttentionStats out;
    out.shape = s;
    out.log_normalizer.resize(rows);
    out.column_sum.resize(rows);
    out.oracle_mass.resize(rows);
    out.below_tau.resize(std::size_t(s.layers) * s.q_heads);
    reference_stats(workload, options, out);
    return out;
  }
#ifdef SUBEVICT_KERNELS_CUDA
  if (backend == Backend::kCuda) return run_stats(workload, options, detail::cuda::attention_stats);
#endif
  return run_stats(workload, options, detail::portable::attention_stats);
}

AttentionStats detail::attention_stats_with(const Workload& workload, const AttentionStatsOptions& options,
                                            const StatsRunner& runner) {
  validate(options);
  return run_stats(workload, options, runner);
}

}  // namespace subevict::kernels
