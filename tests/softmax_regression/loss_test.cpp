// Tests softmax_regression/loss.hpp: closed-form gradients and Hessians against finite differences
// (softmax_regression/finite_difference.hpp), the structure of B, and Hessian-vector products.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "core/input_error.hpp"
#include "core/tolerance.hpp"
#include "softmax_regression/finite_difference.hpp"
#include "softmax_regression/loss.hpp"
#include "tests/softmax_regression/test_support.hpp"

namespace subevict::softmax_regression {
namespace {

const double kFd = Tol<double>::grad();
constexpr LossKind kAll[] = {LossKind::kExp,  LossKind::kReg, LossKind::kSparse,
                             LossKind::kFull, LossKind::kDls, LossKind::kRescaled};

RC_GTEST_PROP(Loss, GradientOfEveryLossMatchesFiniteDifferences, ()) {
  const auto r = testing::random_problem();
  for (LossKind kind : kAll) {
    const DerivativeCheck c = check_gradient(
        [&](const Vector& x) { return loss(r.problem, kind, x); }, gradient(r.problem, kind, r.x),
        r.x, kFd);
    RC_ASSERT(c.passed);
  }
}

RC_GTEST_PROP(Loss, HessianOfEveryLossMatchesFiniteDifferences, ()) {
  const auto r = testing::random_problem();
  for (LossKind kind : kAll) {
    const Matrix H = hessian(r.problem, kind, r.x);
    const DerivativeCheck c = check_hessian(
        [&](const Vector& x) { return gradient(r.problem, kind, x); }, H, r.x, kFd);
    RC_ASSERT(c.passed);
    RC_ASSERT((H - H.transpose()).cwiseAbs().maxCoeff() <=
              Tol<double>::kValue * std::max(1.0, H.cwiseAbs().maxCoeff()));
  }
}

RC_GTEST_PROP(Loss, HessianVectorProductEqualsTheFormedHessian, ()) {
  const auto r = testing::random_problem();
  Vector v(r.x.size());
  for (Index j = 0; j < v.size(); ++j) v[j] = testing::draw(-1, 1);
  for (LossKind kind : kAll) {
    const Vector hv = hessian(r.problem, kind, r.x) * v;
    const Vector direct = hessian_vector_product(r.problem, kind, r.x, v);
    const double scale = std::max(1.0, hv.cwiseAbs().maxCoeff());
    RC_ASSERT((hv - direct).cwiseAbs().maxCoeff() <= Tol<double>::sum(r.problem.n()) * 16 * scale);
  }
}

RC_GTEST_PROP(BMatrix, IsSymmetricAndSplitsIntoRankTwoPlusDiagonal, ()) {
  const auto r = testing::random_problem();
  const Point pt = evaluate_point(r.problem, r.x);
  const BMatrix B = b_matrix(pt.f, r.problem.b);
  const double tol = Tol<double>::sum(r.problem.n());
  RC_ASSERT((B.full - B.full.transpose()).cwiseAbs().maxCoeff() <= tol);
  RC_ASSERT((B.rank + B.diagonal - B.full).cwiseAbs().maxCoeff() <= tol);
  RC_ASSERT((B.diagonal - Matrix(B.diagonal.diagonal().asDiagonal())).cwiseAbs().maxCoeff() == 0);
  Eigen::JacobiSVD<Matrix> svd(B.rank);
  const Vector sv = svd.singularValues();
  for (Index k = 2; k < sv.size(); ++k) RC_ASSERT(sv[k] <= tol * std::max(1.0, sv[0]));
  // The inner Hessian of L_exp is B itself.
  const InnerHessian inner = inner_hessian(r.problem, LossKind::kExp, pt);
  Matrix assembled = Matrix(inner.diagonal.asDiagonal());
  for (const OuterTerm& t : inner.terms) assembled += t.coef * t.p * t.q.transpose();
  RC_ASSERT((assembled - B.full).cwiseAbs().maxCoeff() <= tol);
}

TEST(Loss, ValuesMatchTheirDefinitionsOnAHandExample) {
  Problem p;
  p.A = Matrix::Identity(2, 2);
  p.b = Vector::Constant(2, 0.25);
  p.w = Vector::Constant(2, 2.0);
  const Vector x = Vector::Zero(2);
  // u = (1, 1), alpha = 2, f = (1/2, 1/2), c = (1/4, 1/4).
  EXPECT_NEAR(loss(p, LossKind::kExp, x), 0.0625, Tol<double>::kValue);
  EXPECT_NEAR(loss(p, LossKind::kSparse, x), 2.0, Tol<double>::kValue);
  EXPECT_NEAR(loss(p, LossKind::kReg, x), 0.0, Tol<double>::kValue);
  EXPECT_NEAR(loss(p, LossKind::kFull, x), 2.0625, Tol<double>::kValue);
  EXPECT_NEAR(loss(p, LossKind::kRescaled, x), 0.25, Tol<double>::kValue);  // u - 2 b = (1/2, 1/2)
}

TEST(Loss, RejectsMalformedProblemsNamingTheInput) {
  Problem p;
  p.A = Matrix::Ones(3, 2);
  p.b = Vector::Zero(2);
  p.w = Vector::Zero(3);
  try {
    validate_problem(p, "b.npy");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("b.npy: b: expected 3 entries"), std::string::npos);
  }
  p.b = Vector::Zero(3);
  p.A(1, 1) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(validate_problem(p, "A.npy"), InputError);
  EXPECT_EQ(parse_loss_kind("dls"), LossKind::kDls);
  EXPECT_THROW(parse_loss_kind("nope"), InputError);
}

}  // namespace
}  // namespace subevict::softmax_regression
