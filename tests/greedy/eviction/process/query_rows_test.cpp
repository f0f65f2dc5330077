// The row-restricted ("question-aware") optimum: gains restricted to query rows R
// (greedy/eviction/process/query_rows.*) through every path of head evaluation (stored double,
// stored float, streamed tiles, certified column generation) against exhaustive dynamic
// programming over cache states (cache_dp) on the R-mass Σ_{i ∈ R} Σ_{j ∈ G_i} W_ij measured on the
// unrestricted W, and against every registered policy, the unrestricted optimum and the oracle.
#include "greedy/eviction/process/query_rows.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "core/generator.hpp"
#include "core/input_error.hpp"
#include "core/tolerance.hpp"
#include "greedy/eviction/evaluation/head_evaluation.hpp"
#include "greedy/eviction/optimum/cache_dp.hpp"
#include "greedy/eviction/optimum/offline_optimum.hpp"
#include "greedy/eviction/optimum/step_oracle.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/process/streamed_gains.hpp"
#include "greedy/eviction/process/triangular_gains.hpp"

namespace subevict::greedy {
namespace {

/// Exact solvers on double gains, and the streamed tiles against the stored triangle (the paths'
/// tolerance, streamed_flow_test.cpp): relative.
constexpr double kAgreement = 1e-9;

/// Σ_{i ∈ R} of a per-step mass (R given as its mask).
double rows_sum(const Eigen::VectorXd& step_mass, const std::vector<char>& mask) {
  double sum = 0.0;
  for (Eigen::Index i = 0; i < step_mass.size(); ++i)
    sum += mask[std::size_t(i)] ? step_mass[i] : 0.0;
  return sum;
}

/// The R-mass of schedule `last_step` on the unrestricted gains W (dense): Σ_{i ∈ R} Σ_{j ∈ G_i}
/// W_ij.
double rows_mass(const Eigen::MatrixXd& w, const std::vector<int>& last_step,
                 const std::vector<char>& mask) {
  const int n = int(w.rows());
  Eigen::VectorXd step = Eigen::VectorXd::Zero(n);
  for (int j = 0; j < n; ++j) {
    for (int i = j; i < n && (i == j || i <= last_step[std::size_t(j)] + 1); ++i)
      step[i] += w(i, j);
  }
  return rows_sum(step, mask);
}

std::vector<HeadEvaluation> optima(const Workload& w, int kv, int k,
                                   const HeadEvaluationOptions& options,
                                   const std::vector<PolicySpec>& policies = {}) {
  return evaluate_head_budgets(w, 0, kv, policies, {k}, options);
}

RC_GTEST_PROP(QueryRows, EveryPathEqualsTheDynamicProgramOnTheRowMass, ()) {
  const int n = *rc::gen::inRange(2, 11);
  const int k = *rc::gen::inRange(1, n + 1);
  const std::string preset = *rc::gen::element(std::string("tiny"), std::string("tiny-gqa"));
  const auto seed = *rc::gen::inRange<std::uint64_t>(0, 1000000);
  std::vector<int> rows =
      *rc::gen::nonEmpty(rc::gen::container<std::vector<int>>(rc::gen::inRange(0, n)));
  const Workload w = generate_workload(spec_from_preset(preset, n, 1, seed));
  const int kv = w.shape().kv_heads - 1;
  const std::vector<char> mask = query_row_mask(rows, n, "test");
  const Eigen::MatrixXd full = gain_matrix(head_group(w, 0, kv));
  Eigen::MatrixXd restricted = full;
  restrict_to_rows(restricted, mask);
  // The exhaustive reference: the best schedule of the R-restricted objective, valued on W's R
  // rows.
  const ScheduleSummary dp = cache_dp(restricted, k);
  const double reference = rows_mass(full, dp.last_step, mask);
  RC_ASSERT(near(reference, dp.value, kAgreement));
  RC_ASSERT(near(offline_optimum(restricted, k).value, reference, kAgreement));  // the explicit network

  HeadEvaluationOptions stored;
  stored.optimum_rows = rows;
  HeadEvaluationOptions single = stored;  // float gains beyond 1 token
  single.double_gains_tokens = 1;
  HeadEvaluationOptions streamed = stored;  // streamed tiles beyond n - 1 tokens
  streamed.stored_gains_tokens = n - 1;
  HeadEvaluationOptions certified = stored;
  certified.optimum = OptimumMode::kCertified;
  certified.relative_gap = 1e-9;
  for (const auto& [name, options, tolerance] :
       {std::tuple{"stored", stored, kAgreement},
        std::tuple{"float", single, double(Tol<float>::kValue)},
        std::tuple{"streamed", streamed, kAgreement}, std::tuple{"certified", certified, 1e-8}}) {
    const HeadEvaluation e = optima(w, kv, k, options).front();
    RC_ASSERT(e.has_interval);
    RC_LOG() << name << ": " << e.optimum.value << " vs " << reference << "\n";
    // Its value is the R-mass of its own schedule on W, and no schedule does better.
    RC_ASSERT(near(rows_mass(full, e.optimum.last_step, mask), reference, tolerance));
    RC_ASSERT(near(e.optimum.value, reference, tolerance));
    RC_ASSERT(near(rows_sum(e.optimum.step_mass, mask), e.optimum.value, tolerance));
    RC_ASSERT(e.optimum.upper_bound >= reference * (1 - tolerance));
  }
}

RC_GTEST_PROP(QueryRows, AllRowsGiveTodaysOptimumBitForBit, ()) {
  const int n = *rc::gen::inRange(1, 40);
  const int k = *rc::gen::inRange(1, n + 1);
  const auto seed = *rc::gen::inRange<std::uint64_t>(0, 1000000);
  const Workload w = generate_workload(spec_from_preset("tiny-gqa", n, 1, seed));
  std::vector<int> all(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) all[std::size_t(i)] = n - 1 - i;  // any order
  HeadEvaluationOptions today, rows;
  rows.optimum_rows = all;
  for (int path = 0; path < 2; ++path) {
    if (path == 1) today.stored_gains_tokens = rows.stored_gains_tokens = n - 1;  // streamed
    const HeadEvaluation a = optima(w, 1, k, today).front(), b = optima(w, 1, k, rows).front();
    RC_ASSERT(a.optimum.value == b.optimum.value);
    RC_ASSERT(a.optimum.upper_bound == b.optimum.upper_bound);
    RC_ASSERT(a.optimum.last_step == b.optimum.last_step);
    RC_ASSERT(a.oracle.total == b.oracle.total);
  }
}

RC_GTEST_PROP(QueryRows, WithoutTheOracleTheOptimumIsTheSameBitForBit, ()) {
  const int n = *rc::gen::inRange(1, 40);
  const int k = *rc::gen::inRange(1, n + 1);
  const auto seed = *rc::gen::inRange<std::uint64_t>(0, 1000000);
  const Workload w = generate_workload(spec_from_preset("tiny-gqa", n, 1, seed));
  HeadEvaluationOptions with;
  if (*rc::gen::arbitrary<bool>()) {
    with.optimum_rows = *rc::gen::nonEmpty(rc::gen::container<std::vector<int>>(rc::gen::inRange(0, n)));
  }
  HeadEvaluationOptions without = with;
  without.oracle = false;
  const HeadEvaluation a = optima(w, 1, k, with).front(), b = optima(w, 1, k, without).front();
  RC_ASSERT(a.has_oracle);
  RC_ASSERT(!b.has_oracle);
  RC_ASSERT(b.has_optimum);
  RC_ASSERT(a.optimum.value == b.optimum.value);
  RC_ASSERT(a.optimum.last_step == b.optimum.last_step);
  RC_ASSERT(a.optimum.step_mass == b.optimum.step_mass);
  without.optimum = OptimumMode::kOracle;  // the oracle mode computes it regardless
  RC_ASSERT(optima(w, 1, k, without).front().oracle.total == a.oracle.total);
}

RC_GTEST_PROP(QueryRows, TheRowOptimumBoundsEveryPolicyAndTheOptimumAndTheOracleBoundsIt, ()) {
  const int n = *rc::gen::inRange(8, 60);
  const int k = *rc::gen::inRange(1, n);
  const auto seed = *rc::gen::inRange<std::uint64_t>(0, 1000000);
  std::vector<int> rows =
      *rc::gen::nonEmpty(rc::gen::container<std::vector<int>>(rc::gen::inRange(0, n)));
  const Workload w = generate_workload(spec_from_preset("tiny-gqa", n, 1, seed));
  const std::vector<char> mask = query_row_mask(rows, n, "test");
  std::vector<PolicySpec> policies;
  for (const std::string& name : policy_names()) {
    PolicySpec spec;
    spec.name = name;
    try {
      check_policy_budget(spec, n, k, "test", "policy");
      policies.push_back(spec);
    } catch (const InputError&) {  // a policy that takes no budget k at n tokens
    }
  }
  HeadEvaluationOptions unrestricted;
  const HeadEvaluation plain = optima(w, 1, k, unrestricted).front();
  HeadEvaluationOptions restricted;
  restricted.optimum_rows = rows;
  restricted.schedules = {{plain.optimum.last_step}};  // valued on the restricted gains
  const HeadEvaluation e = optima(w, 1, k, restricted, policies).front();
  const double best = e.optimum.value, slack = mass_order_slack(false) * std::max(1.0, best);
  RC_ASSERT(near(e.schedule_step_mass.front().sum(),
                 rows_mass(gain_matrix(head_group(w, 0, 1)), plain.optimum.last_step, mask),
                 kAgreement));
  RC_ASSERT(e.schedule_step_mass.front().sum() <= best + slack);
  RC_ASSERT(best <= e.oracle.total + slack);
  for (const Trace& trace : e.traces) {
    if (trace.budget != k || trace.prefill > k) continue;  // not compressed, or a prefill beyond k
    double mass = 0.0;
    for (int i = 0; i < n; ++i) {
      for (int h = 0; h < trace.heads; ++h) {
        mass +=
            mask[std::size_t(i)] ? trace.head_retained_mass[std::size_t(i * trace.heads + h)] : 0.0;
      }
    }
    RC_LOG() << trace.policy << ": " << mass << " <= " << best << "\n";
    RC_ASSERT(mass <= best + slack);
  }
}

RC_GTEST_PROP(QueryRows, TheOracleCountsRowsOfRAndChoosesAsTheFullRows, ()) {
  const int n = *rc::gen::inRange(1, 40);
  const int k = *rc::gen::inRange(1, n + 1);
  const auto seed = *rc::gen::inRange<std::uint64_t>(0, 1000000);
  std::vector<int> rows =
      *rc::gen::nonEmpty(rc::gen::container<std::vector<int>>(rc::gen::inRange(0, n)));
  const Workload w = generate_workload(spec_from_preset("tiny-gqa", n, 1, seed));
  const std::vector<char> mask = query_row_mask(rows, n, "test");
  const StepOracle full =
      step_oracle(gain_matrix(head_group(w, 0, 1)), k, true);  // the dense oracle
  HeadEvaluationOptions options;
  options.optimum_rows = rows;
  options.oracle_sets = true;
  const StepOracle got = optima(w, 1, k, options).front().oracle;
  RC_ASSERT(got.chosen == full.chosen);
  for (int i = 0; i < n; ++i)
    RC_ASSERT(near(got.per_step[i], mask[std::size_t(i)] ? full.per_step[i] : 0.0, kAgreement));
  RC_ASSERT(near(got.total, rows_sum(full.per_step, mask), kAgreement));
}

TEST(QueryRows, RowByRowGainsEqualTheRestrictedTriangle) {
  constexpr int n = 300;
  const Workload w = generate_workload(spec_from_preset("tiny-gqa", n, 1, 9));
  std::vector<int> rows{0, 1, 63, 64, 65, 150, 299};
  const std::vector<char> mask = query_row_mask(rows, n, "test");
  for (int window : {0, 17}) {
    HeadGroup group = head_group(w, 0, 1);
    group.window = window;
    TriangularGains<double> want = triangular_gain_matrix<double>(group);
    restrict_to_rows(want, mask);
    const TriangularGains<double> got = row_gain_matrix<double>(group, mask);
    const TriangularGains<float> single = row_gain_matrix<float>(group, mask);
    for (int j = 0; j < n; ++j) {
      for (int i = j; i < n; ++i) {
        ASSERT_TRUE(near(got.at(i, j), want.at(i, j), kAgreement))
            << i << ", " << j << " window " << window;
        ASSERT_TRUE(near(single.at(i, j), want.at(i, j), double(Tol<float>::kValue)))
            << i << ", " << j;
      }
    }
  }
}

TEST(QueryRows, LongHeadsAgreeOnEveryPathAcrossTiles) {
  // 300 tokens span several row blocks of the streamed tiles: each path's row-restricted optimum
  // equals the explicit network simplex on the restricted dense gains, with rows in every block
  // and with whole blocks without a row of R (the streamed pass skips them).
  constexpr int n = 300;
  const Workload w = generate_workload(spec_from_preset("tiny-gqa", n, 1, 5));
  std::vector<int> scattered;
  for (int i = 7; i < n; i += 13) scattered.push_back(i);
  for (int i = 250; i < 270; ++i)
    scattered.push_back(i);  // 43 rows: computed row by row (head_evaluation.cpp)
  const std::vector<int> sparse{3, 130, 131, 299};
  const Eigen::MatrixXd full = gain_matrix(head_group(w, 0, 1));
  for (const std::vector<int>& rows : {scattered, sparse}) {
    Eigen::MatrixXd restricted = full;
    restrict_to_rows(restricted, query_row_mask(rows, n, "test"));
    for (int k : {5, 30}) {
      SCOPED_TRACE(std::to_string(rows.size()) + " rows, k " + std::to_string(k));
      const double want = offline_optimum(restricted, k).value;
      HeadEvaluationOptions stored;
      stored.optimum_rows = rows;
      HeadEvaluationOptions streamed = stored;
      streamed.stored_gains_tokens = n - 1;
      HeadEvaluationOptions single = stored;
      single.double_gains_tokens = n - 1;
      HeadEvaluationOptions blocks =
          stored;  // oracle sets: the whole head's gains, then rows zeroed
      blocks.oracle_sets = true;
      EXPECT_TRUE(near(optima(w, 1, k, stored).front().optimum.value, want, kAgreement));
      EXPECT_TRUE(near(optima(w, 1, k, streamed).front().optimum.value, want, kAgreement));
      EXPECT_TRUE(near(optima(w, 1, k, blocks).front().optimum.value, want, kAgreement));
      EXPECT_TRUE(
          near(optima(w, 1, k, single).front().optimum.value, want, double(Tol<float>::kValue)));
    }
  }
}

TEST(QueryRows, RefusesRowsOutsideTheSequenceAndNoRows) {
  const Workload w = generate_workload(spec_from_preset("tiny", 20, 1, 1));
  HeadEvaluationOptions options;
  for (const std::vector<int>& rows : {std::vector<int>{3, 20}, std::vector<int>{-1}}) {
    options.optimum_rows = rows;
    try {
      (void)optima(w, 0, 4, options);
      ADD_FAILURE() << "accepted " << rows.back();
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()),
                "evaluate_head: optimum_rows: expected row indices in [0, 20), got " +
                    std::to_string(rows.back()));
    }
  }
  EXPECT_THROW((void)query_row_mask({}, 20, "simulate"), InputError);
  const std::vector<char> mask = query_row_mask({4, 2, 4}, 6, "simulate");
  EXPECT_EQ(mask, (std::vector<char>{0, 0, 1, 0, 1, 0}));
}

}  // namespace
}  // namespace subevict::greedy
