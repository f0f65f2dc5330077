// Tests proofs_checks/softmax_regression_checks.hpp: each check holds with the library's
// implementation and reports a violation (or unmet hypotheses) for a broken one.
#include <gtest/gtest.h>

#include "core/tolerance.hpp"
#include "proofs_checks/softmax_regression_checks.hpp"
#include "softmax_regression/approximate_newton.hpp"
#include "softmax_regression/errata.hpp"
#include "softmax_regression/lemma_checks.hpp"

namespace subevict::proofs_checks {
namespace {

using sr::Matrix;
using sr::Vector;

Matrix library_hessian(const sr::Problem& p, const Vector& x) { return sr::hessian(p, sr::LossKind::kFull, x); }

double measurement(const CheckResult& r, const std::string& name) {
  for (const Measurement& m : r.measurements)
    if (m.name == name) return m.value;
  ADD_FAILURE() << "no measurement " << name;
  return 0;
}

sr::Instance instance(double R, double norm_A, sr::Violation violation = sr::Violation::kNone) {
  sr::InstanceSpec spec;
  spec.n = 40;
  spec.d = 5;
  spec.norm_A = norm_A;
  spec.parameters.R = R;
  spec.seed = 3;
  spec.violation = violation;
  return sr::make_instance(spec);
}

TEST(LemmaD47Check, HeldAndAgreesWithTheLibraryMeasurement) {
  const std::vector<sr::Instance> instances = lemma_instances(2, 1);
  const CheckResult r = check_lemma_d47(instances, 10, 4, library_hessian);
  EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
  double lowest = 1e300;
  for (const sr::Instance& inst : instances)
    lowest = std::min(lowest, sr::measure_lemma_d47(inst.problem, inst.parameters, 10, 4).min_eigenvalue);
  EXPECT_TRUE(near(measurement(r, "min_eigenvalue"), lowest, Tol<double>::kValue));
}

TEST(LemmaD47Check, WeakWeightsAreHypothesesNotMet) {
  const CheckResult r = check_lemma_d47({instance(10, 1, sr::Violation::kWeakW)}, 10, 4, library_hessian);
  EXPECT_EQ(r.outcome, Outcome::hypotheses_not_met);
  // The bound itself fails there (the hypothesis matters).
  EXPECT_LT(measurement(r, "outside_hypotheses_min_margin"), 0);
}

TEST(LemmaD47Check, ViolatedByAHessianMissingTheRegulariser) {
  const auto broken = [](const sr::Problem& p, const Vector& x) {
    return Matrix(sr::hessian(p, sr::LossKind::kExp, x) + sr::hessian(p, sr::LossKind::kSparse, x));
  };
  const CheckResult r = check_lemma_d47(lemma_instances(1, 1), 5, 4, broken);
  EXPECT_EQ(r.outcome, Outcome::violated);
  ASSERT_TRUE(r.counterexample.has_value());
}

TEST(LemmaD48Check, HeldAndLoose) {
  const CheckResult r = check_lemma_d48({instance(0.5, 0.5), instance(1, 1)}, 10, 2, library_hessian);
  EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
  EXPECT_GT(r.worst_slack, 0);
  ASSERT_EQ(r.series.size(), 1u);
  EXPECT_EQ(r.series[0].x.size(), 2u);
}

TEST(LemmaD48Check, ViolatedByADiscontinuousHessian) {
  const auto broken = [](const sr::Problem& p, const Vector& x) {
    Matrix H = sr::hessian(p, sr::LossKind::kFull, x);
    if (x[0] > 0) H.diagonal().array() += 1e12;  // a jump across x_0 = 0
    return H;
  };
  const CheckResult r = check_lemma_d48({instance(0.5, 0.5)}, 10, 2, broken);
  EXPECT_EQ(r.outcome, Outcome::violated);
  ASSERT_TRUE(r.counterexample.has_value());
}

TEST(LemmaD48Check, NormOfAAboveRIsHypothesesNotMet) {
  EXPECT_EQ(check_lemma_d48({instance(0.5, 2)}, 4, 2, library_hessian).outcome, Outcome::hypotheses_not_met);
}

TEST(TheoremD49Check, HeldWithTheLibrarySolver) {
  const CheckResult r = check_theorem_d49(newton_instances(1, 2), library_approximate_newton);
  EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
  EXPECT_LT(measurement(r, "max_contraction"), 1);
  EXPECT_EQ(r.series.size(), 2u);
}

TEST(TheoremD49Check, ViolatedByThePrintedSign) {
  const auto printed = [](const sr::Problem& p, const Vector& x0, const Vector& x_star) {
    sr::ApproximateNewtonOptions options;
    options.stop.x_star = x_star;
    options.stop.max_iterations = 5;
    options.printed_sign = true;
    return sr::approximate_newton(p, sr::LossKind::kFull, x0, options);
  };
  const CheckResult r = check_theorem_d49(newton_instances(1, 2), printed);
  EXPECT_EQ(r.outcome, Outcome::violated);
  ASSERT_TRUE(r.counterexample.has_value());
}

TEST(ErratumD44Check, PrintedFailsCorrectedPasses) {
  const auto corrected = [](const sr::Problem& p, const Vector& x) { return sr::gradient(p, sr::LossKind::kExp, x); };
  const std::vector<sr::Instance> instances = gradient_instances(2, 1);
  const CheckResult r = check_erratum_d44_gradient(instances, 4, 1, sr::printed_lemma_d44_gradient, corrected);
  EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
  EXPECT_GT(r.hypotheses_held, 0);
  // A "corrected" form that is the printed one, and a "printed" form that is correct: both fail.
  EXPECT_EQ(check_erratum_d44_gradient(instances, 4, 1, sr::printed_lemma_d44_gradient,
                                       sr::printed_lemma_d44_gradient).outcome,
            Outcome::violated);
  EXPECT_EQ(check_erratum_d44_gradient(instances, 4, 1, corrected, corrected).outcome, Outcome::violated);
}

TEST(ErratumAlg4Check, PrintedAscendsCorrectedConverges) {
  const std::vector<sr::Instance> instances = update_instances(1, 1);
  const CheckResult r =
      check_erratum_alg4_sign(instances, sr::printed_algorithm4_update, sr::corrected_algorithm4_update);
  EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
  EXPECT_GT(measurement(r, "printed_min_loss_increase"), 0);
  const CheckResult swapped =
      check_erratum_alg4_sign(instances, sr::corrected_algorithm4_update, sr::printed_algorithm4_update);
  EXPECT_EQ(swapped.outcome, Outcome::violated);
  ASSERT_TRUE(swapped.counterexample.has_value());
}

}  // namespace
}  // namespace subevict::proofs_checks
