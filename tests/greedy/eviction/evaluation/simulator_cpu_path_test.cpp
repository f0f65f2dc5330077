// Tests that the CPU path of the exact rows (core/cpu_path.hpp, SUBEVICT_CPU_PATH) never changes
// a decision of greedy/eviction/evaluation/simulator.hpp and moves its metrics only within the
// tolerance derived from core/exact_attention_rows.hpp exact_rows_tolerance:
//   retained mass r = exp(m - L_i) * sum: |dr| <= r (exp(dL) - 1) <= 1.01 dL for dL <= 0.01;
//   output error e = ||o - o~|| / ||o||: |de| <= D (1 + e) / (||o|| - D), with D bounding the
//   change of o (exact rows) plus that of o~ (core/weighted_rows.hpp, 2 gamma(k + 1) max|v| per
//   entry): D = sqrt(d) (output + 2 gamma(n)) max|v|.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/cpu_path.hpp"
#include "core/exact_attention_rows.hpp"
#include "core/generator.hpp"
#include "core/input_error.hpp"
#include "core/tolerance.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/evaluation/streaming_head.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/policies/policy_support.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "tests/core/scoped_cpu_path.hpp"

namespace subevict::greedy {
namespace {

using testing_support::ScopedCpuPath;

/// An LLM-like workload of 301 tokens, d = 128, with `q_heads` query heads over 2 KV heads (2: MHA,
/// where the AVX2 path also computes the scores; 4: GQA with groups of 2).
Workload llm_like_workload(int q_heads = 4) {
  WorkloadSpec spec = spec_from_preset("llama2-7b", 301, 1, 5);
  spec.shape.q_heads = q_heads;
  spec.shape.kv_heads = 2;
  return generate_workload(spec);
}

std::vector<Trace> run(const Workload& w, const std::string& policy, const std::string& path,
                       int threads) {
  const ScopedCpuPath scoped(path);
  SimulationOptions options;
  options.budget = 60;
  return simulate_workload(
      w, [&] { return make_policy(policy); }, options, threads);
}

TEST(SimulatorCpuPath, DecisionsAreIdenticalAndMetricsWithinTheExactRowsTolerance) {
  if (!cpu_supports_avx2_fma()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  for (int q_heads : {2, 4}) {
    const Workload w = llm_like_workload(q_heads);
    const Shape& s = w.shape();
    for (const std::string policy : {"h2o", "tova", "local", "random"}) {
      const std::vector<Trace> portable = run(w, policy, "portable", 1),
                               fast = run(w, policy, "avx2", 2);
      ASSERT_EQ(portable.size(), fast.size());
      int differing = 0;  // the avx2 run really took the other path: some metric moved by rounding
      for (std::size_t group = 0; group < portable.size(); ++group) {
        const Trace &a = portable[group], &b = fast[group];
        const int g = a.heads, n = a.tokens;
        for (int i = 0; i < n; ++i)
          ASSERT_EQ(a.steps[i].evicted, b.steps[i].evicted) << policy << " step " << i;
        for (int h = 0; h < g; ++h) {
          const int q_head = int(group) * g + h;
          const ConstHeadMap q = w.q(0, q_head), k = w.k(0, int(group)), v = w.v(0, int(group));
          const ExactRowsTolerance tol =
              exact_rows_tolerance(n, s.head_dim, score_magnitude(q, k, w.score_scale()));
          ASSERT_LT(tol.log_normalizer, 0.01);
          const double do_norm = std::sqrt(double(s.head_dim)) *
                                 (tol.output + 2.0 * Tol<double>::sum(std::size_t(n))) *
                                 v.cwiseAbs().maxCoeff();
          const ExactRows exact =
              exact_attention_rows(q, k, v, w.score_scale(), CpuPath::kPortable);
          for (int i = 0; i < n; ++i) {
            const std::size_t e = std::size_t(i) * g + h;
            EXPECT_LE(std::fabs(a.head_retained_mass[e] - b.head_retained_mass[e]),
                      1.01 * tol.log_normalizer)
                << policy << " step " << i;
            const double o_norm = exact.output.row(i).norm();
            ASSERT_GT(o_norm, 2.0 * do_norm);
            const double bound = do_norm * (1.0 + a.head_output_error[e]) / (o_norm - do_norm);
            EXPECT_LE(std::fabs(a.head_output_error[e] - b.head_output_error[e]), bound)
                << policy << " step " << i;
            differing += a.head_retained_mass[e] != b.head_retained_mass[e];
          }
        }
      }
      EXPECT_GT(differing, 0) << policy;
    }
  }
}

TEST(SimulatorCpuPath, PrefillScoresWithinTheColumnSumsToleranceAndTheSameDecisions) {
  // The prefill rule's accumulated scores (policy_support.hpp accumulated_full_attention) come from
  // CausalWeightTiles::column_sums on the AVX2 path: within its relative tolerance of the portable
  // path's per-weight sums, and the same h2o prefill decisions where no two scores are that close.
  if (!cpu_supports_avx2_fma()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  const Workload w = llm_like_workload(4);
  const Shape& s = w.shape();
  constexpr int kPrompt = 240;
  int differing = 0;
  for (int group = 0; group < s.kv_heads; ++group) {
    const HeadGroup heads = head_group(w, 0, group);
    std::vector<double> portable, fast;
    {
      const ScopedCpuPath scoped("portable");
      portable = policies::accumulated_full_attention(heads, GroupAggregation::kSum, 0, kPrompt);
    }
    {
      const ScopedCpuPath scoped("avx2");
      fast = policies::accumulated_full_attention(heads, GroupAggregation::kSum, 0, kPrompt);
    }
    double magnitude = 0;
    for (const ConstHeadMap& q : heads.q)
      magnitude = std::max(magnitude, score_magnitude(q, heads.k, heads.scale));
    const double relative =
        2.0 * exact_rows_tolerance(kPrompt, s.head_dim, magnitude).log_normalizer +
        Tol<double>::sum(std::size_t(kPrompt) * heads.q.size());
    ASSERT_EQ(portable.size(), fast.size());
    for (std::size_t j = 0; j < portable.size(); ++j) {
      EXPECT_LE(std::fabs(portable[j] - fast[j]), relative * portable[j])
          << "group " << group << " token " << j;
      differing += portable[j] != fast[j];
    }
  }
  EXPECT_GT(differing, 0) << "the avx2 path gave the portable path's doubles: it did not run";
  SimulationOptions options;
  options.budget = 60;
  options.prefill = kPrompt;
  std::vector<Trace> traces[2];
  for (int p = 0; p < 2; ++p) {
    const ScopedCpuPath scoped(p == 0 ? "portable" : "avx2");
    traces[p] = simulate_workload(
        w, [] { return make_policy("h2o"); }, options, 1);
  }
  for (std::size_t group = 0; group < traces[0].size(); ++group) {
    for (std::size_t i = 0; i < traces[0][group].steps.size(); ++i)
      ASSERT_EQ(traces[0][group].steps[i].evicted, traces[1][group].steps[i].evicted)
          << "step " << i;
  }
}

TEST(SimulatorCpuPath, ForcedPortableReproducesTheDefaultPortableRun) {
  // The portable path is deterministic: the same traces bit for bit, whichever thread runs a head.
  const Workload w = llm_like_workload();
  const std::vector<Trace> one = run(w, "h2o", "portable", 1), two = run(w, "h2o", "portable", 2);
  for (std::size_t group = 0; group < one.size(); ++group) {
    EXPECT_EQ(one[group].head_retained_mass, two[group].head_retained_mass);
    EXPECT_EQ(one[group].head_output_error, two[group].head_output_error);
  }
}

/// h2o streaming through `group` with budget k, as simulate runs it, on a StreamingHead of the
/// given block size and threads.
Trace run_blocks(const HeadGroup& group, int k, int block_steps, int threads) {
  const int n = group.tokens();
  auto policy = make_policy("h2o");
  policy->reset({&group, n, k, 0, GroupAggregation::kSum, 0});
  Trace trace = empty_trace(group, *policy, k, 0, true);
  const std::vector<ExactRows> exact = group_exact_rows(group);
  StreamingHead head(group, k + 1, true, exact, GroupAggregation::kSum, trace, block_steps,
                     threads);
  for (int i = 0; i < n; ++i) {
    const bool full = head.size_without_eviction(i) > k;
    const Token evicted = policy->step(head.arrive(i, full));
    if (full) {
      EXPECT_TRUE(head.evict(evicted));
    }
    trace.steps[std::size_t(i)].evicted = evicted;
    head.leave_window(i);
  }
  if (block_steps > 1) {
    EXPECT_TRUE(std::isnan(trace.head_output_error.back())) << "the last block is pending";
  }
  head.finish();
  return trace;
}

TEST(SimulatorCpuPath, StepBlocksChangeNoBitOfTheTrace) {
  // On the AVX2 path a head computes its scores (MHA) and its outputs for blocks of steps at once,
  // summing the outputs over the block's tokens in ascending order: every block size and thread
  // count must give the per-step run's bits (block 1), decisions and metrics alike; a sliding
  // window drops tokens inside blocks.
  if (!cpu_supports_avx2_fma()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  const ScopedCpuPath scoped("avx2");
  for (int q_heads : {2, 4}) {
    const Workload w = llm_like_workload(q_heads);
    for (int window : {0, 70}) {
      HeadGroup group = head_group(w, 0, 1);
      group.window = window;
      const Trace one = run_blocks(group, 40, 1, 1);
      int evictions = 0;
      for (const StepRecord& step : one.steps) evictions += step.evicted != kNoEviction;
      ASSERT_GT(evictions, 100);
      for (auto [block, threads] : {std::pair{3, 1}, std::pair{64, 2}, std::pair{301, 2}}) {
        const Trace blocked = run_blocks(group, 40, block, threads);
        for (std::size_t i = 0; i < one.steps.size(); ++i) {
          ASSERT_EQ(one.steps[i].evicted, blocked.steps[i].evicted)
              << q_heads << " " << block << " step " << i;
        }
        EXPECT_EQ(one.head_retained_mass, blocked.head_retained_mass) << q_heads << " " << block;
        EXPECT_EQ(one.head_output_error, blocked.head_output_error) << q_heads << " " << block;
      }
      if (window == 0) {  // simulate's own run: the same trace
        SimulationOptions options;
        options.budget = 40;
        options.threads = 2;
        auto policy = make_policy("h2o");
        const Trace simulated = simulate(group, *policy, options);
        EXPECT_EQ(one.head_output_error, simulated.head_output_error);
      }
    }
  }
}

TEST(SimulatorCpuPath, AnUnknownPathIsRejected) {
  const Workload w = llm_like_workload();
  EXPECT_THROW((void)run(w, "h2o", "vectorized", 1), InputError);
}

}  // namespace
}  // namespace subevict::greedy
