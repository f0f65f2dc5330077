// The offline optimum with implicit arcs (greedy/eviction/optimum/implicit_flow.*) against the
// explicit network simplex (offline_optimum), the exhaustive dynamic program (cache_dp) and CBC
// (offline_optimum_ip); its certificate against an independent evaluation of the Lagrangian bound;
// the stored triangle (greedy/eviction/process/triangular_gains.*) against the dense gain matrix.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <numeric>
#include <vector>

#include "core/generator.hpp"
#include "core/input_error.hpp"
#include "core/tolerance.hpp"
#include "greedy/eviction/optimum/cache_dp.hpp"
#include "greedy/eviction/optimum/implicit_flow.hpp"
#include "greedy/eviction/optimum/offline_optimum.hpp"
#include "greedy/eviction/optimum/offline_optimum_ip.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/process/triangular_gains.hpp"
#include "tests/greedy/attention_instances.hpp"

namespace subevict::greedy {
namespace {

/// The agreement the acceptance criteria ask of the exact solvers.
constexpr double kAgreement = 1e-9;

Workload tiny_workload(const std::string& preset, int tokens, std::uint64_t seed) {
  return generate_workload(spec_from_preset(preset, tokens, 1, seed));
}

/// The Lagrangian bound of the header's formula, written out over the dense matrix with every
/// arc R_j → D_e (e ∈ [j, n]) enumerated and its cost summed afresh: an independent evaluation.
double dense_lagrangian_bound(const Eigen::MatrixXd& w, int budget, const std::vector<double>& y) {
  const int n = int(w.rows());
  const int k = std::min(budget, n);
  double dual = (k - 1) * y[0] - k * y[n];
  for (int i = 1; i < n; ++i) dual -= y[i];
  for (int i = 0; i < n; ++i) dual += k * std::min(0.0, y[i + 1] - y[i]);
  for (int j = 0; j < n; ++j) {
    double best = y[j];  // never cached
    for (int e = j + 1; e <= n; ++e) {
      double earned = 0.0;
      for (int i = j + 1; i <= std::min(e, n - 1); ++i) earned += w(i, j);
      best = std::min(best, y[e] - earned);
    }
    dual += best;
  }
  return w.trace() - dual;
}

/// What every exact implicit-flow result satisfies against the explicit network simplex.
void check_against_network_simplex(const Eigen::MatrixXd& w, int k, const ImplicitFlowResult& got) {
  const int n = int(w.rows());
  const ScheduleSummary& s = got.summary;
  ASSERT_EQ(s.status, ScheduleStatus::kOptimal) << s.message;
  EXPECT_TRUE(is_process_schedule(s.last_step, k));
  EXPECT_TRUE(near(schedule_value(w, s.last_step), s.value, Tol<double>::sum(n * n)));
  const ScheduleSummary reference = offline_optimum(w, k);
  EXPECT_TRUE(near(s.value, reference.value, kAgreement)) << s.value << " vs " << reference.value;
  EXPECT_LE(s.upper_bound - s.value, kAgreement * std::max(1.0, s.value));
  EXPECT_GE(s.upper_bound, reference.value - kAgreement * std::max(1.0, s.value));
}

RC_GTEST_PROP(ImplicitFlow, EqualsTheExplicitNetworkSimplexAndTheDynamicProgram, ()) {
  const int n = *rc::gen::inRange(1, 11);
  const int k = *rc::gen::inRange(0, n + 2);
  const Eigen::MatrixXd a = testing::random_attention(n, 300);
  const auto got = implicit_flow_optimum(TriangularGains<double>::from_dense(a, "test"), k);
  RC_ASSERT(got.summary.status == ScheduleStatus::kOptimal);
  RC_ASSERT(is_process_schedule(got.summary.last_step, k));
  RC_ASSERT(near(got.summary.value, cache_dp(a, k).value, kAgreement));
  RC_ASSERT(near(got.summary.value, offline_optimum(a, k).value, kAgreement));
}

RC_GTEST_PROP(ImplicitFlow, EqualsTheIntegerProgram, ()) {
  const int n = *rc::gen::inRange(1, 25);
  const int k = *rc::gen::inRange(1, n + 1);
  const Eigen::MatrixXd a = testing::random_attention(n, 300);
  const auto got = implicit_flow_optimum(TriangularGains<double>::from_dense(a, "test"), k);
  const ScheduleSummary ip = offline_optimum_ip(a, k);
  RC_ASSERT(ip.status == ScheduleStatus::kOptimal);
  RC_ASSERT(near(got.summary.value, ip.value, kAgreement));
}

RC_GTEST_PROP(ImplicitFlow, AnyPotentialsGiveAnUpperBoundEqualToTheDenseFormula, ()) {
  const int n = *rc::gen::inRange(1, 14);
  const int k = *rc::gen::inRange(0, n + 1);
  const Eigen::MatrixXd a = testing::random_attention(n, 300);
  std::vector<double> y(n + 1);
  for (double& v : y) v = *rc::gen::inRange(-2000, 2000) / 1000.0;
  const auto gains = TriangularGains<double>::from_dense(a, "test");
  const double bound = lagrangian_upper_bound(gains, k, y);
  RC_ASSERT(near(bound, dense_lagrangian_bound(a, k, y), Tol<double>::sum(n * n)));
  RC_ASSERT(bound >= cache_dp(a, k).value - kAgreement);
}

TEST(ImplicitFlow, CertificateReproducesTheReportedBoundAndIsTightAtTheOptimum) {
  const Workload w = tiny_workload("tiny", 96, 4);
  const Eigen::MatrixXd a = gain_matrix(head_group(w, 0, 0));
  const auto gains = TriangularGains<double>::from_dense(a, "test");
  for (int k : {1, 9, 30}) {
    const ImplicitFlowResult got = implicit_flow_optimum(gains, k);
    check_against_network_simplex(a, k, got);
    EXPECT_TRUE(near(lagrangian_upper_bound(gains, k, got.potentials), got.summary.upper_bound, 1e-12));
    EXPECT_TRUE(near(dense_lagrangian_bound(a, k, got.potentials), got.summary.upper_bound,
                     Tol<double>::sum(96 * 96)));
  }
}

TEST(ImplicitFlow, EqualsTheNetworkSimplexOnLlmLikeHeads) {
  for (const char* preset : {"tiny", "tiny-gqa"}) {
    const Workload w = tiny_workload(preset, 300, 21);
    for (int head = 0; head < w.shape().kv_heads; ++head) {
      for (bool weighted : {false, true}) {
        const HeadGroup group = head_group(w, 0, head);
        const Eigen::MatrixXd a = gain_matrix(group, weighted);
        const auto gains = triangular_gain_matrix<double>(group, weighted);
        for (int k : {3, 30, 60, 150}) {
          SCOPED_TRACE(std::string(preset) + " head " + std::to_string(head) + " k " + std::to_string(k));
          check_against_network_simplex(a, k, implicit_flow_optimum(gains, k));
        }
      }
    }
  }
}

TEST(ImplicitFlow, SeveralBudgetsInOneCallEqualSeparateSolves) {
  const Workload w = tiny_workload("tiny", 200, 8);
  const auto gains = triangular_gain_matrix<double>(head_group(w, 0, 1));
  const std::vector<int> budgets{40, 4, 120, 4, 0};
  const auto all = implicit_flow_optima(gains, budgets);
  ASSERT_EQ(all.size(), budgets.size());
  for (std::size_t b = 0; b < budgets.size(); ++b) {
    EXPECT_EQ(all[b].budget, budgets[b]);
    const auto single = implicit_flow_optimum(gains, budgets[b]);
    EXPECT_TRUE(near(all[b].summary.value, single.summary.value, kAgreement)) << budgets[b];
  }
  // OPT is non-decreasing in the budget.
  EXPECT_LE(all[1].summary.value, all[0].summary.value);
  EXPECT_LE(all[0].summary.value, all[2].summary.value);
}

RC_GTEST_PROP(ImplicitFlow, EveryBudgetOfOneCallEqualsTheDynamicProgram, ()) {
  // One simplex raised budget by budget (increase_budget) must reach each budget's own optimum,
  // and the value taken from the flow's arcs (step_mass off) must equal the schedule's mass.
  const int n = *rc::gen::inRange(1, 11);
  const Eigen::MatrixXd a = testing::random_attention(n, 300);
  const auto gains = TriangularGains<double>::from_dense(a, "test");
  std::vector<int> budgets(n + 2);
  std::iota(budgets.begin(), budgets.end(), 0);
  ImplicitFlowOptions arcs_only;
  arcs_only.step_mass = false;
  const auto curve = implicit_flow_optima(gains, budgets, arcs_only);
  for (int k = 0; k <= n + 1; ++k) {
    const ScheduleSummary& s = curve[k].summary;
    RC_ASSERT(s.status == ScheduleStatus::kOptimal);
    RC_ASSERT(is_process_schedule(s.last_step, k));
    RC_ASSERT(near(s.value, cache_dp(a, k).value, kAgreement));
    RC_ASSERT(near(s.value, schedule_value(a, s.last_step), kAgreement));
    RC_ASSERT(s.upper_bound - s.value <= kAgreement * std::max(1.0, s.value));
  }
}

TEST(ImplicitFlow, TheBudgetCurveEqualsTheNetworkSimplexAndIsConcave) {
  // n = 300 spans five pricing blocks of 64 steps, so pricing skips blocks on every budget.
  const Workload w = tiny_workload("tiny", 300, 17);
  const HeadGroup group = head_group(w, 0, 1);
  const Eigen::MatrixXd a = gain_matrix(group);
  const auto gains = triangular_gain_matrix<double>(group);
  std::vector<int> budgets(151);
  std::iota(budgets.begin(), budgets.end(), 0);
  ImplicitFlowOptions arcs_only;
  arcs_only.step_mass = false;
  const auto curve = implicit_flow_optima(gains, budgets, arcs_only);
  for (int k = 0; k <= 150; ++k) {
    SCOPED_TRACE("k " + std::to_string(k));
    const ScheduleSummary& s = curve[k].summary;
    ASSERT_EQ(s.status, ScheduleStatus::kOptimal);
    EXPECT_TRUE(s.step_mass.size() == 0);
    EXPECT_TRUE(near(s.value, schedule_value(a, s.last_step), kAgreement));
    EXPECT_LE(s.upper_bound - s.value, kAgreement * std::max(1.0, s.value));
    if (k % 10 == 3) check_against_network_simplex(a, k, curve[k]);
    // OPT(k) is concave in k: each further slot earns no more than the previous one.
    if (k >= 2) {
      EXPECT_LE(s.value - curve[k - 1].summary.value,
                curve[k - 1].summary.value - curve[k - 2].summary.value + kAgreement);
    }
  }
}

TEST(ImplicitFlow, StoppingAtAGapReturnsACertifiedInterval) {
  const Workload w = tiny_workload("tiny", 400, 2);
  const auto gains = triangular_gain_matrix<double>(head_group(w, 0, 0));
  const int k = 40;
  const double opt = implicit_flow_optimum(gains, k).summary.value;
  std::vector<ImplicitFlowRound> rounds;
  ImplicitFlowOptions loose;
  loose.relative_gap = 0.5;
  loose.on_round = [&](const ImplicitFlowRound& r) { rounds.push_back(r); };
  const ImplicitFlowResult stopped = implicit_flow_optimum(gains, k, loose);
  ASSERT_FALSE(rounds.empty());
  EXPECT_EQ(rounds.back().round, int(rounds.size()));
  // The never-cached start is far from optimal, so a loose gap stops before optimality.
  EXPECT_EQ(stopped.summary.status, ScheduleStatus::kFeasible);
  EXPECT_LE(stopped.summary.value, opt + kAgreement);
  EXPECT_GE(stopped.summary.upper_bound, opt - kAgreement);
  EXPECT_LE(stopped.summary.upper_bound - stopped.summary.value, 0.5 * stopped.summary.upper_bound);
  EXPECT_TRUE(is_process_schedule(stopped.summary.last_step, k));
  ImplicitFlowOptions one_round;
  one_round.max_rounds = 1;
  const ImplicitFlowResult first = implicit_flow_optimum(gains, k, one_round);
  EXPECT_EQ(first.summary.status, ScheduleStatus::kFeasible);
  EXPECT_GE(first.summary.upper_bound, opt - kAgreement);
}

TEST(ImplicitFlow, CertifiedModeStopsAtTheFirstRoundWithinTheGap) {
  // From the recorded rounds: every round before the last had a gap above the target (no stop was
  // skipped), and the last is within it (no early stop).
  const Workload w = tiny_workload("tiny", 400, 2);
  const auto gains = triangular_gain_matrix<double>(head_group(w, 0, 0));
  std::size_t most_rounds = 0;
  for (const double gap : {0.2, 0.02, 0.002, 0.0002}) {
    std::vector<ImplicitFlowRound> rounds;
    ImplicitFlowOptions options;
    options.relative_gap = gap;
    options.on_round = [&](const ImplicitFlowRound& r) { rounds.push_back(r); };
    const ImplicitFlowResult result = implicit_flow_optimum(gains, 40, options);
    ASSERT_FALSE(rounds.empty()) << gap;
    most_rounds = std::max(most_rounds, rounds.size());
    for (std::size_t r = 0; r + 1 < rounds.size(); ++r) {
      EXPECT_GT(rounds[r].upper_bound - rounds[r].value, gap * rounds[r].upper_bound) << gap << " round " << r + 1;
    }
    const ImplicitFlowRound& last = rounds.back();
    if (result.summary.status == ScheduleStatus::kFeasible) {
      EXPECT_LE(last.upper_bound - last.value, gap * last.upper_bound) << gap;
    }
    // The returned schedule is worth at least the last round's and at most its certified bound.
    EXPECT_GE(result.summary.value, last.value - kAgreement) << gap;
    EXPECT_LE(result.summary.value, last.upper_bound + kAgreement) << gap;
  }
  EXPECT_GE(most_rounds, 3u);  // the tight gaps take several rounds, so the rule is exercised
}

TEST(ImplicitFlow, FloatStorageIsExactForTheRoundedGains) {
  const Workload w = tiny_workload("tiny", 250, 13);
  const HeadGroup group = head_group(w, 0, 0);
  const auto stored = triangular_gain_matrix<float>(group);
  Eigen::MatrixXd rounded = Eigen::MatrixXd::Zero(250, 250);
  for (int j = 0; j < 250; ++j) {
    for (int i = j; i < 250; ++i) rounded(i, j) = stored.at(i, j);
  }
  for (int k : {10, 50}) check_against_network_simplex(rounded, k, implicit_flow_optimum(stored, k));
}

TEST(TriangularGains, StreamedGainsEqualTheDenseGainMatrix) {
  const Workload w = tiny_workload("tiny-gqa", 150, 6);
  for (bool weighted : {false, true}) {
    const HeadGroup group = head_group(w, 0, 1);
    const Eigen::MatrixXd dense = gain_matrix(group, weighted);
    const auto stored = triangular_gain_matrix<double>(group, weighted);
    ASSERT_EQ(stored.size(), 150);
    double worst = 0.0;
    for (int j = 0; j < 150; ++j) {
      for (int i = 0; i < 150; ++i) worst = std::max(worst, std::abs(stored.at(i, j) - dense(i, j)));
    }
    EXPECT_LE(worst, Tol<double>::kEps * 8) << "weighted " << weighted;
    EXPECT_TRUE(near(stored.diagonal_sum(), dense.trace(), Tol<double>::sum(150)));
    const std::vector<int> schedule = offline_optimum(dense, 20).last_step;
    EXPECT_TRUE((schedule_step_mass(stored, schedule) - schedule_step_mass(dense, schedule))
                    .cwiseAbs()
                    .maxCoeff() <= Tol<double>::sum(150));
  }
}

TEST(ImplicitFlow, RejectsInvalidInput) {
  const auto gains = TriangularGains<double>::from_dense(Eigen::MatrixXd::Identity(3, 3), "test");
  EXPECT_THROW((void)implicit_flow_optimum(gains, -1), InputError);
  ImplicitFlowOptions bad;
  bad.relative_gap = -0.1;
  EXPECT_THROW((void)implicit_flow_optimum(gains, 1, bad), InputError);
  bad = {};
  bad.arcs_per_token = 5;
  EXPECT_THROW((void)implicit_flow_optimum(gains, 1, bad), InputError);
  EXPECT_THROW((void)lagrangian_upper_bound(gains, 1, {0.0, 0.0}), InputError);
  EXPECT_THROW((void)lagrangian_upper_bound(gains, 1, {0.0, 0.0, std::nan(""), 0.0}), InputError);
  Eigen::MatrixXd upper = Eigen::MatrixXd::Identity(3, 3);
  upper(0, 2) = 0.5;
  EXPECT_THROW((void)TriangularGains<double>::from_dense(upper, "test"), InputError);
  EXPECT_THROW(TriangularGains<double>(-1), InputError);
  EXPECT_THROW((void)schedule_step_mass(gains, std::vector<int>{0, 5, 2}), std::invalid_argument);
  EXPECT_EQ(implicit_flow_optimum(TriangularGains<double>(0), 3).summary.value, 0.0);
}

}  // namespace
}  // namespace subevict::greedy
