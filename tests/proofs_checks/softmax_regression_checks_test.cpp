// Tests proofs_checks/softmax_regression_checks.hpp: each check holds with the library's
// implementation and reports a violation (or unmet hypotheses) for a broken one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/tolerance.hpp"
#include "proofs_checks/softmax_regression_checks.hpp"
#include "softmax_regression/approximate_newton.hpp"
#include "softmax_regression/errata.hpp"
#include "softmax_regression/hypotheses.hpp"
#include "softmax_regression/lemma_checks.hpp"
#include "softmax_regression/loss.hpp"
#include "softmax_regression/newton.hpp"

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

TEST(LemmaD47Check, TheSandwichIsVacuousByTheMeasuredLooseness) {
  // The sandwich 0.9 (B + W^2) <= W^2 <= 1.1 (B + W^2) holds once min w^2 >= max(9 lambda_max(B),
  // -11 lambda_min(B)); its hypothesis asks 200 exp(R^2) + l / sigma^2. Recomputed here at the
  // points the check samples (ball points 0..2 and x0).
  const sr::Instance inst = instance(10, 1);
  const CheckResult r = check_lemma_d47({inst}, 3, 4, library_hessian);
  double need = 0;
  for (int k = 0; k < 4; ++k) {
    const Vector x = k < 3 ? sr::ball_point(inst.problem.d(), inst.parameters.R, 4, std::uint64_t(k)) : inst.x0;
    const Matrix B = sr::b_matrix(sr::evaluate_point(inst.problem, x).f, inst.problem.b).full;
    const Vector ev = Eigen::SelfAdjointEigenSolver<Matrix>(0.5 * (B + B.transpose())).eigenvalues();
    need = std::max({need, 9.0 * ev[ev.size() - 1], -11.0 * ev[0]});
  }
  ASSERT_GT(need, 0.0);
  const double sigma = sr::singular_value_range(inst.problem.A).min;
  const double required = 200.0 * std::exp(100.0) + inst.parameters.l / (sigma * sigma);
  EXPECT_NEAR(measurement(r, "sandwich_looseness"), std::log(required) - std::log(need), 1e-9);
  EXPECT_GT(measurement(r, "sandwich_looseness"), 90.0);  // e-folds: no instance meeting it could fail
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

TEST(LemmaD47Check, TightAtTheThresholdOfTheLTerm) {
  // w^2 = 20 + l / sigma^2 with every singular value sigma = 0.01: lambda_min exceeds l by about
  // 20 sigma^2 = 0.002 only, so a conclusion level raised by 1% turns the check red.
  const CheckResult at = check_lemma_d47({lemma_d47_threshold_instance(1)}, 10, 4, library_hessian);
  EXPECT_EQ(at.outcome, Outcome::held) << at.key_number;
  EXPECT_GE(at.worst_slack, 0);
  EXPECT_LT(at.worst_slack, 0.01);
  // 2% less of the l / sigma^2 term: outside the hypothesis and the bound fails there, so a check
  // whose w condition asked for less than l / sigma^2 would count this instance and be violated.
  const CheckResult below = check_lemma_d47({lemma_d47_threshold_instance(0.98)}, 10, 4, library_hessian);
  EXPECT_EQ(below.outcome, Outcome::hypotheses_not_met);
  EXPECT_LT(measurement(below, "outside_hypotheses_min_margin"), 0);
}

TEST(LemmaD47Check, ConstantTwentyIsLooseDownToTheInfimumOfLambdaMinB) {
  // At x0 of the constant instance lambda_min(Hessian) = l + 100 (c - 0.2404): the bound fails for
  // c = 0.2 and holds for c = 0.25, both far below the printed 20 (outside the hypothesis).
  const CheckResult fails = check_lemma_d47({lemma_d47_constant_instance(0.2)}, 5, 4, library_hessian);
  EXPECT_EQ(fails.outcome, Outcome::hypotheses_not_met);
  EXPECT_NEAR(measurement(fails, "outside_hypotheses_min_margin"), 100 * (0.2 - 0.2404088069), 1e-6);
  const CheckResult holds = check_lemma_d47({lemma_d47_constant_instance(0.25)}, 5, 4, library_hessian);
  EXPECT_EQ(holds.outcome, Outcome::hypotheses_not_met);
  EXPECT_NEAR(measurement(holds, "outside_hypotheses_min_margin"), 100 * (0.25 - 0.2404088069), 1e-6);
}

TEST(LemmaD48Check, RatioAndLoosenessMatchTheClosedFormOnTheTightInstances) {
  // d = 1, n equal rows R / sqrt(n): the Lipschitz constant of the Hessian on |x| <= R is
  // K = R^3 exp(R^2 / sqrt(n)) / sqrt(n) (sup of its derivative, at x = R). The sampled pairs reach
  // it to 1%, and the looseness is ln(n^2 exp(40 R^2)) - ln K: a changed exponent 40 -> 39 moves it by
  // R^2 = 0.04, a dropped n^2 (n = 2) by ln 2.
  constexpr double R = 0.2;
  for (const sr::Index n : {1, 2}) {
    const double rn = std::sqrt(double(n));
    const double K = R * R * R * std::exp(R * R / rn) / rn;
    const CheckResult r = check_lemma_d48({lemma_d48_tight_instance(n, R)}, 40, 2, library_hessian);
    EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
    const double ratio = measurement(r, "max_ratio");
    EXPECT_LE(ratio, K * (1 + 1e-9)) << "n = " << n;
    EXPECT_GE(ratio, 0.99 * K) << "n = " << n;
    EXPECT_NEAR(r.worst_slack, 2 * std::log(double(n)) + 40 * R * R - std::log(K), 0.015) << "n = " << n;
  }
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

const SolverFunction kLiteral = library_algorithm4(sr::Algorithm4Form::kLiteral);
const SolverFunction kVariant = library_algorithm4(sr::Algorithm4Form::kFoldedDiagonalExactLowRank);

sr::Instance weak_w_newton_instance() {
  sr::InstanceSpec spec;
  spec.n = 2000;
  spec.d = 6;
  spec.parameters.R = 10;
  spec.seed = 2;
  spec.violation = sr::Violation::kWeakW;
  return sr::make_instance(spec);
}

TEST(TheoremD49Check, LiteralAlgorithmHeldAndVariantReported) {
  const CheckResult r = check_theorem_d49(newton_instances(1, 2), kLiteral, kVariant, 10, 2);
  EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
  EXPECT_EQ(r.hypotheses_held, 1);
  EXPECT_LT(measurement(r, "max_contraction"), 1);
  EXPECT_LE(measurement(r, "max_start_ratio"), 1);
  EXPECT_LT(measurement(r, "variant_max_contraction"), 1);
  EXPECT_EQ(measurement(r, "variant_failures"), 0);
  EXPECT_EQ(r.series.size(), 3u);
}

TEST(TheoremD49Check, ThePrintedStartConstantIsNeverMet) {
  // M = n^2 exp(40 R^2) asks for |x0 - x*| < e^-4000: the claim's hypotheses fail on every instance,
  // while the same instance meets the measured-M form.
  const CheckResult printed =
      check_theorem_d49(newton_instances(1, 2), kLiteral, nullptr, 10, 2, StartConstant::printed);
  EXPECT_EQ(printed.outcome, Outcome::hypotheses_not_met);
  EXPECT_EQ(printed.hypotheses_held, 0);
  EXPECT_GT(measurement(printed, "start_neighbourhood_gap"), 1000);  // e-folds missed
  const CheckResult measured =
      check_theorem_d49(newton_instances(1, 2), kLiteral, nullptr, 10, 2, StartConstant::measured);
  EXPECT_EQ(measured.hypotheses_held, 1);
}

TEST(TheoremD49Check, MeasuresTheLiteralNotTheVariant) {
  // On one instance the two forms take different steps, so the contraction the check reports is
  // the literal solver's (max over the run of |x_{t+1} - x*| / |x_t - x*|, recomputed here).
  const sr::Instance inst = newton_instances(1, 2).front();
  const sr::Summary exact = sr::newton(inst.problem, sr::LossKind::kFull, inst.x0);
  const auto worst_ratio = [&](const SolverFunction& solver) {
    const sr::Summary s = solver(inst.problem, inst.x0, exact.x);
    double worst = 0;
    for (std::size_t t = 0; t + 1 < s.trace.size(); ++t) {
      if (s.trace[t].distance_to_x_star > 1e-11) {
        worst = std::max(worst, s.trace[t + 1].distance_to_x_star / s.trace[t].distance_to_x_star);
      }
    }
    return worst;
  };
  const CheckResult r = check_theorem_d49({inst}, kLiteral, kVariant, 10, 2);
  ASSERT_NE(worst_ratio(kLiteral), worst_ratio(kVariant));
  EXPECT_EQ(measurement(r, "max_contraction"), worst_ratio(kLiteral));
  EXPECT_EQ(measurement(r, "variant_max_contraction"), worst_ratio(kVariant));
}

TEST(TheoremD49Check, WeakWeightsAreHypothesesNotMetAndTheLiteralAlgorithmDiverges) {
  // Without the w condition the literal H~ = A^T (B_diag + W^2) A misses L_sparse's diag(u), which
  // then dominates the Hessian: the step overshoots by a factor > 2 and the iteration diverges.
  const CheckResult r = check_theorem_d49({weak_w_newton_instance()}, kLiteral, kVariant, 10, 2);
  EXPECT_EQ(r.outcome, Outcome::hypotheses_not_met);
  EXPECT_GT(measurement(r, "outside_hypotheses_max_contraction"), 2);
  // The variant (diag(u) folded in) converges there.
  sr::Instance inst = weak_w_newton_instance();
  const sr::Summary exact = sr::newton(inst.problem, sr::LossKind::kFull, inst.x0);
  ASSERT_EQ(exact.status, sr::Status::kConverged);
  EXPECT_LE((kVariant(inst.problem, inst.x0, exact.x).x - exact.x).norm(), 1e-8);
}

TEST(TheoremD49Check, ViolatedByThePrintedSign) {
  const auto printed = [](const sr::Problem& p, const Vector& x0, const Vector& x_star) {
    sr::ApproximateNewtonOptions options;
    options.form = sr::Algorithm4Form::kLiteral;
    options.stop.x_star = x_star;
    options.stop.max_iterations = 5;
    options.printed_sign = true;
    return sr::approximate_newton(p, sr::LossKind::kFull, x0, options);
  };
  const CheckResult r = check_theorem_d49(newton_instances(1, 2), printed, kVariant, 10, 2);
  EXPECT_EQ(r.outcome, Outcome::violated);
  ASSERT_TRUE(r.counterexample.has_value());
  EXPECT_GT(measurement(r, "max_contraction"), 1);
  // The variant is reported, not judged: it still contracts.
  EXPECT_LT(measurement(r, "variant_max_contraction"), 1);
}

TEST(TheoremD49Check, ViolatedByAnOverRelaxedStep) {
  // x_{t+1} = x_t - 2.5 H~^{-1} g: every step overshoots x* (ratio about 1.5), inside the hypotheses.
  const auto over_relaxed = [](const sr::Problem& p, const Vector& x0, const Vector& x_star) {
    sr::ApproximateNewtonOptions options;
    options.form = sr::Algorithm4Form::kLiteral;
    options.stop.x_star = x_star;
    options.stop.max_iterations = 1;
    sr::Summary all;
    Vector x = x0;
    for (int t = 0;; ++t) {
      sr::IterationRecord record;
      record.iteration = t;
      record.distance_to_x_star = (x - x_star).norm();
      all.trace.push_back(record);
      if (t == 8) break;
      x += 2.5 * (sr::approximate_newton(p, sr::LossKind::kFull, x, options).x - x);
    }
    all.x = x;
    return all;
  };
  const CheckResult r = check_theorem_d49(newton_instances(1, 2), over_relaxed, nullptr, 10, 2);
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
