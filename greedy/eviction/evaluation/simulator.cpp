#include "greedy/eviction/evaluation/simulator.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "core/attention.hpp"
#include "core/exact_attention_rows.hpp"
#include "core/input_error.hpp"
#include "greedy/eviction/evaluation/streaming_head.hpp"
#include "greedy/eviction/policies/policy_support.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"

namespace subevict::greedy {

namespace {

void validate_options(const SimulationOptions& options, int n) {
  if (options.budget < 1) throw std::invalid_argument("simulate: budget must be >= 1");
  if (options.prefill < 0 || options.prefill > n) throw std::invalid_argument("simulate: prefill must be in [0, n]");
  if (options.threads < 1) throw std::invalid_argument("simulate: threads must be >= 1");
}

}  // namespace

int Budget::resolve(int tokens, int prefill) const {
  if (kind == Kind::kAbsolute) {
    if (!(value >= 1.0 && value == std::floor(value) && value <= 2147483647.0)) {
      throw InputError("budget", "absolute size", "an integer >= 1", std::to_string(value));
    }
    return std::min(int(value), std::max(tokens, 1));
  }
  if (!(value > 0.0 && value <= 1.0)) {
    throw InputError("budget", "ratio", "a ratio in (0, 1]", std::to_string(value));
  }
  if (kind == Kind::kRatioOfPrompt && prefill <= 0) {
    throw InputError("budget", "ratio of the prompt", "a prefill length > 0", std::to_string(prefill));
  }
  const int base = kind == Kind::kRatioOfPrompt ? prefill : tokens;
  return std::clamp(int(std::lround(value * double(base))), 1, std::max(tokens, 1));
}

double Trace::total_retained_mass() const {
  const int start = prefill > budget ? prefill : 0;
  double total = 0.0;
  for (std::size_t e = std::size_t(start) * std::size_t(heads); e < head_retained_mass.size(); ++e) {
    total += head_retained_mass[e];
  }
  return total;
}

std::vector<int> Trace::last_step() const {
  std::vector<int> last(std::size_t(tokens), tokens - 1);
  for (Token t : prefill_evicted) last[std::size_t(t)] = prefill - 2;
  for (const StepRecord& record : steps) {
    if (record.evicted != kNoEviction) last[std::size_t(record.evicted)] = record.step - 1;
  }
  return drop_outside_window(std::move(last), window);
}

std::vector<ExactRows> group_exact_rows(const HeadGroup& input, int threads) {
  input.validate();
  const CpuPath path = active_cpu_path();
  std::vector<ExactRows> exact;
  for (const ConstHeadMap& q : input.q) {
    exact.push_back(exact_attention_rows(q, input.k, input.v, input.scale, path, input.window, threads));
  }
  return exact;
}

Trace simulate(const HeadGroup& input, EvictionPolicy& policy, const SimulationOptions& options) {
  input.validate();
  validate_options(options, input.tokens());
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<ExactRows> exact = options.compute_metrics ? group_exact_rows(input) : std::vector<ExactRows>{};
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Trace trace = simulate(input, policy, options, exact);
  trace.precompute_seconds = seconds;
  return trace;
}

Trace simulate(const HeadGroup& input, EvictionPolicy& policy, const SimulationOptions& options,
               const std::vector<ExactRows>& exact) {
  input.validate();
  const int n = input.tokens(), d = input.head_dim(), g = input.group_size();
  validate_options(options, n);
  if (options.compute_metrics) {
    bool fits = exact.size() == std::size_t(g);
    for (const ExactRows& rows : exact) {
      fits = fits && rows.log_normalizer.size() == std::size_t(n) && rows.output.rows() == n && rows.output.cols() == d;
    }
    if (!fits) throw std::invalid_argument("simulate: the exact rows do not belong to this group (g, n or d differ)");
  }

  PolicyContext context{&input, n, options.budget, options.prefill, options.aggregation, options.seed};
  policy.reset(context);
  // A window of W ≤ k keys never fills a cache of k: the run compresses nothing (budget n).
  const bool compresses = policy.compresses() && (input.window == 0 || context.budget < input.window);
  const int k = compresses ? context.budget : n;
  const bool prefill = options.prefill > k;
  const int start = prefill ? options.prefill : 0;

  const bool metrics = options.compute_metrics;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Trace trace = empty_trace(input, policy, k, options.prefill, metrics);
  if (options.record_cache) trace.cache.resize(std::size_t(n));

  using Clock = std::chrono::steady_clock;
  const int capacity = std::min(k, n) + 1;  // |G_i| ≤ min(k + 1, i + 1)
  StreamingHead head(input, capacity, metrics, exact, options.aggregation, trace, kStepBlock, options.threads);
  const auto t1 = Clock::now();
  // Prefill steps attend over the whole prefix (r = 1, error 0); then the prefill rule compresses.
  for (int i = 0; i < start; ++i) {
    trace.steps[std::size_t(i)] = {i, metrics ? 1.0 : nan, metrics ? 0.0 : nan, metrics ? 0.0 : nan, kNoEviction};
    if (options.record_cache) {
      const Token from = first_visible_key(i + 1, input.window);  // the tokens step i + 1 can see
      trace.cache[std::size_t(i)].resize(std::size_t(i + 1 - from));
      std::iota(trace.cache[std::size_t(i)].begin(), trace.cache[std::size_t(i)].end(), from);
    }
  }
  if (prefill) {
    trace.prefill_evicted = run_prefill_rule(head, policy, options.prefill, k, input.window);
    if (options.record_cache) trace.cache[std::size_t(start - 1)] = head.sorted();
  }

  for (int i = start; i < n; ++i) {
    trace.steps[std::size_t(i)].evicted = run_policy_step(head, policy, i, k);
    if (options.record_cache) trace.cache[std::size_t(i)] = head.sorted();
    if (options.on_steps && ((i + 1) % kStepReport == 0 || i + 1 == n)) options.on_steps(i + 1, n);
  }
  head.finish();
  trace.step_seconds = std::chrono::duration<double>(Clock::now() - t1).count();
  return trace;
}

std::vector<Trace> simulate_workload(const Workload& workload, const PolicyFactory& make_policy,
                                     const SimulationOptions& options, int threads,
                                     const std::function<void(int, int)>& progress) {
  const Shape& shape = workload.shape();
  const int total = shape.layers * shape.kv_heads;
  std::vector<Trace> traces(static_cast<std::size_t>(total));
  std::exception_ptr failure;
  int done = 0;
  const int workers = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel num_threads(workers)
  {
    std::unique_ptr<EvictionPolicy> policy;
#pragma omp critical(subevict_simulate_policy)
    try {
      policy = make_policy();
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
#pragma omp for schedule(dynamic)
    for (int index = 0; index < total; ++index) {
      if (!policy) continue;
      try {
        const HeadGroup group = head_group(workload, index / shape.kv_heads, index % shape.kv_heads);
        traces[std::size_t(index)] = simulate(group, *policy, options);
      } catch (...) {
#pragma omp critical(subevict_simulate_failure)
        if (!failure) failure = std::current_exception();
        continue;
      }
#pragma omp critical(subevict_simulate_progress)
      {
        ++done;
        if (progress) progress(done, total);
      }
    }
  }
  if (failure) std::rethrow_exception(failure);
  return traces;
}

}  // namespace subevict::greedy
