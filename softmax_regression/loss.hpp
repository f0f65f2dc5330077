#pragma once
/// \file
/// The sparse softmax regression losses of theory.md §7 with closed-form derivatives.
///
/// A in R^{n x d}, b, w in R^n, z = A x, u = exp(z), alpha = <u, 1>, f = u / alpha, c = f - b,
/// S = diag(f) - f f^T (the softmax Jacobian), W = diag(w).
///   L_exp = 1/2 |c|^2, L_reg = 1/2 |W A x|^2, L_sparse = alpha, L = L_exp + L_sparse + L_reg,
///   L_dls = L_exp + L_reg (the Deng-Li-Song loss), L_rescaled = 1/2 |u - alpha b|^2.
/// Every Hessian has the form A^T (diag(m) + sum_k coef_k p_k q_k^T) A with n-vectors m, p_k, q_k
/// and at most three outer-product terms (an InnerHessian), so it is formed in O(n d^2) and applied
/// to a vector in O(n d) without being formed.

#include <Eigen/Dense>
#include <string>
#include <vector>

namespace subevict::softmax_regression {

using Matrix = Eigen::MatrixXd;
using Vector = Eigen::VectorXd;
using Index = Eigen::Index;

/// The loss being minimised.
enum class LossKind { kExp, kReg, kSparse, kFull, kDls, kRescaled };

/// "exp", "reg", "sparse", "full", "dls", "rescaled".
std::string to_string(LossKind kind);
/// Inverse of to_string; throws InputError("loss", ...) naming the accepted values otherwise.
LossKind parse_loss_kind(const std::string& name);

/// A regression problem: A (n x d), b (n), w (n). Host memory, owned.
struct Problem {
  Matrix A;
  Vector b;
  Vector w;
  Index n() const { return A.rows(); }
  Index d() const { return A.cols(); }
};

/// Throws InputError(source, FIELD, ...) unless A is non-empty, b and w have A.rows() entries and
/// every entry of A, b and w is finite. Does not check the theorem's hypotheses (hypotheses.hpp).
void validate_problem(const Problem& problem, const std::string& source);

/// The quantities every loss shares at one x. u is exp(z) itself (L_sparse needs it unshifted, so
/// it overflows to Inf for z_i > ~709); f is computed with the maximum of z subtracted, so it
/// stays finite whenever z is.
struct Point {
  Vector z;
  Vector u;
  double alpha = 0;
  Vector f;
  Vector c;
};

/// z, u, alpha, f, c at x (x.size() == d); z = A x by blocks of rows over the OpenMP threads.
/// O(n d).
Point evaluate_point(const Problem& problem, const Vector& x);

/// The loss value at x. O(n d).
double loss(const Problem& problem, LossKind kind, const Vector& x);
/// The loss value from a precomputed point. O(n).
double loss(const Problem& problem, LossKind kind, const Point& point);

/// The n-vector v with gradient = A^T v: for L_exp v = S c, L_reg w^2 . z, L_sparse u,
/// L_rescaled u . r - <b, r> u with r = u - alpha b; sums add. O(n).
Vector gradient_weights(const Problem& problem, LossKind kind, const Point& point);
/// The gradient A^T v at x (the corrected form of Lemma D.44 for L_exp, theory.md §9 item 1).
Vector gradient(const Problem& problem, LossKind kind, const Vector& x);

/// One term coef * p q^T of an inner Hessian (terms come in symmetric pairs or have p == q).
struct OuterTerm {
  double coef = 0;
  Vector p;
  Vector q;
};

/// The n x n matrix diag(diagonal) + sum_k coef_k p_k q_k^T with Hessian = A^T (it) A.
/// For L_exp it is B(x): diagonal = g - <c, f> f, terms <3f - 2b, f> f f^T, -g f^T, -f g^T with
/// g = (2f - b) . f. For L_rescaled: diagonal u^2 + u . (r - <b, r>), terms |b|^2 u u^T,
/// -(u . b) u^T, -u (u . b)^T. L_reg adds w^2, L_sparse adds u to the diagonal.
struct InnerHessian {
  Vector diagonal;
  std::vector<OuterTerm> terms;
};

/// The inner Hessian of `kind` at `point`. O(n).
InnerHessian inner_hessian(const Problem& problem, LossKind kind, const Point& point);

/// A^T diag(m) A (d x d, symmetric), accumulated over blocks of rows (never a copy of A: extra
/// memory O(block d + threads d^2)), the blocks shared among the OpenMP threads. A block uses a
/// symmetric rank update of (sqrt(m) . A_block) when m >= 0 there, a general product otherwise.
/// O(n d^2).
Matrix weighted_gram(const Matrix& A, const Vector& m);

/// A^T (sum_k coef_k p_k q_k^T) A = sum_k coef_k (A^T p_k)(A^T q_k)^T, added to `H`; one pass
/// over A. O(n d k).
void add_outer_terms(const Matrix& A, const std::vector<OuterTerm>& terms, Matrix& H);

/// The gradient and the outer terms of the Hessian from a single pass over A.
struct GradientAndOuterTerms {
  Vector gradient;  ///< A^T v
  Matrix outer;     ///< A^T (sum_k coef_k p_k q_k^T) A (d x d; zero when there are no terms)
};

/// A^T [v | x_1 .. x_m] in one pass over A (blocks of rows, shared among the OpenMP threads), x_j
/// the distinct vectors among the terms' p_k and q_k (m = 2 for every loss here), instead of a GEMV
/// for A^T v and another pass for the terms. O(n d (m + 1) + d^2 k).
GradientAndOuterTerms gradient_and_outer_terms(const Matrix& A, const Vector& v,
                                               const std::vector<OuterTerm>& terms);

/// The Hessian at x (d x d). O(n d^2).
Matrix hessian(const Problem& problem, LossKind kind, const Vector& x);

/// Hessian times v at x without forming the Hessian: A^T (m . (A v) + sum coef p <q, A v>).
/// O(n d).
Vector hessian_vector_product(const Problem& problem, LossKind kind, const Vector& x,
                              const Vector& v);

/// B(x) as explicit n x n matrices (for checks on small n; O(n^2) memory): `full` from the product
/// form (diag(2f - b) - f (2f - b)^T - <c, f> I) S, `rank` = the three outer products (rank <= 2),
/// `diagonal` = diag(g - <c, f> f). full == rank + diagonal up to rounding.
struct BMatrix {
  Matrix full;
  Matrix rank;
  Matrix diagonal;
};

/// B at the softmax output f for target b (both n-vectors).
BMatrix b_matrix(const Vector& f, const Vector& b);

}  // namespace subevict::softmax_regression
