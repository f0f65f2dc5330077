// Tests softmax_regression/newton.hpp, gradient_descent.hpp and the line search of solver.hpp:
// exact Newton converges quadratically to |g| <= 1e-10 and agrees with gradient descent, an
// independent optimiser; from a far start the line searches act, are needed, and reach x*.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "core/tolerance.hpp"
#include "softmax_regression/gradient_descent.hpp"
#include "softmax_regression/instances.hpp"
#include "softmax_regression/newton.hpp"
#include "tests/softmax_regression/test_support.hpp"

namespace subevict::softmax_regression {
namespace {

// Two minimisers found by different methods to |g| <= 1e-10 on a problem with lambda_min >= l = 1
// are within |g| / l of each other.
constexpr double kSameMinimiser = 1e-9;
// The quadratic-convergence check reads errors above this floor only (below it, rounding in the
// gradient dominates the error).
constexpr double kErrorFloor = 1e-12;

Instance test_instance(LossKind kind, Violation violation = Violation::kFarStart) {
  InstanceSpec spec;
  spec.n = 300;
  spec.d = 12;
  spec.norm_A = 3;
  spec.parameters.R = 1;
  spec.seed = 11 + std::uint64_t(kind);
  spec.violation = violation;  // start away from x* so that several steps are needed
  return make_instance(spec);
}

TEST(Newton, ConvergesQuadraticallyToTinyGradient) {
  // A weaker regulariser and a start at distance ~2 leave several steps in the quadratic phase
  // (with the w condition, L is so close to quadratic that Newton lands below 1e-8 at once).
  for (LossKind kind : {LossKind::kFull, LossKind::kRescaled}) {
    Instance inst = test_instance(kind, Violation::kWeakW);
    inst.x0[0] = 2;
    NewtonOptions options;
    options.stop.gradient_tolerance = 1e-10;
    const Summary s = newton(inst.problem, kind, inst.x0, options);
    ASSERT_EQ(s.status, Status::kConverged) << s.message;
    EXPECT_LE(s.final_gradient_norm, 1e-10);
    // Errors against the final iterate: in the quadratic phase (full steps, error < 0.1) the
    // number of correct digits at least roughly doubles: -log e_{t+1} >= 1.6 (-log e_t).
    int checked = 0;
    std::vector<double> err;
    NewtonOptions again = options;
    again.stop.x_star = s.x;
    const Summary traced = newton(inst.problem, kind, inst.x0, again);
    for (const IterationRecord& r : traced.trace) err.push_back(r.distance_to_x_star);
    for (std::size_t t = 0; t + 1 < err.size(); ++t) {
      if (err[t] < 0.1 && err[t + 1] > kErrorFloor && traced.trace[t].step_size == 1) {
        EXPECT_GE(-std::log10(err[t + 1]), 1.6 * -std::log10(err[t])) << "step " << t;
        ++checked;
      }
    }
    EXPECT_GE(checked, 1) << to_string(kind);
  }
}

TEST(Newton, AgreesWithGradientDescent) {
  for (LossKind kind : {LossKind::kFull, LossKind::kDls, LossKind::kRescaled}) {
    const Instance inst = test_instance(kind, Violation::kNone);
    const Summary n = newton(inst.problem, kind, inst.x0);
    GradientDescentOptions gd;
    gd.stop.gradient_tolerance = 1e-10;
    const Summary g = gradient_descent(inst.problem, kind, inst.x0, gd);
    ASSERT_EQ(n.status, Status::kConverged) << to_string(kind) << ": " << n.message;
    ASSERT_EQ(g.status, Status::kConverged) << to_string(kind) << ": " << g.message;
    EXPECT_LE((n.x - g.x).norm(), kSameMinimiser) << to_string(kind);
    EXPECT_GT(g.iterations(), n.iterations());
  }
}

// The rounding level of a loss value relative to it (armijo_step accepts a trial within it when the
// gradient norm decreases).
constexpr double kLossRounding = 4 * std::numeric_limits<double>::epsilon();

// Two minimisers found to |grad| <= tol on a problem with lambda_min(Hessian) >= lambda near x*
// are within 2 tol / lambda of each other.
double same_minimiser(double tol, const Problem& p, const Vector& x) {
  return 2 * tol / Eigen::SelfAdjointEigenSolver<Matrix>(hessian(p, LossKind::kFull, x)).eigenvalues()[0];
}

TEST(Newton, LineSearchRescuesAFullStepThatIncreasesTheLoss) {
  const Instance inst = testing::far_start_instance();
  const Problem& p = inst.problem;
  const double L0 = loss(p, LossKind::kFull, inst.x0);
  // The full Newton step from x0 raises the loss (34.7 -> 122).
  const Vector full = inst.x0 - hessian(p, LossKind::kFull, inst.x0).llt().solve(gradient(p, LossKind::kFull, inst.x0));
  ASSERT_GT(loss(p, LossKind::kFull, full), L0 + 1);
  // With the line search: the first step is shortened, the loss decreases at every step.
  const Summary s = newton(p, LossKind::kFull, inst.x0);
  ASSERT_EQ(s.status, Status::kConverged) << s.message;
  EXPECT_LT(s.trace[0].step_size, 1);
  EXPECT_GT(s.trace[0].backtracks, 0);
  EXPECT_EQ(s.trace[0].step_size, std::pow(0.5, s.trace[0].backtracks));
  for (std::size_t t = 0; t + 1 < s.trace.size(); ++t) {
    EXPECT_LE(s.trace[t + 1].loss, s.trace[t].loss + kLossRounding * s.trace[t].loss);
  }
  // It reaches the minimiser that gradient descent (an independent optimiser) finds.
  GradientDescentOptions gd;
  gd.stop.gradient_tolerance = 1e-10;
  const Summary g = gradient_descent(p, LossKind::kFull, inst.x0, gd);
  ASSERT_EQ(g.status, Status::kConverged) << g.message;
  EXPECT_LE((s.x - g.x).norm(), same_minimiser(1e-10, p, s.x));
  // Without it the first step is the full step, and the loss goes up.
  NewtonOptions pure;
  pure.line_search = false;
  const Summary u = newton(p, LossKind::kFull, inst.x0, pure);
  ASSERT_GE(u.trace.size(), 2u);
  EXPECT_EQ(u.trace[0].step_size, 1);
  EXPECT_EQ(u.trace[0].backtracks, 0);
  EXPECT_GT(u.trace[1].loss, L0 + 1);
}

TEST(GradientDescent, BacktrackingIsNeededAndReachesTheMinimiser) {
  const Instance inst = testing::far_start_instance();
  const Problem& p = inst.problem;
  const Summary g = gradient_descent(p, LossKind::kFull, inst.x0);
  ASSERT_EQ(g.status, Status::kConverged) << g.message;
  // The search backtracked (the trial 2 s_{t-1} was rejected) and the loss never increased.
  int backtracks = 0;
  double largest_step = 0;
  for (std::size_t t = 0; t + 1 < g.trace.size(); ++t) {
    backtracks += g.trace[t].backtracks;
    largest_step = std::max(largest_step, g.trace[t].step_size);
    EXPECT_LE(g.trace[t + 1].loss, g.trace[t].loss + kLossRounding * g.trace[t].loss);
  }
  EXPECT_GT(backtracks, 0);
  // The minimiser of exact Newton.
  const Summary n = newton(p, LossKind::kFull, inst.x0);
  ASSERT_EQ(n.status, Status::kConverged);
  EXPECT_LE((g.x - n.x).norm(), same_minimiser(1e-10, p, n.x));
  // Needed: a fixed step of twice the largest accepted one (the trial the search rejected) above
  // 2 / lambda_max(Hessian(x*)) raises the loss along the way and never converges.
  const double step = 2 * largest_step;
  ASSERT_GT(step, 2 / Eigen::SelfAdjointEigenSolver<Matrix>(hessian(p, LossKind::kFull, n.x)).eigenvalues()[2]);
  Vector x = inst.x0;
  bool increased = false;
  for (int k = 0; k < 200 && std::isfinite(loss(p, LossKind::kFull, x)); ++k) {
    const Vector next = x - step * gradient(p, LossKind::kFull, x);
    increased = increased || !(loss(p, LossKind::kFull, next) <= loss(p, LossKind::kFull, x));
    x = next;
  }
  EXPECT_TRUE(increased);
  EXPECT_FALSE((x - n.x).norm() < 1e-3);
}

TEST(ArmijoStep, RejectsAnAscentDirection) {
  // Along +grad no trial decreases L (the line search's failure, Status::kLineSearchFailed);
  // along -grad the first trial that satisfies the Armijo condition is returned with its index.
  const Instance inst = testing::far_start_instance();
  const Problem& p = inst.problem;
  const Vector g = gradient(p, LossKind::kFull, inst.x0);
  const double L0 = loss(p, LossKind::kFull, inst.x0);
  EXPECT_FALSE(armijo_step(p, LossKind::kFull, inst.x0, L0, g, g).has_value());
  const Vector down = -100 * g;  // too long a trial: L(x0 - 100 g) > L(x0)
  ASSERT_GT(loss(p, LossKind::kFull, inst.x0 + down), L0);
  const std::optional<LineSearchStep> step = armijo_step(p, LossKind::kFull, inst.x0, L0, g, down);
  ASSERT_TRUE(step.has_value());
  EXPECT_GT(step->backtracks, 0);
  EXPECT_EQ(step->t, std::pow(0.5, step->backtracks));
  // The accepted trial satisfies the Armijo condition and the one before it does not.
  const double slope = g.dot(down);
  EXPECT_LE(loss(p, LossKind::kFull, inst.x0 + step->t * down), L0 + 1e-4 * step->t * slope);
  EXPECT_GT(loss(p, LossKind::kFull, inst.x0 + 2 * step->t * down), L0 + 1e-4 * 2 * step->t * slope);
}

TEST(Newton, PureStepSolvesWithTheDenseHessian) {
  // The step takes the gradient and the rank-two terms from one fused pass over A; here the
  // Hessian comes from the explicit n x n inner matrix B (b_matrix's product form) + diag(u + w^2).
  const Instance inst = test_instance(LossKind::kFull);
  const Problem& p = inst.problem;
  const Vector x0 = Vector::LinSpaced(p.d(), -0.3, 0.2);
  const Vector u = (p.A * x0).array().exp();
  const Matrix inner = b_matrix(u / u.sum(), p.b).full +
                       Matrix((u + Vector(p.w.array().square())).asDiagonal());
  const Matrix H = p.A.transpose() * inner * p.A;
  const Vector expected = x0 - H.llt().solve(gradient(p, LossKind::kFull, x0));
  NewtonOptions pure;
  pure.line_search = false;
  pure.stop.max_iterations = 1;
  pure.stop.gradient_tolerance = 0;
  const Summary s = newton(p, LossKind::kFull, x0, pure);
  ASSERT_EQ(s.iterations(), 1);
  EXPECT_LE((s.x - expected).norm(), 1e-12 * expected.norm());
}

TEST(Newton, TraceRecordsEveryIterate) {
  const Instance inst = test_instance(LossKind::kFull);
  NewtonOptions options;
  options.stop.max_iterations = 2;
  options.stop.gradient_tolerance = 0;
  const Summary s = newton(inst.problem, LossKind::kFull, inst.x0, options);
  EXPECT_EQ(s.status, Status::kMaxIterations);
  ASSERT_EQ(s.trace.size(), 3u);
  EXPECT_TRUE(std::isnan(s.trace.back().step_length));
  EXPECT_TRUE(std::isnan(s.trace[0].distance_to_x_star));
  EXPECT_LT(s.trace[2].loss, s.trace[0].loss);
}

}  // namespace
}  // namespace subevict::softmax_regression
