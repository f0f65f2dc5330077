#include "softmax_regression/loss.hpp"

#include <cmath>
#include <limits>

#include "core/input_error.hpp"

namespace subevict::softmax_regression {
namespace {

bool has_exp(LossKind k) { return k == LossKind::kExp || k == LossKind::kFull || k == LossKind::kDls; }
bool has_reg(LossKind k) { return k == LossKind::kReg || k == LossKind::kFull || k == LossKind::kDls; }
bool has_sparse(LossKind k) { return k == LossKind::kSparse || k == LossKind::kFull; }

void require_finite(const Eigen::Ref<const Matrix>& m, const std::string& source,
                    const std::string& field) {
  if (!m.allFinite()) throw InputError(source, field, "finite values", "NaN or Inf");
}

}  // namespace

std::string to_string(LossKind kind) {
  switch (kind) {
    case LossKind::kExp: return "exp";
    case LossKind::kReg: return "reg";
    case LossKind::kSparse: return "sparse";
    case LossKind::kFull: return "full";
    case LossKind::kDls: return "dls";
    case LossKind::kRescaled: return "rescaled";
  }
  return "?";
}

LossKind parse_loss_kind(const std::string& name) {
  for (LossKind k : {LossKind::kExp, LossKind::kReg, LossKind::kSparse, LossKind::kFull,
                     LossKind::kDls, LossKind::kRescaled}) {
    if (to_string(k) == name) return k;
  }
  throw InputError("loss", "name", "one of exp, reg, sparse, full, dls, rescaled", name);
}

void validate_problem(const Problem& p, const std::string& source) {
  if (p.A.rows() == 0 || p.A.cols() == 0) {
    throw InputError(source, "A", "a non-empty n x d matrix",
                     std::to_string(p.A.rows()) + " x " + std::to_string(p.A.cols()));
  }
  if (p.b.size() != p.A.rows()) {
    throw InputError(source, "b", std::to_string(p.A.rows()) + " entries (rows of A)",
                     std::to_string(p.b.size()));
  }
  if (p.w.size() != p.A.rows()) {
    throw InputError(source, "w", std::to_string(p.A.rows()) + " entries (rows of A)",
                     std::to_string(p.w.size()));
  }
  require_finite(p.A, source, "A");
  require_finite(p.b, source, "b");
  require_finite(p.w, source, "w");
}

Point evaluate_point(const Problem& p, const Vector& x) {
  Point pt;
  pt.z.noalias() = p.A * x;
  pt.u = pt.z.array().exp();
  pt.alpha = pt.u.sum();
  if (std::isfinite(pt.alpha) && pt.alpha >= std::numeric_limits<double>::min()) {
    pt.f = pt.u / pt.alpha;
  } else {  // exp(z) overflowed or underflowed: softmax with the maximum subtracted
    const double zmax = pt.z.maxCoeff();
    pt.f = (pt.z.array() - zmax).exp();
    pt.f /= pt.f.sum();
  }
  pt.c = pt.f - p.b;
  return pt;
}

double loss(const Problem& p, LossKind kind, const Point& pt) {
  if (kind == LossKind::kRescaled) return 0.5 * (pt.u - pt.alpha * p.b).squaredNorm();
  double value = 0;
  if (has_exp(kind)) value += 0.5 * pt.c.squaredNorm();
  if (has_reg(kind)) value += 0.5 * (p.w.array() * pt.z.array()).square().sum();
  if (has_sparse(kind)) value += pt.alpha;
  return value;
}

double loss(const Problem& p, LossKind kind, const Vector& x) {
  return loss(p, kind, evaluate_point(p, x));
}

Vector gradient_weights(const Problem& p, LossKind kind, const Point& pt) {
  if (kind == LossKind::kRescaled) {
    const Vector r = pt.u - pt.alpha * p.b;
    return pt.u.cwiseProduct(r) - p.b.dot(r) * pt.u;
  }
  Vector v = Vector::Zero(p.n());
  if (has_exp(kind)) v += pt.f.cwiseProduct(pt.c) - pt.f.dot(pt.c) * pt.f;  // S c
  if (has_reg(kind)) v.array() += p.w.array().square() * pt.z.array();
  if (has_sparse(kind)) v += pt.u;
  return v;
}

Vector gradient(const Problem& p, LossKind kind, const Vector& x) {
  return p.A.transpose() * gradient_weights(p, kind, evaluate_point(p, x));
}

InnerHessian inner_hessian(const Problem& p, LossKind kind, const Point& pt) {
  InnerHessian h;
  h.diagonal = Vector::Zero(p.n());
  if (kind == LossKind::kRescaled) {
    const Vector r = pt.u - pt.alpha * p.b;
    const Vector ub = pt.u.cwiseProduct(p.b);
    h.diagonal = pt.u.cwiseProduct(pt.u) +
                 pt.u.cwiseProduct((r.array() - p.b.dot(r)).matrix());
    h.terms.push_back({p.b.squaredNorm(), pt.u, pt.u});
    h.terms.push_back({-1.0, ub, pt.u});
    h.terms.push_back({-1.0, pt.u, ub});
    return h;
  }
  if (has_exp(kind)) {
    const Vector g = (2 * pt.f - p.b).cwiseProduct(pt.f);
    h.diagonal += g - pt.c.dot(pt.f) * pt.f;
    h.terms.push_back({(3 * pt.f - 2 * p.b).dot(pt.f), pt.f, pt.f});
    h.terms.push_back({-1.0, g, pt.f});
    h.terms.push_back({-1.0, pt.f, g});
  }
  if (has_reg(kind)) h.diagonal.array() += p.w.array().square();
  if (has_sparse(kind)) h.diagonal += pt.u;
  return h;
}

Matrix weighted_gram(const Matrix& A, const Vector& m) {
  const Index d = A.cols();
  Matrix H = Matrix::Zero(d, d);
  if ((m.array() >= 0).all()) {
    const Matrix scaled = m.cwiseSqrt().asDiagonal() * A;
    H.selfadjointView<Eigen::Lower>().rankUpdate(scaled.transpose());
    H.triangularView<Eigen::StrictlyUpper>() = H.transpose();
  } else {
    H.noalias() = A.transpose() * (m.asDiagonal() * A);
  }
  return H;
}

void add_outer_terms(const Matrix& A, const std::vector<OuterTerm>& terms, Matrix& H) {
  if (terms.empty()) return;
  // All A^T p_k, A^T q_k from one pass over A (a GEMM with 2 k columns).
  const Index k = Index(terms.size());
  Matrix PQ(A.rows(), 2 * k);
  for (Index t = 0; t < k; ++t) {
    PQ.col(2 * t) = terms[std::size_t(t)].p;
    PQ.col(2 * t + 1) = terms[std::size_t(t)].q;
  }
  const Matrix projected = A.transpose() * PQ;
  for (Index t = 0; t < k; ++t) {
    H.noalias() += terms[std::size_t(t)].coef * projected.col(2 * t) *
                   projected.col(2 * t + 1).transpose();
  }
}

Matrix hessian(const Problem& p, LossKind kind, const Vector& x) {
  const InnerHessian h = inner_hessian(p, kind, evaluate_point(p, x));
  Matrix H = weighted_gram(p.A, h.diagonal);
  add_outer_terms(p.A, h.terms, H);
  return H;
}

Vector hessian_vector_product(const Problem& p, LossKind kind, const Vector& x, const Vector& v) {
  const InnerHessian h = inner_hessian(p, kind, evaluate_point(p, x));
  const Vector av = p.A * v;
  Vector inner = h.diagonal.cwiseProduct(av);
  for (const OuterTerm& t : h.terms) inner += t.coef * t.q.dot(av) * t.p;
  return p.A.transpose() * inner;
}

BMatrix b_matrix(const Vector& f, const Vector& b) {
  const Index n = f.size();
  const Vector c = f - b;
  const Vector two_f_b = 2 * f - b;
  const Matrix S = Matrix(f.asDiagonal()) - f * f.transpose();
  BMatrix out;
  out.full = (Matrix(two_f_b.asDiagonal()) - f * two_f_b.transpose() -
              c.dot(f) * Matrix::Identity(n, n)) * S;
  const Vector g = two_f_b.cwiseProduct(f);
  out.rank = (3 * f - 2 * b).dot(f) * f * f.transpose() - g * f.transpose() - f * g.transpose();
  out.diagonal = Matrix((g - c.dot(f) * f).asDiagonal());
  return out;
}

}  // namespace subevict::softmax_regression
