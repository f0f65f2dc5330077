#include "softmax_regression/loss.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

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

/// Entries of A in one block of weighted_gram (8 MB of doubles).
constexpr Index kGramBlockEntries = Index(1) << 20;
/// Rows of A in one block of a streaming product (a column segment of 16 KB stays in L1).
constexpr Index kStreamBlockRows = 2048;

/// A^T right (right: n x k, k small) in one pass over A: each block of rows contributes
/// A_block^T right_block, a coefficient-wise product whose operands stay in cache (a GEMM would
/// first copy A into packed panels). Blocks are shared among the OpenMP threads; one accumulator
/// per thread, summed in thread order.
Matrix streamed_transposed_product(const Matrix& A, const Matrix& right) {
  const Index n = A.rows(), blocks = (n + kStreamBlockRows - 1) / kStreamBlockRows;
  std::vector<Matrix> partial(std::size_t(std::max(1, omp_get_max_threads())));
#pragma omp parallel if (blocks > 1)
  {
    Matrix& local = partial[std::size_t(omp_get_thread_num())];
    local = Matrix::Zero(A.cols(), right.cols());
#pragma omp for schedule(static)
    for (Index k = 0; k < blocks; ++k) {
      const Index first = k * kStreamBlockRows, rows = std::min(kStreamBlockRows, n - first);
      local.noalias() +=
          A.middleRows(first, rows).transpose().lazyProduct(right.middleRows(first, rows));
    }
  }
  Matrix out = Matrix::Zero(A.cols(), right.cols());
  for (const Matrix& local : partial) {
    if (local.size() > 0) out += local;
  }
  return out;
}

/// A^T [leading | x_1 .. x_m] in one pass over A (streamed_transposed_product), x_j the distinct
/// vectors among the terms' p and q (compared by value), and sum_k coef_k (A^T p_k)(A^T q_k)^T
/// from its columns. `gradient` is A^T leading (empty without one).
GradientAndOuterTerms project_with_terms(const Matrix& A, const Vector* leading,
                                         const std::vector<OuterTerm>& terms) {
  std::vector<const Vector*> distinct;
  auto column_of = [&distinct](const Vector& x) {
    for (std::size_t j = 0; j < distinct.size(); ++j) {
      if (distinct[j] == &x || *distinct[j] == x) return Index(j);
    }
    distinct.push_back(&x);
    return Index(distinct.size() - 1);
  };
  std::vector<std::pair<Index, Index>> columns;
  for (const OuterTerm& t : terms) columns.emplace_back(column_of(t.p), column_of(t.q));
  const Index lead = leading ? 1 : 0;
  Matrix right(A.rows(), lead + Index(distinct.size()));
  if (leading) right.col(0) = *leading;
  for (std::size_t j = 0; j < distinct.size(); ++j) right.col(lead + Index(j)) = *distinct[j];
  const Matrix projected = streamed_transposed_product(A, right);
  GradientAndOuterTerms out;
  if (leading) out.gradient = projected.col(0);
  out.outer = Matrix::Zero(A.cols(), A.cols());
  for (std::size_t k = 0; k < terms.size(); ++k) {
    out.outer.noalias() += terms[k].coef * projected.col(lead + columns[k].first) *
                           projected.col(lead + columns[k].second).transpose();
  }
  return out;
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
  // z = A x by blocks of rows (each thread writes its own segment of z, which stays in cache).
  pt.z.resize(p.n());
  const Index blocks = (p.n() + kStreamBlockRows - 1) / kStreamBlockRows;
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (Index k = 0; k < blocks; ++k) {
    const Index first = k * kStreamBlockRows, rows = std::min(kStreamBlockRows, p.n() - first);
    pt.z.segment(first, rows).noalias() = p.A.middleRows(first, rows) * x;
  }
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
  const Index n = A.rows(), d = A.cols();
  const bool nonnegative = (m.array() >= 0).all();
  const Index block = std::max<Index>(256, kGramBlockEntries / std::max<Index>(d, 1));
  const Index blocks = (n + block - 1) / block;
  // One accumulator per thread, summed in thread order: the same rounding on every run.
  std::vector<Matrix> partial(std::size_t(std::max(1, omp_get_max_threads())));
#pragma omp parallel if (blocks > 1)
  {
    Matrix& local = partial[std::size_t(omp_get_thread_num())];
    local = Matrix::Zero(d, d);
    Matrix scaled;
#pragma omp for schedule(static)
    for (Index k = 0; k < blocks; ++k) {
      const Index first = k * block, rows = std::min(block, n - first);
      const auto rows_of_A = A.middleRows(first, rows);
      if (nonnegative) {
        scaled = m.segment(first, rows).cwiseSqrt().asDiagonal() * rows_of_A;
        local.selfadjointView<Eigen::Lower>().rankUpdate(scaled.transpose());
      } else {
        scaled = m.segment(first, rows).asDiagonal() * rows_of_A;
        local.noalias() += rows_of_A.transpose() * scaled;
      }
    }
  }
  Matrix H = Matrix::Zero(d, d);
  for (const Matrix& local : partial) {
    if (local.size() > 0) H += local;
  }
  if (nonnegative) H.triangularView<Eigen::StrictlyUpper>() = H.transpose();
  return H;
}

void add_outer_terms(const Matrix& A, const std::vector<OuterTerm>& terms, Matrix& H) {
  if (terms.empty()) return;
  H += project_with_terms(A, nullptr, terms).outer;
}

GradientAndOuterTerms gradient_and_outer_terms(const Matrix& A, const Vector& v,
                                               const std::vector<OuterTerm>& terms) {
  return project_with_terms(A, &v, terms);
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
