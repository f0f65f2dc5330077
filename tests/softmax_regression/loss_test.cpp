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

// The fused pass (A^T [v | p, q columns] in one pass over A) against dense formulas: plain loops for A^T v,
// and A^T (explicit n x n sum of the outer products) A; for L_exp also A^T B.rank A with B.rank
// from b_matrix (an independent formula for the same rank-two part). 1e-12 relative is ~4500 eps,
// far above the rounding of these n <= 12 sums and far below any wrong column or coefficient.
constexpr double kSameProduct = 1e-12;

RC_GTEST_PROP(Loss, FusedGradientAndOuterTermsEqualDenseFormulas, ()) {
  const auto r = testing::random_problem();
  const Problem& p = r.problem;
  const Point pt = evaluate_point(p, r.x);
  for (LossKind kind : kAll) {
    const Vector v = gradient_weights(p, kind, pt);
    const InnerHessian inner = inner_hessian(p, kind, pt);
    const GradientAndOuterTerms fused = gradient_and_outer_terms(p.A, v, inner.terms);
    Vector g = Vector::Zero(p.d());
    for (Index j = 0; j < p.d(); ++j) {
      for (Index i = 0; i < p.n(); ++i) g[j] += p.A(i, j) * v[i];
    }
    Matrix inner_rank = Matrix::Zero(p.n(), p.n());
    for (const OuterTerm& t : inner.terms) inner_rank += t.coef * t.p * t.q.transpose();
    const Matrix outer = p.A.transpose() * inner_rank * p.A;
    RC_ASSERT((fused.gradient - g).norm() <= kSameProduct * std::max(1.0, g.norm()));
    RC_ASSERT((fused.outer - outer).norm() <= kSameProduct * std::max(1.0, outer.norm()));
    if (kind == LossKind::kExp) {
      const Matrix from_b = p.A.transpose() * b_matrix(pt.f, p.b).rank * p.A;
      RC_ASSERT((fused.outer - from_b).norm() <= kSameProduct * std::max(1.0, from_b.norm()));
    }
    // The fused pass and the separate route (A^T v, add_outer_terms) agree.
    Matrix separate = Matrix::Zero(p.d(), p.d());
    add_outer_terms(p.A, inner.terms, separate);
    RC_ASSERT((fused.outer - separate).norm() <= kSameProduct * std::max(1.0, separate.norm()));
  }
}

// weighted_gram accumulates blocks of rows over threads: with more than one block (n above the
// block of 2^20 / d rows) it still equals sum_i m_i a_i a_i^T, summed here in long double, for
// nonnegative m (symmetric rank updates) and for m of both signs (general products).
TEST(Loss, WeightedGramOverSeveralBlocksEqualsTheRowSum) {
  const Index n = (Index(1) << 19) + 777, d = 2;
  Matrix A(n, d);
  Vector m(n);
  for (Index i = 0; i < n; ++i) {
    A(i, 0) = std::sin(0.37 * double(i));
    A(i, 1) = std::cos(0.11 * double(i)) + 0.5;
    m[i] = 1 + std::sin(0.013 * double(i));
  }
  for (bool mixed : {false, true}) {
    if (mixed) m[n - 1] = -1;
    long double sum[2][2] = {{0, 0}, {0, 0}}, scale = 0;
    for (Index i = 0; i < n; ++i) {
      for (int a = 0; a < 2; ++a) {
        for (int b = 0; b < 2; ++b) sum[a][b] += (long double)m[i] * A(i, a) * A(i, b);
      }
      scale += std::fabs(m[i]) * A.row(i).squaredNorm();
    }
    const Matrix H = weighted_gram(A, m);
    for (int a = 0; a < 2; ++a) {
      for (int b = 0; b < 2; ++b) {
        EXPECT_NEAR(H(a, b), double(sum[a][b]), Tol<double>::sum(std::size_t(n)) * double(scale))
            << "entry " << a << "," << b << (mixed ? " (m of both signs)" : "");
      }
    }
  }
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
