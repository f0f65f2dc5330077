#include "softmax_regression/leverage_scores.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/counter_rng.hpp"

namespace subevict::softmax_regression {
namespace {

// Counter-based stream ids of this file (top 16 bits 0x5352, "SR").
constexpr std::uint64_t kHashStream = 0x5352000000000001ull;
constexpr std::uint64_t kSignStream = 0x5352000000000002ull;
constexpr std::uint64_t kProjectionStream = 0x5352000000000003ull;

}  // namespace

Vector exact_leverage_scores(const Matrix& A, const Vector& s) {
  const Matrix M = s.asDiagonal() * A;
  Eigen::ColPivHouseholderQR<Matrix> qr(M);
  const Index r = qr.rank();
  if (r == 0) return Vector::Zero(A.rows());
  const Matrix Q = qr.householderQ().setLength(qr.nonzeroPivots()) * Matrix::Identity(A.rows(), r);
  return Q.rowwise().squaredNorm();
}

Vector sketched_leverage_scores(const Matrix& A, const Vector& s, const SketchOptions& options) {
  const Index n = A.rows(), d = A.cols();
  const Index m = options.sketch_rows > 0 ? options.sketch_rows : std::min(n, 20 * d);
  const Index k = std::max<Index>(1, options.jl_columns);
  std::vector<Index> bucket(n);
  Vector signed_scale(n);
  for (Index i = 0; i < n; ++i) {
    bucket[i] = std::min<Index>(m - 1, Index(uniform(options.seed, kHashStream, i) * double(m)));
    signed_scale[i] = uniform(options.seed, kSignStream, i) < 0.5 ? -s[i] : s[i];
  }
  Matrix sketch = Matrix::Zero(m, d);
  for (Index j = 0; j < d; ++j) {
    for (Index i = 0; i < n; ++i) sketch(bucket[i], j) += signed_scale[i] * A(i, j);
  }
  Eigen::ColPivHouseholderQR<Matrix> qr(sketch);
  const Index r = qr.rank();
  if (r == 0) return Vector::Zero(n);
  Matrix G(r, k);
  for (Index e = 0; e < r * k; ++e) G(e / k, e % k) = normal(options.seed, kProjectionStream, e);
  // T = P [R11^{-1} G; 0]: M T has the row norms of an orthonormal basis, projected.
  const Matrix R11 = qr.matrixR().topLeftCorner(r, r).triangularView<Eigen::Upper>();
  Matrix T = Matrix::Zero(d, k);
  T.topRows(r) = R11.triangularView<Eigen::Upper>().solve(G);
  T = qr.colsPermutation() * T;
  const Matrix omega = s.asDiagonal() * (A * T);
  return omega.rowwise().squaredNorm() / double(k);
}

RowSample sample_rows(const Vector& p, Index draws, std::uint64_t seed, std::uint64_t stream) {
  const Index n = p.size();
  std::vector<double> cumulative(n);
  double total = 0;
  for (Index i = 0; i < n; ++i) cumulative[i] = (total += p[i]);
  std::vector<Index> counts(n, 0);
  for (Index k = 0; k < draws; ++k) {
    const double target = uniform(seed, stream, k) * total;
    const auto it = std::lower_bound(cumulative.begin(), cumulative.end(), target);
    ++counts[std::min<Index>(n - 1, Index(it - cumulative.begin()))];
  }
  RowSample sample;
  for (Index i = 0; i < n; ++i) {
    if (counts[i] > 0) sample.rows.push_back(i);
  }
  sample.weights.resize(Index(sample.rows.size()));
  for (Index j = 0; j < Index(sample.rows.size()); ++j) {
    const Index i = sample.rows[j];
    sample.weights[j] = double(counts[i]) / (double(draws) * p[i] / total);
  }
  return sample;
}

}  // namespace subevict::softmax_regression
