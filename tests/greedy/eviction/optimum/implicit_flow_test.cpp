// The offline optimum with implicit arcs (greedy/eviction/optimum/implicit_flow.*) against the
// explicit network simplex (offline_optimum), the exhaustive dynamic program (cache_dp) and CBC
// (offline_optimum_ip); its certificate against an independent evaluation of the Lagrangian bound;
// the stored triangle (greedy/eviction/process/triangular_gains.*) against the dense gain matrix.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <utility>
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

/// C_j(e) for e ∈ [j, n − 1] (C_j(j) = 0): the running sum down column j.
std::vector<double> earnings(const TriangularGains<double>& gains, int j) {
  std::vector<double> earned(gains.size(), 0.0);
  for (int e = j + 1; e < gains.size(); ++e) earned[e] = earned[e - 1] + gains.at(e, j);
  return earned;
}

/// The integer cost of the arc R_j → D_e: ⌊(C_j(n − 1) − C_j(e)) · scale + 1/2⌋.
std::int64_t arc_cost(const std::vector<double>& earned, int e, double scale) {
  return static_cast<std::int64_t>(std::floor((earned.back() - earned[e]) * scale + 0.5));
}

/// Token j's pricing by a walk over every step e ∈ (j, n) (no block skipped), from the formulas of
/// detail::TokenPricing: what the pricing pass must return for any potentials.
detail::TokenPricing price_every_step(const TriangularGains<double>& gains, int j, const std::vector<std::int64_t>& pot,
                                      std::int64_t pot_r, int keep, double scale) {
  const int n = gains.size();
  const std::vector<double> earned = earnings(gains, j);
  auto y = [&](int e) { return -static_cast<double>(pot[e]) / scale; };
  detail::TokenPricing out;
  out.scale = scale;
  out.lagrangian = y(n) - earned[n - 1];
  std::vector<std::pair<std::int64_t, int>> violated;
  for (int e = j; e < n; ++e) {
    out.lagrangian = std::min(out.lagrangian, y(e) - earned[e]);
    const std::int64_t reduced = arc_cost(earned, e, scale) + pot_r - pot[e];
    if (e > j && reduced < 0) violated.emplace_back(reduced, e);
  }
  std::sort(violated.begin(), violated.end());  // ascending reduced cost, ties by the lowest step
  for (std::size_t a = 0; a < std::min(violated.size(), std::size_t(keep)); ++a) {
    out.reduced.push_back(violated[a].first);
    out.steps.push_back(violated[a].second);
  }
  return out;
}

/// Potentials that give token j (with pot_r = 0), per block b of 64 steps after the one holding
/// j + 1, the lowest reduced cost level[b] at the block's last step (every arc of the block at least
/// that, so both of the pricing's block bounds are exact there), every arc of j's first block and
/// its never-cached arc the reduced cost `first_level` (step `special`: special_level), and D_n a
/// potential far below every other (its term y_n − C_j(n − 1) is never the minimum).
std::vector<std::int64_t> crafted_potentials(const TriangularGains<double>& gains, int j, double scale,
                                             const std::vector<std::int64_t>& level, std::int64_t first_level,
                                             int special = -1, std::int64_t special_level = 0) {
  const int n = gains.size();
  const std::vector<double> earned = earnings(gains, j);
  std::vector<std::int64_t> pot(n + 1, 0);
  const int first_block = (j + 1) / 64;
  for (int e = j; e < std::min(n, (first_block + 1) * 64); ++e) {
    pot[e] = arc_cost(earned, e, scale) - (e == special ? special_level : first_level);
  }
  for (int b = first_block + 1; b * 64 < n; ++b) {
    const int last = std::min(n, (b + 1) * 64) - 1;
    for (int e = b * 64; e <= last; ++e) pot[e] = arc_cost(earned, last, scale) - level[b];
  }
  pot[n] = -(std::int64_t{1} << 58);
  return pot;
}

TEST(ImplicitFlowPricing, EachBlockBoundAloneForbidsASkipWhereTheOtherAllowsIt) {
  // n = 400: token 10's first block is walked step by step and blocks 1..6 are candidates for the
  // skip. Each scenario leaves exactly one block that one bound alone forbids skipping; the result
  // must equal a walk over every step, and skipping that block (deciding by the other bound alone)
  // changes it.
  const Workload w = tiny_workload("tiny", 400, 5);
  const auto gains = triangular_gain_matrix<double>(head_group(w, 0, 0));
  const int j = 10;
  const double scale = detail::price_token(gains, j, std::vector<std::int64_t>(401, 0), 0, {}, 1).scale;
  // kFar / scale ≈ 0.2 (scale ≈ 4e12 here): terms of arcs at level kFar and at level 0 differ far
  // beyond rounding.
  constexpr std::int64_t kFar = 1'000'000'000'000;
  {
    // Nothing is violated and every arc so far has reduced cost kFar; block 3's arcs have reduced
    // cost >= 0 (no arc to add: the reduced-cost bound allows the skip) but their terms are lower
    // than any so far (the term bound forbids it): skipping it would leave the token's Lagrangian
    // term, and the certificate, too high.
    const std::vector<std::int64_t> level{0, kFar, kFar, 0, kFar, kFar, kFar};
    const auto pot = crafted_potentials(gains, j, scale, level, kFar);
    for (int keep : {1, 2}) {
      const detail::TokenPricing got = detail::price_token(gains, j, pot, 0, {}, keep);
      const detail::TokenPricing want = price_every_step(gains, j, pot, 0, keep, scale);
      EXPECT_TRUE(got.steps.empty());
      EXPECT_EQ(got.lagrangian, want.lagrangian) << "keep " << keep;
      EXPECT_LT(want.lagrangian, -static_cast<double>(pot[j]) / scale - 0.001);  // block 3 lowers the term
      EXPECT_EQ(got.blocks.walked_for_term, 1u);
      EXPECT_EQ(got.blocks.skipped, 5u);
      EXPECT_EQ(got.blocks.walked_for_reduced_cost + got.blocks.walked_for_both, 0u);
    }
  }
  {
    // keep = 2: step 30 (first block) has reduced cost −kFar, the most violated arc; block 4's last
    // arc has −1000: violated (the reduced-cost bound forbids the skip: only one arc is kept so far)
    // but its term is above step 30's (the term bound allows it): skipping it would add one arc
    // where two are due.
    const std::vector<std::int64_t> level{0, kFar, kFar, kFar, -1000, kFar, kFar};
    const auto pot = crafted_potentials(gains, j, scale, level, kFar, 30, -kFar);
    const detail::TokenPricing got = detail::price_token(gains, j, pot, 0, {}, 2);
    const detail::TokenPricing want = price_every_step(gains, j, pot, 0, 2, scale);
    EXPECT_EQ(got.steps, (std::vector<int>{30, 319}));
    EXPECT_EQ(got.steps, want.steps);
    EXPECT_EQ(got.reduced, want.reduced);
    EXPECT_EQ(got.lagrangian, want.lagrangian);
    EXPECT_EQ(got.blocks.walked_for_reduced_cost, 1u);
    EXPECT_EQ(got.blocks.skipped, 5u);
    EXPECT_EQ(got.blocks.walked_for_term + got.blocks.walked_for_both, 0u);
    // With one arc kept, block 4 cannot beat step 30 on either bound, so it is skipped.
    const detail::TokenPricing one = detail::price_token(gains, j, pot, 0, {}, 1);
    EXPECT_EQ(one.steps, (std::vector<int>{30}));
    EXPECT_EQ(one.blocks.skipped, 6u);
  }
}

RC_GTEST_PROP(ImplicitFlowPricing, TheBlockSkipEqualsAWalkOverEveryStep, ()) {
  // Per block a lowest reduced cost from levels around 0 and far from it, any keep, any restricted
  // arcs: the pricing with skipped blocks returns exactly the arcs and the term of the full walk.
  static const Workload w = tiny_workload("tiny", 330, 9);
  static const auto gains = triangular_gain_matrix<double>(head_group(w, 0, 1));
  const int n = gains.size();  // 6 blocks, the last partial
  static const double scale = detail::price_token(gains, 0, std::vector<std::int64_t>(n + 1, 0), 0, {}, 1).scale;
  const int j = *rc::gen::element(0, 5, 62, 63, 64, 130, 200, 260);  // first blocks and block edges
  constexpr std::int64_t kFar = 1'000'000'000'000;
  std::vector<std::int64_t> level(6);
  for (auto& l : level) l = *rc::gen::element<std::int64_t>(-kFar, -kFar / 2, -1000, -1, 0, 1, 1000, kFar / 2, kFar);
  const std::int64_t first = *rc::gen::element<std::int64_t>(-kFar / 4, 0, kFar);
  const int special = j + 1 + *rc::gen::inRange(0, 4);
  const auto pot = crafted_potentials(gains, j, scale, level, first, special,
                                      *rc::gen::element<std::int64_t>(-kFar, -1000, 0));
  std::vector<int> restricted;
  for (int e = j + 1; e < n; e += *rc::gen::inRange(20, 150)) restricted.push_back(e);
  const int keep = *rc::gen::inRange(1, 5);
  const std::int64_t pot_r = *rc::gen::element<std::int64_t>(0, -kFar / 8, kFar / 8);
  const detail::TokenPricing got = detail::price_token(gains, j, pot, pot_r, restricted, keep);
  const detail::TokenPricing want = price_every_step(gains, j, pot, pot_r, keep, scale);
  RC_ASSERT(got.steps == want.steps);
  RC_ASSERT(got.reduced == want.reduced);
  RC_ASSERT(got.lagrangian == want.lagrangian);
}

TEST(ImplicitFlow, EqualsTheExplicitArcSolverWhereThePricingSkipsBlocks) {
  // n = 450 (8 blocks of 64 steps): the simplex's potentials skip most blocks, and a block holding
  // a violated arc is kept for the reduced-cost bound alone once a more violated arc was found.
  const Workload w = tiny_workload("tiny", 450, 12);
  const HeadGroup group = head_group(w, 0, 1);
  const Eigen::MatrixXd a = gain_matrix(group);
  const auto gains = triangular_gain_matrix<double>(group);
  for (int k : {12, 90}) {
    SCOPED_TRACE("k " + std::to_string(k));
    PricingBlocks total;
    ImplicitFlowOptions options;
    options.on_round = [&](const ImplicitFlowRound& r) {
      total.skipped += r.blocks.skipped;
      total.walked_for_reduced_cost += r.blocks.walked_for_reduced_cost;
      total.walked_for_term += r.blocks.walked_for_term;
      total.walked_for_both += r.blocks.walked_for_both;
    };
    check_against_network_simplex(a, k, implicit_flow_optimum(gains, k, options));
    EXPECT_GT(total.skipped, 0u);
    EXPECT_GT(total.walked_for_reduced_cost, 0u);
    EXPECT_GT(total.walked_for_both, 0u);
  }
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
  bad.arcs_per_token = 1;  // the one arc priced may be the token's arc at capacity
  EXPECT_THROW((void)implicit_flow_optimum(gains, 1, bad), InputError);
  EXPECT_THROW((void)lagrangian_upper_bound(gains, 1, {0.0, 0.0}), InputError);
  EXPECT_THROW((void)lagrangian_upper_bound(gains, 1, {0.0, 0.0, std::nan(""), 0.0}), InputError);
  Eigen::MatrixXd upper = Eigen::MatrixXd::Identity(3, 3);
  upper(0, 2) = 0.5;
  EXPECT_THROW((void)TriangularGains<double>::from_dense(upper, "test"), InputError);
  EXPECT_THROW(TriangularGains<double>(-1), InputError);
  EXPECT_THROW((void)schedule_step_mass(gains, std::vector<int>{0, 5, 2}), std::invalid_argument);
  EXPECT_EQ(implicit_flow_optimum(TriangularGains<double>(0), 3).summary.value, 0.0);
  // detail::price_token: the token, the potentials' count and range, keep, the restricted steps.
  const std::vector<std::int64_t> zero(4, 0);
  EXPECT_NO_THROW((void)detail::price_token(gains, 0, zero, 0, {1, 2}, 4));
  EXPECT_THROW((void)detail::price_token(gains, 3, zero, 0, {}, 1), InputError);
  EXPECT_THROW((void)detail::price_token(gains, 0, {0, 0, 0}, 0, {}, 1), InputError);
  EXPECT_THROW((void)detail::price_token(gains, 0, {std::int64_t{1} << 60, 0, 0, 0}, 0, {}, 1), InputError);
  EXPECT_THROW((void)detail::price_token(gains, 0, zero, -(std::int64_t{1} << 60), {}, 1), InputError);
  EXPECT_THROW((void)detail::price_token(gains, 0, zero, 0, {}, 0), InputError);
  EXPECT_THROW((void)detail::price_token(gains, 0, zero, 0, {}, 5), InputError);
  EXPECT_THROW((void)detail::price_token(gains, 0, zero, 0, {2, 1}, 1), InputError);
  EXPECT_THROW((void)detail::price_token(gains, 0, zero, 0, {0}, 1), InputError);
  EXPECT_THROW((void)detail::price_token(gains, 0, zero, 0, {3}, 1), InputError);
}

}  // namespace
}  // namespace subevict::greedy
