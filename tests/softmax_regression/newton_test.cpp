// Tests softmax_regression/newton.hpp and gradient_descent.hpp: exact Newton converges
// quadratically to |g| <= 1e-10 and agrees with gradient descent, an independent optimiser.
#include <gtest/gtest.h>

#include <cmath>

#include "core/tolerance.hpp"
#include "softmax_regression/gradient_descent.hpp"
#include "softmax_regression/instances.hpp"
#include "softmax_regression/newton.hpp"

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
