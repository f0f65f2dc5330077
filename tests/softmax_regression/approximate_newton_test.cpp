// Tests softmax_regression/approximate_newton.hpp: the (1 +- eps1) spectral condition, linear
// convergence with a contraction consistent with the measured spectrum, and the same minimiser
// as exact Newton.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "softmax_regression/approximate_newton.hpp"
#include "softmax_regression/instances.hpp"
#include "softmax_regression/newton.hpp"
#include "tests/softmax_regression/test_support.hpp"

namespace subevict::softmax_regression {
namespace {

constexpr double kSameMinimiser = 1e-9;  // two solutions with |g| <= 1e-10 and lambda_min >= 1

Instance test_instance(Index n, Index d, std::uint64_t seed) {
  InstanceSpec spec;
  spec.n = n;
  spec.d = d;
  spec.norm_A = 3;
  spec.parameters.R = 1;
  spec.seed = seed;
  spec.violation = Violation::kFarStart;
  return make_instance(spec);
}

TEST(ApproximateNewton, SampleSizeFollowsTheRule) {
  // C * mass * ln(d T / delta) / eps^2 = 2 * 10 * ln(10 * 100 / 0.01) / 0.25.
  EXPECT_EQ(approximate_newton_sample_size(0.5, 0.01, 100, 10, 10.0, 2.0),
            Index(std::ceil(2 * 10 * std::log(1e5) / 0.25)));
  EXPECT_THROW(approximate_newton_sample_size(0, 0.01, 100, 10, 10, 1), std::invalid_argument);
  EXPECT_THROW(approximate_newton_sample_size(0.5, 1, 100, 10, 10, 1), std::invalid_argument);
}

TEST(ApproximateNewton, MeetsTheSpectralConditionAndContractsLinearly) {
  for (LeverageMethod method : {LeverageMethod::kExact, LeverageMethod::kSketched}) {
    const Instance inst = test_instance(4000, 8, 3);
    const Summary exact = newton(inst.problem, LossKind::kFull, inst.x0);
    ASSERT_EQ(exact.status, Status::kConverged);
    ApproximateNewtonOptions options;
    options.epsilon1 = 0.5;
    options.sample_constant = 1;
    options.leverage = method;
    options.check_spectral = true;
    options.stop.x_star = exact.x;
    options.stop.max_iterations = 60;
    const Summary s = approximate_newton(inst.problem, LossKind::kFull, inst.x0, options);
    ASSERT_EQ(s.status, Status::kConverged) << s.message;
    EXPECT_LE((s.x - exact.x).norm(), kSameMinimiser);
    double worst_spectral = 0;
    std::vector<double> ratios;
    for (std::size_t t = 0; t + 1 < s.trace.size(); ++t) {
      const IterationRecord& r = s.trace[t];
      EXPECT_LT(r.sampled_rows, inst.problem.n());
      // (1 +- eps1) spectral accuracy of the sampled part.
      EXPECT_GE(r.spectral_min, 1 - options.epsilon1) << "iteration " << t;
      EXPECT_LE(r.spectral_max, 1 + options.epsilon1) << "iteration " << t;
      // Contraction predicted by the spectrum: |1 - 1/lambda| over the measured range.
      worst_spectral = std::max({worst_spectral, std::fabs(1 - 1 / r.spectral_min),
                                 std::fabs(1 - 1 / r.spectral_max)});
      const double next = s.trace[t + 1].distance_to_x_star;
      if (next > 1e-12) ratios.push_back(next / r.distance_to_x_star);
    }
    ASSERT_GE(ratios.size(), 3u);
    // Linear, not quadratic: the per-step ratio stays bounded away from 0 in the tail, and below
    // the spectral prediction (times a factor for the Euclidean vs Hessian norm: sqrt(cond) <= 2
    // on these instances, whose w^2 spans a factor 1.5 and sigma(A) a factor < 1.2).
    const double tail = ratios[ratios.size() - 2];
    EXPECT_LT(tail, 2 * worst_spectral);
    EXPECT_GT(tail, 1e-4);
  }
}

// An instance satisfying Lemma D.47's w condition with no margin (w_i^2 = 20 + l / sigma_min^2):
// the largest gap between the literal H~ and the Hessian the hypotheses allow.
Instance w_condition_instance(Index n, Index d, std::uint64_t seed) {
  InstanceSpec spec;
  spec.n = n;
  spec.d = d;
  spec.parameters.R = 10;
  spec.w_margin = 0;
  spec.seed = seed;
  return make_instance(spec);
}

// Options that sample every row (s >= n), so that D~ = D and the step is deterministic.
ApproximateNewtonOptions all_rows(Algorithm4Form form) {
  ApproximateNewtonOptions options;
  options.form = form;
  options.sample_constant = 1e9;
  return options;
}

// Algorithm 4's inner matrices from the explicit n x n B(x) (b_matrix: the product form, not the
// split that inner_hessian uses): the literal D = B_diag + W^2 with B_diag = B - B_rank, and the
// whole inner Hessian B + diag(u) + W^2.
struct DenseInner {
  Vector literal_diagonal;
  Matrix full;
};
DenseInner dense_inner(const Problem& p, const Vector& x) {
  const Vector z = p.A * x;
  const Vector u = z.array().exp();
  const BMatrix B = b_matrix(u / u.sum(), p.b);
  const Matrix B_diag = B.full - B.rank;
  EXPECT_LE((B_diag - Matrix(B_diag.diagonal().asDiagonal())).cwiseAbs().maxCoeff(), 1e-14);
  const Vector w2 = p.w.array().square();
  return {B_diag.diagonal() + w2, B.full + Matrix((u + w2).asDiagonal())};
}

TEST(ApproximateNewton, LiteralStepUsesExactlyBDiagPlusWSquared) {
  const Instance inst = w_condition_instance(30, 4, 2);
  Vector x0 = Vector::LinSpaced(4, -0.5, 0.7);
  const Vector g = gradient(inst.problem, LossKind::kFull, x0);
  const DenseInner dense = dense_inner(inst.problem, x0);
  const Matrix& A = inst.problem.A;
  const Matrix literal_H = A.transpose() * dense.literal_diagonal.asDiagonal() * A;
  const Matrix full_H = A.transpose() * dense.full * A;
  for (auto [form, H] : {std::pair{Algorithm4Form::kLiteral, literal_H},
                         std::pair{Algorithm4Form::kFoldedDiagonalExactLowRank, full_H}}) {
    ApproximateNewtonOptions options = all_rows(form);
    options.stop.max_iterations = 1;
    options.stop.gradient_tolerance = 0;
    const Summary s = approximate_newton(inst.problem, LossKind::kFull, x0, options);
    ASSERT_EQ(s.trace.size(), 2u);
    EXPECT_EQ(s.trace[0].sampled_rows, inst.problem.n());
    // x1 = x0 - H~^{-1} g, i.e. H~ (x0 - x1) = g.
    const Vector expected = x0 - H.llt().solve(g);
    EXPECT_LE((s.x - expected).norm(), 1e-12 * expected.norm()) << to_string(form);
  }
  // The two forms differ (by diag(u) and the rank-two part), so the test tells them apart.
  EXPECT_GT((literal_H - full_H).norm(), 0.01 * full_H.norm());
}

TEST(ApproximateNewton, LiteralContractsAtTheRatePredictedByItsHessianGap) {
  // With every row sampled the literal iteration is x - H~^{-1} grad L(x), whose error contracts
  // asymptotically by rho = max_i |1 - lambda_i(H~^{-1} H)| at x* (lambda real: H~^{-1} H is similar
  // to a symmetric matrix). H~ and H from the dense B(x*).
  const Instance inst = w_condition_instance(300, 5, 4);
  const Summary exact = newton(inst.problem, LossKind::kFull, inst.x0);
  ASSERT_EQ(exact.status, Status::kConverged);
  const DenseInner dense = dense_inner(inst.problem, exact.x);
  const Matrix& A = inst.problem.A;
  const Matrix literal_H = A.transpose() * dense.literal_diagonal.asDiagonal() * A;
  const Matrix full_H = A.transpose() * dense.full * A;
  const Eigen::GeneralizedSelfAdjointEigenSolver<Matrix> eig(full_H, literal_H, Eigen::EigenvaluesOnly);
  const double rho = std::max(std::fabs(1 - eig.eigenvalues().minCoeff()),
                              std::fabs(1 - eig.eigenvalues().maxCoeff()));
  ASSERT_GT(rho, 0.01);
  ApproximateNewtonOptions options = all_rows(Algorithm4Form::kLiteral);
  options.stop.x_star = exact.x;
  options.stop.max_iterations = 60;
  const Summary s = approximate_newton(inst.problem, LossKind::kFull, inst.x0, options);
  ASSERT_EQ(s.status, Status::kConverged) << s.message;
  EXPECT_LE((s.x - exact.x).norm(), kSameMinimiser);
  std::vector<double> ratios;
  for (std::size_t t = 0; t + 1 < s.trace.size(); ++t) {
    if (s.trace[t + 1].distance_to_x_star > 1e-10) {
      ratios.push_back(s.trace[t + 1].distance_to_x_star / s.trace[t].distance_to_x_star);
    }
  }
  ASSERT_GE(ratios.size(), 3u);
  for (double ratio : ratios) EXPECT_LT(ratio, 1);
  EXPECT_NEAR(ratios.back(), rho, 0.05 * rho);
}

TEST(ApproximateNewton, LiteralFormNeedsTheFullOrDlsLoss) {
  const Instance inst = w_condition_instance(30, 4, 2);
  ApproximateNewtonOptions options;
  options.form = Algorithm4Form::kLiteral;
  EXPECT_THROW(approximate_newton(inst.problem, LossKind::kRescaled, inst.x0, options),
               std::invalid_argument);
  EXPECT_NO_THROW(approximate_newton(inst.problem, LossKind::kDls, inst.x0, options));
}

TEST(ApproximateNewton, HasNoLineSearchSoAFarStartCanIncreaseTheLoss) {
  // Algorithm 4 is local (Theorem D.49 starts in a neighbourhood of x*): every step is the full
  // step. From testing::far_start_instance() the variant with every row sampled takes exactly the
  // Newton step, which raises the loss.
  const Instance inst = testing::far_start_instance();
  ApproximateNewtonOptions options = all_rows(Algorithm4Form::kFoldedDiagonalExactLowRank);
  options.stop.max_iterations = 1;
  const Summary s = approximate_newton(inst.problem, LossKind::kFull, inst.x0, options);
  ASSERT_EQ(s.trace.size(), 2u);
  EXPECT_EQ(s.trace[0].step_size, 1);
  EXPECT_GT(s.trace[1].loss, s.trace[0].loss);
}

TEST(ApproximateNewton, SampleIsDeterministicInTheSeed) {
  const Instance inst = test_instance(3000, 6, 5);
  ApproximateNewtonOptions options;
  options.stop.max_iterations = 3;
  options.stop.gradient_tolerance = 0;
  options.leverage = LeverageMethod::kSketched;
  const Summary a = approximate_newton(inst.problem, LossKind::kFull, inst.x0, options);
  const Summary b = approximate_newton(inst.problem, LossKind::kFull, inst.x0, options);
  EXPECT_EQ(a.x, b.x);
  options.seed = 1;
  const Summary c = approximate_newton(inst.problem, LossKind::kFull, inst.x0, options);
  EXPECT_NE(a.x, c.x);
}

}  // namespace
}  // namespace subevict::softmax_regression
