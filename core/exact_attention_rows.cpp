#include "core/exact_attention_rows.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/attention.hpp"
#include "core/attention_avx2.hpp"
#include "core/input_error.hpp"
#include "core/tolerance.hpp"

namespace subevict {

static_assert(detail::kAvx2FlushBelow == kLogMinNormal,
              "the AVX2 kernel flushes exp where underflow_exp does");

namespace {

/// Blocked GEMMs through core's exact attention. The normalizer is recovered from the row's
/// largest probability p* = a_ij* >= 1/(i+1): L_i = s_ij* - log p*, accurate to a few ulps because
/// p* cannot underflow.
ExactRows portable_rows(const ConstHeadMap& q, const ConstHeadMap& k, const ConstHeadMap& v,
                        double scale, int window) {
  constexpr int kBlockRows = 128;
  const int n = int(k.rows());
  const RowMatrixd values = v.cast<double>();
  ExactRows rows{std::vector<double>(std::size_t(n)), RowMatrixd(n, k.cols())};
  for_each_attention_block(
      q, k, scale, kBlockRows,
      [&](int first, const Eigen::MatrixXd& probs) {
    const int count = int(probs.rows()), cols = first + count;
    rows.output.middleRows(first, count).noalias() = probs.leftCols(cols) * values.topRows(cols);
    for (int r = 0; r < count; ++r) {
      const int i = first + r;
      Eigen::Index j = 0;
      const double p = probs.row(r).head(i + 1).maxCoeff(&j);
      const double s = scale * q.row(i).cast<double>().dot(k.row(j).cast<double>());
      rows.log_normalizer[std::size_t(i)] = s - std::log(p);
    }
      },
      window);
  return rows;
}

}  // namespace

ExactRows exact_attention_rows(const ConstHeadMap& q, const ConstHeadMap& k, const ConstHeadMap& v,
                               double scale, CpuPath path, int window, int threads) {
  const Eigen::Index n = q.rows(), d = q.cols();
  if (n == 0 || k.rows() != n || v.rows() != n || k.cols() != d || v.cols() != d || d == 0) {
    throw std::invalid_argument(
        "exact_attention_rows: q, k and v must all be n x d with n, d >= 1, got q " +
        std::to_string(n) + "x" + std::to_string(d) + ", k " + std::to_string(k.rows()) + "x" +
        std::to_string(k.cols()) + ", v " + std::to_string(v.rows()) + "x" +
        std::to_string(v.cols()));
  }
  if (window < 0) throw std::invalid_argument("exact_attention_rows: window must be >= 0");
  if (threads < 1) throw std::invalid_argument("exact_attention_rows: threads must be >= 1");
  if (path == CpuPath::kPortable || window > 0) return portable_rows(q, k, v, scale, window);
  if (!cpu_supports_avx2_fma()) {
    throw InputError("exact attention rows", "cpu path avx2", "a CPU with AVX2 and FMA");
  }
#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
  ExactRows rows{std::vector<double>(std::size_t(n)), RowMatrixd(n, d)};
  detail::exact_attention_rows_avx2(q.data(), k.data(), v.data(), int(n), int(d), scale,
                                    rows.log_normalizer.data(), rows.output.data(), threads);
  return rows;
#else
  return portable_rows(q, k, v, scale, window);  // unreachable: cpu_supports_avx2_fma() is false
#endif
}

ExactRowsTolerance exact_rows_tolerance(int n, int d, double score_magnitude) {
  const double eps = Tol<double>::kEps;
  const double log_normalizer = 2.0 * (2.0 * Tol<double>::sum(std::size_t(d)) * score_magnitude +
                                       Tol<double>::sum(std::size_t(n)) + 8.0 * eps);
  return {log_normalizer, 2.0 * (2.0 * log_normalizer + Tol<double>::sum(std::size_t(n)))};
}

double score_magnitude(const ConstHeadMap& q, const ConstHeadMap& k, double scale) {
  const double q_norm = q.cast<double>().rowwise().norm().maxCoeff();
  const double k_norm = k.cast<double>().rowwise().norm().maxCoeff();
  return std::abs(scale) * q_norm * k_norm;
}

}  // namespace subevict
