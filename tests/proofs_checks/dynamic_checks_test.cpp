// Tests the dynamic-eviction checks (proofs_checks/dynamic_*.hpp, offline_gap, sparsity_claim,
// zero_padding_erratum): each on the real implementation (the documented outcome) and on a
// deliberately broken implementation or instance (violated), plus the registered defaults.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/attention.hpp"
#include "core/tolerance.hpp"
#include "dynamic_instances.hpp"
#include "greedy/offline_optimum.hpp"
#include "greedy/policy_registry.hpp"
#include "proofs_checks/dynamic_checks.hpp"
#include "proofs_checks/dynamic_lemmas.hpp"
#include "proofs_checks/dynamic_submodularity.hpp"
#include "proofs_checks/offline_gap.hpp"
#include "proofs_checks/sparsity_claim.hpp"
#include "proofs_checks/zero_padding_erratum.hpp"

namespace subevict::proofs_checks {
namespace {

using testing::hard_attention_head;
using testing::heaviest_first;
using testing::llm_workload;
using testing::saturating;

const Workload& workload() {
  static const Workload w = llm_workload(96);
  return w;
}

CheckContext context() {
  CheckContext c;
  c.workload = &workload();
  c.seed = 3;
  c.effort = 0.25;
  return c;
}

/// H2O on the small default heads of the test workload.
TrajectorySetup h2o_setup() { return default_trajectory_setup(context()); }

/// The hard-attention head (tests/proofs_checks/dynamic_instances.hpp) with h = min(z, 1) and k = 2.
TrajectorySetup hard_setup(greedy::PolicyFactory policy) {
  TrajectorySetup s;
  s.heads.push_back(hard_attention_head(8, 2));
  s.budget = 2;
  s.policy = std::move(policy);
  s.h = saturating();
  s.h_name = "min(z, 1)";
  return s;
}

greedy::PolicyFactory h2o() {
  return [] { return greedy::make_policy("h2o-alg2-sqrt"); };
}

TEST(DynamicFamily, HardAttentionInstanceHasTheValuesWorkedOutByHand) {
  const TrajectorySetup s = hard_setup(heaviest_first());
  const std::vector<std::vector<int>> caches = policy_caches(s.heads[0], s.policy, 2, 0);
  EXPECT_EQ(caches[2], (std::vector<int>{1, 2}));  // token 0 (acc 3) evicted at step 2
  EXPECT_EQ(caches[7], (std::vector<int>{1, 2}));  // every later arrival evicted at once
  const DynamicFamily tracked(s.heads[0], caches, s.h, Knowledge::kTracked);
  const DynamicFamily exact(s.heads[0], caches, s.h, Knowledge::kExact);
  EXPECT_EQ(exact.accumulated(7)[0], 3.0);
  EXPECT_EQ(tracked.accumulated(7)[0], 3.0);
  EXPECT_EQ(exact.value(5, caches[5]), 0.0);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(exact.opt(i, 2), 1.0) << i;  // token 0 alone saturates h
  const ConditionTrace c = measure_conditions(exact, &tracked, 2);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(c.theta[i], 0.0);
    EXPECT_EQ(c.gamma[i], 0.0);
    EXPECT_EQ(c.epsilon0[i], 0.0);
  }
}

TEST(DynamicFamily, OptMatchesTopKWhenTheHistoryDoesNotMatter) {
  // Exact knowledge: f_{X,i} does not depend on X, so opt_i = h(top-k sum of acc_i over 0..i).
  const SmallHead head = random_heads(10, 4, 1, 9)[0];
  const DynamicFamily f(head, policy_caches(head, h2o(), 3, 0), transform_of(greedy::Concave::kSqrt), Knowledge::kExact);
  for (int i = 0; i < 10; ++i) {
    const Eigen::VectorXd row = f.accumulated(i);
    std::vector<double> acc(row.data(), row.data() + i + 1);
    std::sort(acc.rbegin(), acc.rend());
    double top = 0;
    for (int j = 0; j < std::min(3, i + 1); ++j) top += acc[j];
    EXPECT_TRUE(near(f.opt(i, 3), std::sqrt(top + 1) - 1, Tol<double>::kValue)) << i;
  }
}

TEST(Def41Submodularity, HoldsForTheConcaveFamily) {
  TrajectorySetup s = h2o_setup();
  s.heads = heads_from_workload(workload(), 96, 2);
  s.budget = 20;
  const CheckResult r = check_def41_submodularity(s, 4, 200);
  EXPECT_EQ(r.outcome, Outcome::held);
  EXPECT_EQ(r.instances, 1600);
}

TEST(Def41Submodularity, ConvexTransformIsViolated) {
  TrajectorySetup s = h2o_setup();
  s.heads = heads_from_workload(workload(), 96, 2);
  s.budget = 20;
  s.h = [](double z) { return z * z; };
  const CheckResult r = check_def41_submodularity(s, 4, 200);
  EXPECT_EQ(r.outcome, Outcome::violated);
  ASSERT_TRUE(r.counterexample.has_value());
  EXPECT_GT(r.violation_rate.lower, 0.0);
}

TEST(UniversalConditions, HoldOnH2oTrajectoriesWithMeasuredConstants) {
  const CheckResult r = check_universal_conditions(h2o_setup());
  EXPECT_EQ(r.outcome, Outcome::held);
  // Before the cache fills opt_i = h(i + 2) - h(0) for the tracked family (every row has mass 1),
  // so gamma >= 1 - (sqrt(2) - 1) / (sqrt(3) - 1) at step 0.
  const auto gamma = std::find_if(r.measurements.begin(), r.measurements.end(),
                                  [](const Measurement& m) { return m.name == "gamma_tracked"; });
  ASSERT_NE(gamma, r.measurements.end());
  EXPECT_GE(gamma->value, 1.0 - (std::sqrt(2.0) - 1.0) / (std::sqrt(3.0) - 1.0) - Tol<double>::kValue);
}

TEST(UniversalConditions, DecreasingTransformIsViolated) {
  TrajectorySetup s = h2o_setup();
  s.h = [](double z) { return -z; };
  EXPECT_EQ(check_universal_conditions(s).outcome, Outcome::violated);
}

TEST(LemmaD29, HoldsForH2o) {
  const CheckResult r = check_lemma_d29(h2o_setup());
  EXPECT_EQ(r.outcome, Outcome::held);
  EXPECT_GT(r.hypotheses_held, 0);
}

TEST(LemmaD29, HoldsForH2oOnTheHardInstance) {
  EXPECT_EQ(check_lemma_d29(hard_setup(h2o())).outcome, Outcome::held);
}

TEST(LemmaD29, HeaviestFirstEvictionIsACounterexample) {
  const CheckResult r = check_lemma_d29(hard_setup(heaviest_first()));
  EXPECT_EQ(r.outcome, Outcome::violated);
  ASSERT_TRUE(r.counterexample.has_value());
  // First failing step: 0-based 1, S_2 = {1, 2} has value 0 against (1-1/e) opt_2 = 1 - 1/e.
  EXPECT_NE(r.counterexample->description.find("0-based 1)"), std::string::npos) << r.counterexample->description;
  EXPECT_TRUE(near(r.worst_slack, -(1.0 - std::exp(-1.0)), Tol<double>::kValue));
}

TEST(LemmaD30, HoldsForH2o) {
  EXPECT_EQ(check_lemma_d30(h2o_setup()).outcome, Outcome::held);
  EXPECT_EQ(check_lemma_d30(hard_setup(h2o())).outcome, Outcome::held);
}

TEST(LemmaD30, HeaviestFirstEvictionIsACounterexample) {
  EXPECT_EQ(check_lemma_d30(hard_setup(heaviest_first())).outcome, Outcome::violated);
}

TEST(TheoremD32, HypothesesNotMetOnAttentionTrajectories) {
  // gamma >= 0.43 before the cache fills, so alpha = 10 n gamma >= 1 on every head.
  EXPECT_EQ(check_theorem_d32(h2o_setup()).outcome, Outcome::hypotheses_not_met);
}

TEST(TheoremD32, HoldsForH2oOnTheHardInstance) {
  EXPECT_EQ(check_theorem_d32(hard_setup(h2o())).outcome, Outcome::held);
}

TEST(TheoremD32, HeaviestFirstEvictionIsACounterexample) {
  const CheckResult r = check_theorem_d32(hard_setup(heaviest_first()));
  EXPECT_EQ(r.outcome, Outcome::violated);
  EXPECT_TRUE(near(r.worst_slack, -(1.0 - std::exp(-1.0)), Tol<double>::kValue));
}

TEST(LemmaD19, HoldsForNoisyGreedy) {
  const CheckResult r = check_lemma_d19(h2o_setup(), default_noisy_greedy(), 0.1);
  EXPECT_EQ(r.outcome, Outcome::held);
  EXPECT_GT(r.instances, 0);
}

TEST(LemmaD19, GreedyPickingTheSmallestGainsIsViolated) {
  const NoisyGreedy worst = [](const greedy::SetFunction& f, std::size_t k, double, std::uint64_t) {
    std::vector<std::pair<double, greedy::Element>> singles;
    for (greedy::Element e = 0; e < f.ground_size(); ++e) singles.push_back({f.evaluate(std::vector<greedy::Element>{e}), e});
    std::sort(singles.begin(), singles.end());
    greedy::Selection s;
    for (std::size_t j = 0; j < k; ++j) s.set.push_back(singles[j].second);
    return s;
  };
  EXPECT_EQ(check_lemma_d19(h2o_setup(), worst, 0.1).outcome, Outcome::violated);
}

TEST(ClaimD34, UnionBoundHoldsOnAttentionRows) {
  const CheckResult r = check_claim_d34(attention_row_samples(workload(), 2), 0.01, 20, smallest_good_alpha());
  EXPECT_EQ(r.outcome, Outcome::held);
}

TEST(ClaimD34, HandCountedInstance) {
  // Three samples over 4 tokens, tau = 0.5: supports {0,1}, {0,2}, {0,3}; S0 = {0}, alpha = 1/k
  // with k = 1, union \ S0 = 3 = alpha k m.
  Eigen::MatrixXd x(3, 4);
  x << 1, 1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1;
  const CheckResult r = check_claim_d34({x}, 0.5, 1, smallest_good_alpha());
  EXPECT_EQ(r.outcome, Outcome::held);
  EXPECT_EQ(r.worst_slack, 0.0);
}

TEST(ClaimD34, UnderestimatedAlphaIsViolated) {
  const AlphaEstimator none = [](const std::vector<int>&, int) { return 0.0; };  // "supports equal S0"
  EXPECT_EQ(check_claim_d34(attention_row_samples(workload(), 2), 0.01, 20, none).outcome, Outcome::violated);
}

TEST(GreedyVsOfflineOptimum, DecompositionHoldsForEveryPolicy) {
  const CheckResult r = check_greedy_vs_offline(workload(), {0, 3}, 20, comparison_policies(20), flow_optimum(), 1);
  EXPECT_EQ(r.outcome, Outcome::held);
  EXPECT_EQ(r.instances, 12);
  std::set<std::string> plotted;
  for (const Series& s : r.series) {
    EXPECT_EQ(s.plot, "gap_to_optimum");
    for (double y : s.y) EXPECT_LE(y, 1.0 + Tol<double>::sum(96 * 96));
    plotted.insert(s.label);
  }
  EXPECT_EQ(plotted, (std::set<std::string>{"h2o", "local", "streamingllm", "tova", "l2norm", "random"}));
}

TEST(GreedyVsOfflineOptimum, PrefixOfTheHeadsIsTheSmallerWorkload) {
  // The first 48 tokens of the 96-token workload are a 48-token workload of their own (causal).
  const Workload small = llm_workload(48);
  const CheckResult cut = check_greedy_vs_offline(workload(), {1}, 10, comparison_policies(10), flow_optimum(), 1, 48);
  const CheckResult own = check_greedy_vs_offline(small, {1}, 10, comparison_policies(10), flow_optimum(), 1);
  ASSERT_EQ(cut.measurements.size(), own.measurements.size());
  for (std::size_t m = 0; m < cut.measurements.size(); ++m) {
    EXPECT_TRUE(near(cut.measurements[m].value, own.measurements[m].value, Tol<double>::sum(48 * 48)))
        << cut.measurements[m].name;
  }
}

TEST(GreedyVsOfflineOptimum, FakeOptimumBelowAPolicyIsViolated) {
  const OptimumSolver half = [](const Eigen::MatrixXd& w, int k) { return 0.5 * greedy::offline_optimum(w, k).value; };
  const CheckResult r = check_greedy_vs_offline(workload(), {0}, 20, comparison_policies(20), half, 1);
  EXPECT_EQ(r.outcome, Outcome::violated);
  ASSERT_TRUE(r.counterexample.has_value());
}

TEST(ErratumD28Direction, PrintedDirectionFailsAndCorrectedHolds) {
  const CheckResult r = check_erratum_d28_direction(h2o_setup());
  EXPECT_EQ(r.outcome, Outcome::held);
  ASSERT_TRUE(r.counterexample.has_value());  // the printed reading's failure
}

TEST(ErratumD28Direction, CorrectedDirectionFailingIsViolated) {
  EXPECT_EQ(check_erratum_d28_direction(hard_setup(heaviest_first())).outcome, Outcome::violated);
}

TEST(ErratumZeroPadding, PaddingLeavesWeightOnEvictedKeysAndMaskingDoesNot) {
  const TrajectorySetup s = h2o_setup();
  const std::vector<SmallHead> heads = heads_from_workload(workload(), 96, 2);
  const CheckResult r = check_erratum_zero_padding(heads, 20, s.policy, 8, &tracked_attention);
  EXPECT_EQ(r.outcome, Outcome::held);
}

TEST(ErratumZeroPadding, PaddedImplementationIsViolated) {
  const TrajectorySetup s = h2o_setup();
  const std::vector<SmallHead> heads = heads_from_workload(workload(), 96, 2);
  EXPECT_EQ(check_erratum_zero_padding(heads, 20, s.policy, 8, &zero_padded_attention).outcome, Outcome::violated);
}

TEST(ErratumZeroPadding, PaddedWeightIsExpZeroOverZ) {
  // Logits (2, 5, 1) with position 1 evicted: padding gives it exp(0) / (e^2 + 1 + e^1).
  Eigen::VectorXd logits(3);
  logits << 2, 5, 1;
  const Eigen::VectorXd p = zero_padded_attention(logits, {true, false, true});
  EXPECT_TRUE(near(p[1], 1.0 / (std::exp(2.0) + 1.0 + std::exp(1.0)), Tol<double>::kValue));
  EXPECT_EQ(tracked_attention(logits, {true, false, true})[1], 0.0);
}

TEST(ErratumD29StrayTerm, BoundHoldsWithoutTheTerm) {
  const CheckResult r = check_erratum_d29_stray_term(h2o_setup());
  EXPECT_EQ(r.outcome, Outcome::held);
}

TEST(ErratumD29StrayTerm, HeaviestFirstEvictionIsViolated) {
  EXPECT_EQ(check_erratum_d29_stray_term(hard_setup(heaviest_first())).outcome, Outcome::violated);
}

TEST(DynamicChecks, RegisteredChecksRunOnTheTestWorkload) {
  std::set<std::string> ids;
  for (const auto& check : dynamic_checks()) {
    const CheckInfo info = check->info();
    EXPECT_TRUE(ids.insert(info.id).second) << info.id;
    EXPECT_FALSE(info.reference.empty());
    const CheckResult r = check->run(context());
    EXPECT_NE(r.outcome, Outcome::inconclusive) << info.id;
    EXPECT_FALSE(r.key_number.empty()) << info.id;
    for (const Measurement& m : r.measurements) EXPECT_FALSE(std::isnan(m.value)) << info.id << " " << m.name;
  }
  EXPECT_EQ(ids.size(), 11u);
}

}  // namespace
}  // namespace subevict::proofs_checks
