// Tests the dynamic-eviction checks (proofs_checks/dynamic_*.hpp, offline_gap, sparsity_claim,
// zero_padding_erratum): each on the real implementation (the documented outcome) and on a
// deliberately broken implementation or instance (a claim or erratum violated; a measurement's
// numbers moved), plus the registered defaults.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/attention.hpp"
#include "core/generator.hpp"
#include "core/tolerance.hpp"
#include "dynamic_instances.hpp"
#include "greedy/eviction/optimum/offline_optimum.hpp"
#include "greedy/eviction/optimum/shared_optimum.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "proofs_checks/dynamic_checks.hpp"
#include "proofs_checks/dynamic_lemmas.hpp"
#include "proofs_checks/dynamic_submodularity.hpp"
#include "proofs_checks/offline_gap.hpp"
#include "proofs_checks/perturbed_increments.hpp"
#include "proofs_checks/shared_cache.hpp"
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

TEST(Def41Submodularity, MeasuresNoViolatingTripleForTheConcaveFamily) {
  TrajectorySetup s = h2o_setup();
  s.heads = heads_from_workload(workload(), 96, 2);
  s.budget = 20;
  const CheckResult r = check_def41_submodularity(s, 4, 200);
  EXPECT_EQ(r.outcome, Outcome::measured);
  EXPECT_EQ(r.instances, 1600);
  EXPECT_EQ(measurement_value(r, "violating_triples"), 0.0);
  // Clopper-Pearson with 0 of 1600: upper = 1 - 0.025^(1/1600).
  EXPECT_TRUE(near(measurement_value(r, "violation_rate_upper"), 1.0 - std::pow(0.025, 1.0 / 1600), 1e-9));
}

TEST(Def41Submodularity, ConvexTransformMeasuresViolatingTriples) {
  TrajectorySetup s = h2o_setup();
  s.heads = heads_from_workload(workload(), 96, 2);
  s.budget = 20;
  s.h = [](double z) { return z * z; };
  const CheckResult r = check_def41_submodularity(s, 4, 200);
  EXPECT_EQ(r.outcome, Outcome::measured);  // a measurement reports numbers, never a verdict
  EXPECT_EQ(r.violations, 0);
  EXPECT_FALSE(r.counterexample.has_value());
  EXPECT_GT(measurement_value(r, "violating_triples"), 0.0);
  EXPECT_NE(r.notes.find("Smallest violating triple"), std::string::npos) << r.notes;
}

TEST(UniversalConditions, MeasuresTheConstantsOnH2oTrajectories) {
  const CheckResult r = check_universal_conditions(h2o_setup());
  EXPECT_EQ(r.outcome, Outcome::measured);
  EXPECT_EQ(measurement_value(r, "steps_without_constants"), 0.0);
  // Before the cache fills opt_i = h(i + 2) - h(0) for the tracked family (every row has mass 1),
  // so gamma >= 1 - (sqrt(2) - 1) / (sqrt(3) - 1) at step 0.
  const auto gamma = std::find_if(r.measurements.begin(), r.measurements.end(),
                                  [](const Measurement& m) { return m.name == "gamma_tracked"; });
  ASSERT_NE(gamma, r.measurements.end());
  EXPECT_GE(gamma->value, 1.0 - (std::sqrt(2.0) - 1.0) / (std::sqrt(3.0) - 1.0) - Tol<double>::kValue);
}

TEST(UniversalConditions, DecreasingTransformMeasuresStepsWithoutConstants) {
  TrajectorySetup s = h2o_setup();
  s.h = [](double z) { return -z; };
  const CheckResult r = check_universal_conditions(s);
  EXPECT_EQ(r.outcome, Outcome::measured);
  EXPECT_GT(measurement_value(r, "steps_without_constants"), 0.0);
  EXPECT_GT(measurement_value(r, "monotonicity_failures"), 0.0);
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

TEST(LemmaBound, ClosedFormAtEveryStep) {
  // 0-based step i is theory.md's step m = i + 1, whose bound has exponent and eps0 multiplier m + 1.
  const double e = 1 - std::exp(-1.0);
  for (int i = 0; i < 6; ++i) {
    const double expected = e * std::pow(0.9 * 0.8, i + 2) * 3.0 - (i + 2) * 0.01;
    EXPECT_TRUE(near(lemma_bound(i, 0.1, 0.2, 0.01, 3.0), expected, Tol<double>::kValue)) << i;
  }
  EXPECT_TRUE(near(lemma_bound(0, 0, 0, 0, 1), e, Tol<double>::kValue));
}

TEST(LemmaD30, HoldsForH2o) {
  EXPECT_EQ(check_lemma_d30(h2o_setup()).outcome, Outcome::held);
  EXPECT_EQ(check_lemma_d30(hard_setup(h2o())).outcome, Outcome::held);
}

TEST(LemmaD30, StepsWhoseBoundIsNotPositiveAreCountedVacuous) {
  // (i + 2) eps0 outgrows the shrinking (1-1/e)(1-theta)^(i+2)(1-gamma)^(i+2) opt_{i+1}: on those
  // steps the bound is <= 0 and f >= 0 cannot fail it; the others decide the outcome.
  const CheckResult r = check_lemma_d30(h2o_setup());
  EXPECT_GT(r.vacuous, 0);
  EXPECT_LT(r.vacuous, r.hypotheses_held);
  EXPECT_EQ(r.outcome, Outcome::held);
  EXPECT_EQ(measurement_value(r, "vacuous_steps"), double(r.vacuous));
}

TEST(LemmaD30, HeaviestFirstEvictionIsACounterexample) {
  EXPECT_EQ(check_lemma_d30(hard_setup(heaviest_first())).outcome, Outcome::violated);
}

TEST(TheoremD32, TheHypothesesReadAlphaAsTenNTimesTheLargerConstantAndBetaAsTenNEps0) {
  // alpha = 10 n max(theta, gamma), beta = 10 n eps0 with n the head's tokens: pinned on heads of
  // one length, where the largest head's alpha is 10 n times the largest measured constant.
  TrajectorySetup s = h2o_setup();
  ASSERT_FALSE(s.heads.empty());
  const int n = s.heads.front().tokens();
  std::erase_if(s.heads, [n](const SmallHead& h) { return h.tokens() != n; });
  const CheckResult r = check_theorem_d32(s);
  const double constant = std::max(measurement_value(r, "theta"), measurement_value(r, "gamma"));
  EXPECT_GT(constant, 0.0);
  EXPECT_DOUBLE_EQ(measurement_value(r, "alpha_from_theorem"), 10.0 * n * constant);
  EXPECT_DOUBLE_EQ(measurement_value(r, "beta_from_theorem"), 10.0 * n * measurement_value(r, "epsilon0"));
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

/// Four tokens, k = 2, h(z) = z, logits chosen so that (0-based) step 2 evicts token 2 by a margin
/// of 0.2 and step 3, the last, has candidates {0, 1} (evict 3) and {0, 3} (evict 1) whose exact
/// values differ by `gap` with {1, 3} far below: acc after step 2 is (2.5, 0.35, 0.15) and row 3
/// over {0, 1, 3} is (0.5, (0.15 + gap)/2, (0.85 - gap)/2). With eps = 0.1 the increment bound is eps/8, so
/// {0, 1} (evaluated at step 2) can be pushed down by at most eps/2 and the new {0, 3} up by eps/2:
/// an adversary flips the last step exactly when gap < eps, losing gap.
TrajectorySetup two_candidate_setup(double gap) {
  RowMatrixf q = RowMatrixf::Zero(4, 4), key = RowMatrixf::Identity(4, 4), v = RowMatrixf::Identity(4, 4);
  q(1, 1) = -30.0f;  // query 1 attends to token 0 only
  q(2, 0) = float(std::log(0.5));
  q(2, 1) = float(std::log(0.35));
  q(2, 2) = float(std::log(0.15));
  q(3, 0) = float(std::log(0.5));
  q(3, 1) = float(std::log((0.15 + gap) / 2));
  q(3, 3) = float(std::log((0.85 - gap) / 2));
  TrajectorySetup s;
  s.heads.push_back(make_small_head(std::move(q), std::move(key), std::move(v), 1.0, "two candidates"));
  s.budget = 2;
  s.h = [](double z) { return z; };
  s.h_name = "z";
  return s;
}

/// A perturbation that returns no error.
PerturbationFactory no_perturbation() {
  struct Zero final : IncrementPerturbation {
    std::vector<double> errors(int, const std::vector<std::vector<int>>& c, const std::vector<double>&) override {
      return std::vector<double>(c.size(), 0.0);
    }
  };
  return [](double, std::uint64_t) { return std::make_unique<Zero>(); };
}

TEST(LemmaD19, HoldsOnH2oHeadsUnderAdversarialAndRandomErrors) {
  const CheckResult r = check_lemma_d19(h2o_setup(), {adversarial_perturbation(), random_perturbation()},
                                        perturbed_argmax(), 0.1);
  EXPECT_EQ(r.outcome, Outcome::held);
  EXPECT_GT(r.hypotheses_held, 0);
  EXPECT_GT(measurement_value(r, "changed_steps"), 0.0);  // the adversary does change some steps
  EXPECT_LE(measurement_value(r, "max_error_over_half_epsilon"), 1.0 + Tol<double>::kValue);
}

TEST(LemmaD19, WithoutErrorsThePerturbedProcessIsTheExactOne) {
  const CheckResult r = check_lemma_d19(h2o_setup(), {no_perturbation()}, perturbed_argmax(), 0.1);
  EXPECT_EQ(r.outcome, Outcome::held);
  EXPECT_EQ(measurement_value(r, "max_step_loss"), 0.0);
  EXPECT_EQ(measurement_value(r, "changed_steps"), 0.0);
  EXPECT_EQ(measurement_value(r, "max_final_gap"), 0.0);
}

TEST(LemmaD19, NearTightInstanceLosesAlmostEpsilon) {
  const CheckResult r = check_lemma_d19(two_candidate_setup(0.099), {adversarial_perturbation()}, perturbed_argmax(), 0.1);
  EXPECT_EQ(r.outcome, Outcome::held);
  EXPECT_EQ(r.hypotheses_held, 2);  // eviction steps 2 and 3
  EXPECT_NEAR(measurement_value(r, "max_step_loss"), 0.099, 1e-6);
  EXPECT_NEAR(r.worst_slack, 0.001, 1e-6);
  EXPECT_EQ(measurement_value(r, "changed_steps"), 1.0);
}

TEST(LemmaD19, GapAboveEpsilonIsNotFlipped) {
  const CheckResult r = check_lemma_d19(two_candidate_setup(0.15), {adversarial_perturbation()}, perturbed_argmax(), 0.1);
  EXPECT_EQ(r.outcome, Outcome::held);
  EXPECT_EQ(measurement_value(r, "changed_steps"), 0.0);
}

TEST(LemmaD19, ProcessApplyingTheErrorsTwiceIsViolated) {
  const PerturbedChoice doubled = [](const std::vector<double>& exact, const std::vector<double>& errors) {
    std::vector<double> twice = errors;
    for (double& e : twice) e *= 2;
    return perturbed_argmax()(exact, twice);
  };
  const CheckResult r = check_lemma_d19(two_candidate_setup(0.15), {adversarial_perturbation()}, doubled, 0.1);
  EXPECT_EQ(r.outcome, Outcome::violated);
  ASSERT_TRUE(r.counterexample.has_value());
  EXPECT_NEAR(r.worst_slack, 0.1 - 0.15, 1e-6);
}

TEST(LemmaD19, ErrorsAboveEpsOver2nAreHypothesesNotMet) {
  const PerturbationFactory adversarial = adversarial_perturbation();
  const PerturbationFactory oversized = [adversarial](double b, std::uint64_t seed) { return adversarial(2 * b, seed); };
  const CheckResult r = check_lemma_d19(two_candidate_setup(0.15), {oversized}, perturbed_argmax(), 0.1);
  EXPECT_EQ(r.outcome, Outcome::hypotheses_not_met);
  EXPECT_EQ(measurement_value(r, "steps_with_unreachable_errors"), 2.0);
}

TEST(LemmaD19, RejectsNonPositiveEpsilon) {
  EXPECT_THROW((void)check_lemma_d19(h2o_setup(), {random_perturbation()}, perturbed_argmax(), 0.0),
               std::invalid_argument);
}

/// Rows over `cols` tokens: token 0 at 0.4, `extras` tokens of the row's own at 0.2 (the next free
/// ones from *next), and 20 filler tokens at 0.01 (the (k+1)-th largest entry for k = 1 + extras).
Eigen::MatrixXd rows_with_private_extras(int rows, int extras, int cols, int& next) {
  Eigen::MatrixXd x = Eigen::MatrixXd::Zero(rows, cols);
  for (int r = 0; r < rows; ++r) {
    x(r, 0) = 0.4;
    for (int e = 0; e < extras; ++e) x(r, next++) = 0.2;
    for (int f = cols - 20; f < cols; ++f) x(r, f) = 0.01;
  }
  return x;
}

TEST(ClaimD34, CalibrationFixesTauS0AndAlphaFromTheirDefinitions) {
  int next = 1;
  const Eigen::MatrixXd cal = rows_with_private_extras(4, 2, 40, next);
  const GoodConstants g = calibrate_d33(cal, 3);
  EXPECT_EQ(g.tau, std::nextafter(0.01, 1.0));  // the 4th largest entry of every row is 0.01
  EXPECT_EQ(g.s0, (std::vector<int>{0}));
  EXPECT_EQ(g.excess, 2);
  EXPECT_EQ(g.alpha, 2.0 / 3.0);
}

TEST(ClaimD34, S0TakesATokenInExactlyTheRequiredShareOfCalibrationSupports) {
  // 21 rows: a token must be in ceil(0.95 * 21) = 20 supports. Token 1 is in exactly 20, token 2
  // in 19 (floor(0.95 * 21) = 19 would take it; "more than" instead of "at least" would drop token 1).
  Eigen::MatrixXd cal = Eigen::MatrixXd::Zero(21, 10);
  cal.col(0).setConstant(0.4);
  cal.col(1).head(20).setConstant(0.3);
  cal.col(2).head(19).setConstant(0.2);
  const GoodConstants g = calibrate_d33(cal, 3);
  EXPECT_EQ(g.s0, (std::vector<int>{0, 1}));
}

TEST(ClaimD34, TightInstanceMeetsTheBoundExactly) {
  // S0 = {0}, alpha k = 2, and every test row brings 2 tokens of its own: union = alpha k n.
  int next = 1;
  SupportSamples s{rows_with_private_extras(4, 2, 60, next), rows_with_private_extras(9, 2, 60, next), "tight"};
  const CheckResult r = check_claim_d34({s}, 3);
  EXPECT_EQ(r.outcome, Outcome::held);
  EXPECT_EQ(r.worst_slack, 0.0);
  EXPECT_EQ(measurement_value(r, "instance0_union"), 18.0);
  EXPECT_EQ(measurement_value(r, "instance0_bound"), 18.0);
}

TEST(ClaimD34, TheBoundIsAppliedToTheTestRowsWhereItCanFail) {
  // alpha k = 2; the test rows attend to token 0 (S0), token 1 and 20 fillers: their union outside
  // S0 can never exceed reach = 21, so the bound 2 n can fail for n <= 10 only; 40 rows are cut to 10.
  int next = 1;
  const Eigen::MatrixXd cal = rows_with_private_extras(4, 2, 60, next);
  Eigen::MatrixXd test = Eigen::MatrixXd::Zero(40, 60);
  test.col(0).setConstant(0.5);
  test.col(1).setConstant(0.3);
  test.rightCols(20).setConstant(0.01);
  const CheckResult r = check_claim_d34({SupportSamples{cal, test, "cut"}}, 3);
  EXPECT_EQ(r.outcome, Outcome::held);
  EXPECT_EQ(r.vacuous, 0);
  EXPECT_EQ(measurement_value(r, "instance0_range"), 21.0);
  EXPECT_EQ(measurement_value(r, "instance0_test_rows"), 10.0);
  EXPECT_EQ(measurement_value(r, "instance0_bound"), 20.0);
}

TEST(ClaimD34, ABoundAtTheRangeOfTheUnionIsVacuous) {
  // One calibration row covers all N = 8 tokens, the other 19 only the sink token 0: S0 = {0},
  // alpha k = 7 = the 7 other tokens the test rows can attend to. No n >= 1 gives a bound below
  // the union's largest value: vacuous, however the test rows spread.
  Eigen::MatrixXd cal = Eigen::MatrixXd::Zero(20, 8);
  cal.row(0).setConstant(1.0 / 8);
  cal.col(0).tail(19).setOnes();
  const Eigen::MatrixXd test = Eigen::MatrixXd::Constant(3, 8, 1.0 / 8);
  const CheckResult r = check_claim_d34({SupportSamples{cal, test, "covering"}}, 8);
  EXPECT_EQ(r.hypotheses_held, 1);
  EXPECT_EQ(r.vacuous, 1);
  EXPECT_EQ(r.outcome, Outcome::vacuous);
  EXPECT_EQ(measurement_value(r, "vacuous_instances"), 1.0);
  EXPECT_EQ(measurement_value(r, "instance0_range"), 7.0);
}

TEST(ClaimD34, SupportsGrowingAfterCalibrationAreViolated) {
  // The test rows bring 4 private tokens each where the calibration rows brought 2.
  int next = 1;
  SupportSamples s{rows_with_private_extras(4, 2, 80, next), rows_with_private_extras(9, 4, 80, next), "growing"};
  const CheckResult r = check_claim_d34({s}, 3);
  EXPECT_EQ(r.outcome, Outcome::violated);
  ASSERT_TRUE(r.counterexample.has_value());
  EXPECT_EQ(r.worst_slack, 18.0 - 36.0);
  EXPECT_EQ(measurement_value(r, "test_rows_good"), 0.0);
}

TEST(ClaimD34, HeldWithNonEmptyS0OnTheDefaultVerifyWorkload) {
  // The workload `subevict verify` generates by default: llama2-7b, one layer, 1024 tokens, seed 7.
  const Workload w = generate_workload(spec_from_preset("llama2-7b", 1024, 1, 7));
  const CheckResult r = check_claim_d34(attention_row_samples(w, 4), 205);
  EXPECT_EQ(r.outcome, Outcome::held);
  EXPECT_EQ(r.hypotheses_held, 4);
  EXPECT_EQ(r.vacuous, 0);  // each instance is tested on the few rows where alpha k n < reach(n)
  EXPECT_LT(measurement_value(r, "instance0_test_rows"), 256.0);
  EXPECT_GE(measurement_value(r, "s0_min"), 1.0);
  EXPECT_LE(measurement_value(r, "alpha_max"), 1.0);
}

TEST(ClaimD34, GaussianAttentionHasNoS0) {
  // i.i.d. Gaussian Q and K: no sink or heavy hitter is in nearly every query's support.
  const CheckResult r = check_claim_d34(attention_row_samples(testing::gaussian_workload(256), 4), 52);
  EXPECT_EQ(r.outcome, Outcome::hypotheses_not_met);
  EXPECT_EQ(measurement_value(r, "s0_mean"), 0.0);
}

TEST(ClaimD34, RejectsMismatchedRows) {
  const SupportSamples s{Eigen::MatrixXd::Ones(2, 5), Eigen::MatrixXd::Ones(2, 6), "mismatched"};
  EXPECT_THROW((void)check_claim_d34({s}, 2), std::invalid_argument);
  EXPECT_THROW((void)check_claim_d34({}, 0), std::invalid_argument);
}

TEST(GreedyVsOfflineOptimum, MeasuresEveryPolicyWithoutBreakingTheChain) {
  const CheckResult r = check_greedy_vs_offline(workload(), {0, 3}, 20, comparison_policies(20), flow_optimum(), 1);
  EXPECT_EQ(r.outcome, Outcome::measured);
  EXPECT_EQ(r.instances, 12);
  EXPECT_EQ(measurement_value(r, "chain_breaks"), 0.0);
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

TEST(GreedyVsOfflineOptimum, FakeOptimumBelowAPolicyBreaksTheChain) {
  const OptimumSolver half = [](const Eigen::MatrixXd& w, int k) { return 0.5 * greedy::offline_optimum(w, k).value; };
  const CheckResult r = check_greedy_vs_offline(workload(), {0}, 20, comparison_policies(20), half, 1);
  EXPECT_EQ(r.outcome, Outcome::measured);
  EXPECT_GT(measurement_value(r, "chain_breaks"), 0.0);
  EXPECT_NE(r.notes.find("chain breaks first"), std::string::npos) << r.notes;
}

TEST(SharedCache, StaticAllocationAndTheSharedCacheEachAddToTheUniformSplit) {
  // 3 layers x 2 KV heads, 96 tokens, 10 slots per head.
  const CheckResult r = check_shared_cache(workload(), {0, 1, 2}, 10, exact_shared_optimum());
  EXPECT_EQ(r.outcome, Outcome::measured);
  EXPECT_EQ(r.instances, 3);
  EXPECT_EQ(measurement_value(r, "chain_breaks"), 0.0);
  EXPECT_GE(measurement_value(r, "static_over_uniform"), 1.0);
  EXPECT_GE(measurement_value(r, "shared_over_static"), 1.0);
  ASSERT_EQ(r.series.size(), 2u);
  for (std::size_t l = 0; l < 3; ++l) EXPECT_GE(r.series[1].y[l], r.series[0].y[l] - 1e-12);
}

TEST(SharedCache, AFakeSharedOptimumBelowTheStaticAllocationBreaksTheOrder) {
  // Half the true shared optimum is below every static allocation: the order must break, named.
  const SharedSolver half = [](const std::vector<Eigen::MatrixXd>& w, long long total) {
    return 0.5 * greedy::shared_optimum(w, total).value;
  };
  const CheckResult r = check_shared_cache(workload(), {1}, 10, half);
  EXPECT_EQ(r.outcome, Outcome::measured);
  EXPECT_EQ(measurement_value(r, "chain_breaks"), 1.0);
  EXPECT_NE(r.notes.find("order breaks first at layer 1"), std::string::npos) << r.notes;
  EXPECT_THROW((void)check_shared_cache(workload(), {}, 10, half), std::invalid_argument);
  EXPECT_THROW((void)check_shared_cache(workload(), {0}, 0, half), std::invalid_argument);
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

TEST(DynamicChecks, RegisteredChecksRunOnTheTestWorkload) {
  std::set<std::string> ids;
  for (const auto& check : dynamic_checks()) {
    const CheckInfo info = check->info();
    EXPECT_TRUE(ids.insert(info.id).second) << info.id;
    EXPECT_FALSE(info.reference.empty());
    const CheckResult r = check->run(context());
    EXPECT_NE(r.outcome, Outcome::inconclusive) << info.id;
    EXPECT_NO_THROW(require_consistent(info, r)) << info.id;
    EXPECT_FALSE(r.key_number.empty()) << info.id;
    for (const Measurement& m : r.measurements) EXPECT_FALSE(std::isnan(m.value)) << info.id << " " << m.name;
  }
  EXPECT_EQ(ids.size(), 11u);
}

}  // namespace
}  // namespace subevict::proofs_checks
