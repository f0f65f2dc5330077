// Tests softmax_regression/finite_difference.hpp on functions with closed-form derivatives.
#include <gtest/gtest.h>

#include <cmath>

#include "core/tolerance.hpp"
#include "softmax_regression/finite_difference.hpp"

namespace subevict::softmax_regression {
namespace {

const double kFd = Tol<double>::grad();

// F(x) = sin(x0) exp(x1) + x0^3: gradient and Hessian in closed form.
double F(const Vector& x) { return std::sin(x[0]) * std::exp(x[1]) + x[0] * x[0] * x[0]; }
Vector grad_F(const Vector& x) {
  return Vector{{std::cos(x[0]) * std::exp(x[1]) + 3 * x[0] * x[0], std::sin(x[0]) * std::exp(x[1])}};
}

TEST(FiniteDifference, MatchesClosedFormGradientAndHessian) {
  const Vector x{{0.7, -0.3}};
  EXPECT_TRUE(check_gradient(F, grad_F(x), x, kFd).passed);
  const double e = std::exp(x[1]);
  const Matrix H{{-std::sin(x[0]) * e + 6 * x[0], std::cos(x[0]) * e},
                 {std::cos(x[0]) * e, std::sin(x[0]) * e}};
  EXPECT_TRUE(check_hessian(grad_F, H, x, kFd).passed);
}

TEST(FiniteDifference, RejectsAWrongDerivativeAndNamesTheWorstEntry) {
  const Vector x{{0.7, -0.3}};
  Vector wrong = grad_F(x);
  wrong[1] += 1e-5;
  const DerivativeCheck c = check_gradient(F, wrong, x, kFd);
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.worst_row, 1);
  EXPECT_NEAR(c.max_abs_error, 1e-5, 1e-8);
}

TEST(FiniteDifference, StepScalesWithTheCoordinate) {
  EXPECT_DOUBLE_EQ(finite_difference_step(0.5), finite_difference_step(-1.0));
  EXPECT_DOUBLE_EQ(finite_difference_step(1e3), 1e3 * finite_difference_step(1.0));
}

}  // namespace
}  // namespace subevict::softmax_regression
