#include "core/rotary.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace subevict {
namespace {

// Double-precision rounding of a few dozen cos/sin terms and products.
constexpr double kDoubleTolerance = 1e-12;

TEST(Rotary, RotatesEachPairOfTheFirstDimsByItsOwnAngle) {
  // head_dim 6, dims 4: pairs (0, 2) at θ_0 = 1 and (1, 3) at θ_1 = 100^(−1/2) = 0.1; 4, 5 pass.
  const Rotary rotary{100.0, 4};
  const double p = 3.0;
  const Eigen::MatrixXd r = rotation(rotary, 6, p);
  Eigen::VectorXd x(6);
  x << 1, 2, 3, 4, 5, 6;
  const Eigen::VectorXd y = r * x;
  const double c0 = std::cos(p), s0 = std::sin(p), c1 = std::cos(0.1 * p), s1 = std::sin(0.1 * p);
  EXPECT_NEAR(y(0), 1 * c0 - 3 * s0, kDoubleTolerance);
  EXPECT_NEAR(y(2), 3 * c0 + 1 * s0, kDoubleTolerance);
  EXPECT_NEAR(y(1), 2 * c1 - 4 * s1, kDoubleTolerance);
  EXPECT_NEAR(y(3), 4 * c1 + 2 * s1, kDoubleTolerance);
  EXPECT_EQ(y(4), 5.0);
  EXPECT_EQ(y(5), 6.0);
}

RC_GTEST_PROP(Rotary, RotationsAreOrthogonalAndCompose, ()) {
  const int half = *rc::gen::inRange(1, 9);
  const int dims = 2 * half;
  const int head_dim = dims + *rc::gen::inRange(0, 4);
  const Rotary rotary{1.5 + double(*rc::gen::inRange(0, 1000000)), dims};
  const double a = *rc::gen::inRange(0, 5000), b = *rc::gen::inRange(0, 5000);
  const Eigen::MatrixXd ra = rotation(rotary, head_dim, a), rb = rotation(rotary, head_dim, b);
  const Eigen::MatrixXd identity = Eigen::MatrixXd::Identity(head_dim, head_dim);
  RC_ASSERT((ra.transpose() * ra - identity).cwiseAbs().maxCoeff() < kDoubleTolerance);
  // R(a) R(b) = R(a + b): angles add (up to the rounding of angles of size ~1e4).
  RC_ASSERT((ra * rb - rotation(rotary, head_dim, a + b)).cwiseAbs().maxCoeff() < 1e-9);
  RC_ASSERT((rotation(rotary, head_dim, 0.0) - identity).cwiseAbs().maxCoeff() == 0.0);
}

RC_GTEST_PROP(Rotary, AverageRotationIsTheMeanOfTheRotations, ()) {
  const int dims = 2 * *rc::gen::inRange(1, 5);
  const int head_dim = dims + *rc::gen::inRange(0, 3);
  const Rotary rotary{10.0 + double(*rc::gen::inRange(0, 100000)), dims};
  const long first = *rc::gen::inRange(0, 3000);
  const int count = *rc::gen::inRange(1, 40);
  Eigen::MatrixXd mean = Eigen::MatrixXd::Zero(head_dim, head_dim);
  for (int p = 0; p < count; ++p) mean += rotation(rotary, head_dim, double(first + p));
  mean /= double(count);
  RC_ASSERT((average_rotation(rotary, head_dim, first, count) - mean).cwiseAbs().maxCoeff() < 1e-12);
}

TEST(Rotary, AverageOverNoPositionIsTheIdentity) {
  EXPECT_EQ(average_rotation(Rotary{10000.0, 4}, 4, 17, 0), Eigen::MatrixXd::Identity(4, 4));
}

TEST(Rotary, ValidateNamesTheBadParameter) {
  EXPECT_NO_THROW((Rotary{10000.0, 64}.validate(64)));
  EXPECT_NO_THROW((Rotary{1.0000001, 2}.validate(3)));
  for (const Rotary bad : {Rotary{1.0, 4}, Rotary{0.5, 4}, Rotary{std::nan(""), 4}, Rotary{INFINITY, 4},
                           Rotary{10000.0, 0}, Rotary{10000.0, 3}, Rotary{10000.0, 6}}) {
    EXPECT_THROW(bad.validate(4), std::invalid_argument) << bad.base << " " << bad.dims;
  }
}

}  // namespace
}  // namespace subevict
