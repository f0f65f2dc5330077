// The offline optimum on streamed gains (greedy/eviction/optimum/streamed_flow.*) against the
// stored-triangle solver (implicit_flow.*, itself checked against the network simplex, the dynamic
// program and CBC), and the streamed gains (greedy/eviction/process/streamed_gains.*) against the
// stored triangle, and head evaluation beyond its stored-gains limit against the stored path: on
// heads of 500 tokens, which span two key chunks and eight row blocks of the
// tiles, with one and with three query heads per KV head.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include "core/exact_attention_rows.hpp"
#include "core/generator.hpp"
#include "core/input_error.hpp"
#include "core/tolerance.hpp"
#include "greedy/eviction/evaluation/head_evaluation.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/optimum/implicit_flow.hpp"
#include "greedy/eviction/optimum/streamed_flow.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/process/streamed_gains.hpp"
#include "greedy/eviction/process/triangular_gains.hpp"

namespace subevict::greedy {
namespace {

/// The agreement the acceptance criteria ask of the exact solvers.
constexpr double kAgreement = 1e-9;
constexpr int kTokens = 500;

Workload workload(const std::string& preset, std::uint64_t seed) {
  return generate_workload(spec_from_preset(preset, kTokens, 1, seed));
}

/// How far a streamed entry may be from the stored one: both are within the attention paths'
/// tolerance of the exact weights (relative 2 · log_normalizer per weight, core/
/// causal_weight_tiles.hpp), so twice that, relative to the entry.
double entry_tolerance(const HeadGroup& group) {
  double magnitude = 0.0;
  for (const ConstHeadMap& q : group.q) magnitude = std::max(magnitude, score_magnitude(q, group.k, group.scale));
  return 4.0 * exact_rows_tolerance(group.tokens(), group.head_dim(), magnitude).log_normalizer;
}

TEST(StreamedGains, TilesEqualTheStoredTriangle) {
  for (const char* preset : {"tiny", "tiny-gqa"}) {
    const Workload w = workload(preset, 3);
    const HeadGroup group = head_group(w, 0, 0);
    const auto stored = triangular_gain_matrix<double>(group);
    const StreamedGains streamed(group, 2);
    const double tolerance = entry_tolerance(group);
    std::vector<int> seen(kTokens, 0);  // entries of each column met, in ascending rows
    std::vector<int> last_row(kTokens, -1);
    double worst = 0.0;
    streamed.for_each_tile([&](int, const GainTile& tile) {
      for (int c = 0; c < GainTile::kKeys; ++c) {
        for (int r = 0; r < GainTile::kRows; ++r) {
          const int i = tile.first_row + r, j = tile.first_key + c;
          if (i >= kTokens || j >= kTokens || j > i) {
            EXPECT_EQ(tile.at(r, c), 0.0);
            continue;
          }
          EXPECT_GT(i, last_row[j]);
          last_row[j] = i;
          ++seen[j];
          const double want = stored.at(i, j);
          worst = std::max(worst, std::abs(tile.at(r, c) - want) / std::max(want, 1e-300));
          EXPECT_LE(std::abs(tile.at(r, c) - want), tolerance * want + 1e-300) << i << ", " << j;
        }
      }
    });
    for (int j = 0; j < kTokens; ++j) EXPECT_EQ(seen[j], kTokens - j) << "column " << j;
    EXPECT_TRUE(near(streamed.diagonal_sum(), stored.diagonal_sum(), tolerance * kTokens)) << preset;
    EXPECT_TRUE(near(streamed.entry(kTokens - 1, 7), stored.at(kTokens - 1, 7), tolerance)) << preset;
    EXPECT_EQ(streamed.group_size(), group.group_size());
  }
}

TEST(StreamedGains, InsideAnotherParallelRegionEveryEntryIsVisitedOnce) {
  // A nested OpenMP region runs on one thread: the chunks must be dealt by the team's real size.
  const Workload w = workload("tiny", 7);
  const StreamedGains gains(head_group(w, 0, 0), 2);
  std::vector<long long> visited(2, 0);
  std::vector<int> nested(2, 0);
#pragma omp parallel num_threads(2)
  {
    const int outer = omp_get_thread_num();
    nested[outer] = omp_in_parallel();
    gains.for_each_tile([&](int, const GainTile& tile) {
      for (int c = 0; c < GainTile::kKeys; ++c)
        for (int r = 0; r < GainTile::kRows; ++r)
          visited[outer] += tile.first_key + c <= tile.first_row + r && tile.first_row + r < kTokens;
    });
  }
  for (int t = 0; t < 2; ++t) {
    EXPECT_EQ(nested[t], 1);
    EXPECT_EQ(visited[t], (long long)kTokens * (kTokens + 1) / 2) << "outer thread " << t;
  }
}

TEST(StreamedFlow, EqualsTheStoredTriangleSolver) {
  for (const char* preset : {"tiny", "tiny-gqa"}) {
    const Workload w = workload(preset, 11);
    const HeadGroup group = head_group(w, 0, 1 % w.shape().kv_heads);
    const auto stored = triangular_gain_matrix<double>(group);
    const StreamedGains streamed(group, 2);
    const std::vector<int> budgets{5, 60, 200};
    const auto got = streamed_flow_optima(streamed, budgets);
    for (std::size_t b = 0; b < budgets.size(); ++b) {
      const int k = budgets[b];
      SCOPED_TRACE(std::string(preset) + " k " + std::to_string(k));
      const ImplicitFlowResult want = implicit_flow_optimum(stored, k);
      const ScheduleSummary& s = got[b].summary;
      ASSERT_EQ(s.status, ScheduleStatus::kOptimal) << s.message;
      EXPECT_EQ(got[b].budget, k);
      EXPECT_TRUE(is_process_schedule(s.last_step, k));
      EXPECT_TRUE(near(s.value, want.summary.value, kAgreement)) << s.value << " vs " << want.summary.value;
      EXPECT_LE(s.upper_bound - s.value, kAgreement * s.value);
      // The certificate's potentials, evaluated on the stored gains by the Lagrangian (not the
      // solver's own bound, which is clamped at the value), bound the stored solver's optimum.
      const double certified = lagrangian_upper_bound(stored, k, got[b].potentials);
      EXPECT_GE(certified, want.summary.value - kAgreement * want.summary.value);
      EXPECT_TRUE(near(certified, s.upper_bound, kAgreement));
      // Step masses recomputed by a streamed pass equal the stored triangle's for that schedule,
      // and so does the value.
      const Eigen::VectorXd mass = schedule_step_mass(stored, s.last_step);
      const double entry = entry_tolerance(group) * group.group_size() * kTokens;
      EXPECT_LE((s.step_mass - mass).cwiseAbs().maxCoeff(), entry);
      EXPECT_LE(std::abs(s.value - mass.sum()), entry * kTokens);
    }
  }
}

TEST(StreamedFlow, TheStepMassComesWithTheLastPricingPass) {
  // One pass for the starting arcs and one pricing pass per round, whether or not the step masses
  // are asked for (in either schedule form): the round that stops summed them already.
  const Workload w = workload("tiny", 7);
  const HeadGroup group = head_group(w, 0, 0);
  const auto stored = triangular_gain_matrix<double>(group);
  for (const bool step_mass : {true, false}) {
    for (const bool process_form : {true, false}) {
      SCOPED_TRACE(std::string("step_mass ") + (step_mass ? "on" : "off") + ", process_form " +
                   (process_form ? "on" : "off"));
      const StreamedGains streamed(group, 2);
      ImplicitFlowOptions options;
      options.step_mass = step_mass;
      options.process_form = process_form;
      int rounds = 0;
      options.on_round = [&](const ImplicitFlowRound&) { ++rounds; };
      const std::size_t before = streamed.passes();
      const ImplicitFlowResult got = streamed_flow_optimum(streamed, 30, options);
      ASSERT_EQ(got.summary.status, ScheduleStatus::kOptimal);
      EXPECT_GE(rounds, 1);
      EXPECT_EQ(streamed.passes() - before, std::size_t(1 + rounds));
      if (step_mass) {
        const Eigen::VectorXd mass = schedule_step_mass(stored, got.summary.last_step);
        EXPECT_LE((got.summary.step_mass - mass).cwiseAbs().maxCoeff(), entry_tolerance(group) * kTokens);
      }
    }
  }
}

TEST(StreamedFlow, ThreadsDoNotChangeTheResultAndPathsAgree) {
  const Workload w = workload("tiny", 5);
  const HeadGroup group = head_group(w, 0, 0);
  ImplicitFlowOptions arcs_only;
  arcs_only.step_mass = false;
  const ImplicitFlowResult one = streamed_flow_optimum(StreamedGains(group, 1), 40, arcs_only);
  const ImplicitFlowResult two = streamed_flow_optimum(StreamedGains(group, 2), 40, arcs_only);
  EXPECT_EQ(one.summary.value, two.summary.value);
  EXPECT_EQ(one.summary.last_step, two.summary.last_step);
  EXPECT_EQ(one.summary.upper_bound, two.summary.upper_bound);
  EXPECT_EQ(one.summary.step_mass.size(), 0);
  const ImplicitFlowResult portable =
      streamed_flow_optimum(StreamedGains(group, 2, CpuPath::kPortable), 40, arcs_only);
  EXPECT_TRUE(near(portable.summary.value, one.summary.value, kAgreement));
}

TEST(StreamedFlow, TheExactRowsNormalizersGiveTheSameOptimum) {
  // evaluate_head hands the policies' exact rows to the streamed gains (one pass fewer).
  for (const char* preset : {"tiny", "tiny-gqa"}) {
    SCOPED_TRACE(preset);
    const Workload w = workload(preset, 6);
    const HeadGroup group = head_group(w, 0, 0);
    const ImplicitFlowResult own = streamed_flow_optimum(StreamedGains(group, 2), 40);
    const std::vector<ExactRows> exact = group_exact_rows(group);
    const ImplicitFlowResult given = streamed_flow_optimum(StreamedGains(group, exact, 2), 40);
    EXPECT_TRUE(near(given.summary.value, own.summary.value, kAgreement));
    EXPECT_TRUE(near(given.summary.upper_bound, own.summary.upper_bound, kAgreement));
    EXPECT_THROW(StreamedGains(group, std::vector<ExactRows>(exact.size() + 1), 2), std::invalid_argument);
  }
}

TEST(StreamedFlow, StoppingAtAGapReturnsACertifiedInterval) {
  const Workload w = workload("tiny", 2);
  const HeadGroup group = head_group(w, 0, 0);
  const double opt = implicit_flow_optimum(triangular_gain_matrix<double>(group), 40).summary.value;
  std::vector<ImplicitFlowRound> rounds;
  ImplicitFlowOptions loose;
  loose.relative_gap = 0.5;
  loose.on_round = [&](const ImplicitFlowRound& r) { rounds.push_back(r); };
  const ImplicitFlowResult stopped = streamed_flow_optimum(StreamedGains(group, 2), 40, loose);
  ASSERT_FALSE(rounds.empty());
  EXPECT_EQ(rounds.back().round, int(rounds.size()));
  EXPECT_LE(stopped.summary.value, opt + kAgreement * opt);
  EXPECT_GE(stopped.summary.upper_bound, opt - kAgreement * opt);
  EXPECT_LE(stopped.summary.upper_bound - stopped.summary.value, 0.5 * stopped.summary.upper_bound);
  EXPECT_TRUE(is_process_schedule(stopped.summary.last_step, 40));
}

TEST(StreamedFlow, NoBudgetCachesNothingAndAFullBudgetKeepsEverything) {
  for (const char* preset : {"tiny", "tiny-gqa"}) {  // g = 1 and g = 3 query heads per KV head
    SCOPED_TRACE(preset);
    const Workload w = workload(preset, 9);
    const HeadGroup group = head_group(w, 0, 0);
    const auto stored = triangular_gain_matrix<double>(group);
    const StreamedGains streamed(group, 2);
    const auto got = streamed_flow_optima(streamed, {0, kTokens + 3});
    EXPECT_EQ(got[0].summary.status, ScheduleStatus::kOptimal);
    EXPECT_TRUE(near(got[0].summary.value, stored.diagonal_sum(), kAgreement));
    // The budget-0 certificate: its potentials, evaluated independently by the Lagrangian on the
    // stored gains, bound the value (a bound built for one query head's entries, <= 1, would not
    // on a group, whose summed entries reach g).
    const double certified = lagrangian_upper_bound(stored, 0, got[0].potentials);
    EXPECT_GE(certified, stored.diagonal_sum() * (1 - kAgreement));
    EXPECT_GE(got[0].summary.upper_bound, got[0].summary.value);
    double everything = 0.0;
    for (int j = 0; j < kTokens; ++j)
      for (int i = j; i < kTokens; ++i) everything += stored.at(i, j);
    EXPECT_TRUE(near(got[1].summary.value, everything, kAgreement));
    EXPECT_GE(lagrangian_upper_bound(stored, kTokens, got[1].potentials), everything * (1 - kAgreement));
  }
}

TEST(StreamedFlow, HeadEvaluationStreamsBeyondTheStoredLimit) {
  const Workload w = workload("tiny-gqa", 4);
  const std::vector<int> budgets{20, 100};
  for (OptimumMode mode : {OptimumMode::kFlow, OptimumMode::kCertified}) {
    HeadEvaluationOptions stored;
    stored.optimum = mode;
    stored.relative_gap = 1e-3;
    HeadEvaluationOptions streamed = stored;
    streamed.stored_gains_tokens = kTokens - 1;
    const auto want = evaluate_head_budgets(w, 0, 1, std::vector<PolicySpec>{}, budgets, stored);
    const auto got = evaluate_head_budgets(w, 0, 1, std::vector<PolicySpec>{}, budgets, streamed);
    const double exact = evaluate_head_budgets(w, 0, 1, std::vector<PolicySpec>{}, {20}, HeadEvaluationOptions{})[0].optimum.value;
    for (std::size_t b = 0; b < budgets.size(); ++b) {
      SCOPED_TRACE(to_string(mode) + " k " + std::to_string(budgets[b]));
      EXPECT_TRUE(want[b].has_oracle);
      EXPECT_FALSE(got[b].has_oracle);
      EXPECT_EQ(got[b].has_optimum, mode == OptimumMode::kFlow || got[b].optimum.status == ScheduleStatus::kOptimal);
      EXPECT_TRUE(got[b].has_interval);
      if (mode == OptimumMode::kFlow) {
        EXPECT_TRUE(near(got[b].optimum.value, want[b].optimum.value, kAgreement));
      } else {
        EXPECT_LE(got[b].optimum.upper_bound - got[b].optimum.value, 1e-3 * got[b].optimum.upper_bound);
      }
    }
    if (mode == OptimumMode::kCertified) {
      EXPECT_LE(got[0].optimum.value, exact * (1 + kAgreement));
      EXPECT_GE(got[0].optimum.upper_bound, exact * (1 - kAgreement));
    }
  }
  HeadEvaluationOptions oracle;
  oracle.optimum = OptimumMode::kOracle;
  oracle.stored_gains_tokens = kTokens - 1;
  EXPECT_THROW((void)evaluate_head_budgets(w, 0, 1, std::vector<PolicySpec>{}, budgets, oracle), InputError);
}

TEST(HeadEvaluation, PoliciesBesideTheOptimumChangeNothingAndReportTheirSteps) {
  // With 2 threads the policies run on a thread of their own beside the streamed optimum, which
  // takes the normalizers of their exact rows: the same traces and optimum as on one thread.
  const Workload w = workload("tiny-gqa", 8);
  std::vector<PolicySpec> policies(2);
  policies[0].name = "h2o";
  policies[1].name = "tova";
  HeadEvaluationOptions options;
  options.optimum = OptimumMode::kFlow;
  options.stored_gains_tokens = kTokens - 1;
  const auto one = evaluate_head_budgets(w, 0, 1, policies, {20, 60}, options);
  std::vector<std::string> reports;
  std::mutex lock;
  options.threads = 2;
  options.on_progress = [&](const std::string& what) {
    const std::lock_guard<std::mutex> guard(lock);
    reports.push_back(what);
  };
  const auto two = evaluate_head_budgets(w, 0, 1, policies, {20, 60}, options);
  for (std::size_t b = 0; b < 2; ++b) {
    ASSERT_EQ(two[b].traces.size(), 2u);
    for (std::size_t p = 0; p < 2; ++p) {
      EXPECT_EQ(two[b].traces[p].policy, one[b].traces[p].policy);
      EXPECT_EQ(two[b].traces[p].head_retained_mass, one[b].traces[p].head_retained_mass);
      EXPECT_EQ(two[b].traces[p].head_output_error, one[b].traces[p].head_output_error);
    }
    EXPECT_TRUE(near(two[b].optimum.value, one[b].optimum.value, kAgreement));
  }
  const auto has = [&](const std::string& what) { return std::find(reports.begin(), reports.end(), what) != reports.end(); };
  EXPECT_TRUE(has("exact rows"));
  EXPECT_TRUE(has("optimum"));
  EXPECT_TRUE(has("tova at k = 60: step " + std::to_string(kTokens) + "/" + std::to_string(kTokens)));
}

TEST(HeadEvaluation, FloatGainsStayWithinTheirSlackOfTheDoubleOptimum) {
  // The float path (beyond kDoubleGainsTokens) run on 500 tokens through the test hook: the order
  // policy <= OPT is checked at mass_order_slack(true), which must bound how far float-rounded
  // gains move the optimum, and every policy's double mass must stay below it.
  const std::vector<PolicySpec> policies = parse_policy_list("h2o,tova,local,streamingllm", "test", "policies", 16);
  const double slack = mass_order_slack(true);
  EXPECT_EQ(mass_order_slack(false), 1e-9);
  double largest = 0.0;
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    const Workload w = workload("tiny-gqa", seed);
    HeadEvaluationOptions in_float;
    in_float.double_gains_tokens = kTokens - 1;
    const auto d = evaluate_head_budgets(w, 0, 0, policies, {20, 100}, HeadEvaluationOptions{});
    const auto f = evaluate_head_budgets(w, 0, 0, policies, {20, 100}, in_float);
    for (std::size_t b = 0; b < d.size(); ++b) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " k " + std::to_string(d[b].budget));
      EXPECT_FALSE(d[b].float_gains);
      ASSERT_TRUE(f[b].float_gains);
      const double shift = std::abs(f[b].optimum.value - d[b].optimum.value) / d[b].optimum.value;
      EXPECT_LE(shift, slack);
      largest = std::max(largest, shift);
      for (const Trace& t : f[b].traces) {
        EXPECT_LE(t.total_retained_mass(), f[b].optimum.value * (1 + slack)) << t.policy;
        EXPECT_LE(f[b].optimum.value, f[b].oracle.total * (1 + slack));
      }
    }
  }
  EXPECT_GT(largest, 0.0);  // the float path did run: its optimum differs from the double one
}

TEST(StreamedFlow, RejectsInvalidInput) {
  const Workload w = generate_workload(spec_from_preset("tiny", 20, 1, 1));
  const HeadGroup group = head_group(w, 0, 0);
  EXPECT_THROW(StreamedGains(group, 0), InputError);
  const StreamedGains streamed(group, 1);
  EXPECT_THROW((void)streamed_flow_optimum(streamed, -1), InputError);
  ImplicitFlowOptions bad;
  bad.relative_gap = std::nan("");
  EXPECT_THROW((void)streamed_flow_optimum(streamed, 3, bad), InputError);
}

}  // namespace
}  // namespace subevict::greedy
