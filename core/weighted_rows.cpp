#include "core/weighted_rows.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/attention_avx2.hpp"
#include "core/input_error.hpp"

namespace subevict {

void weighted_rows(const Eigen::Ref<const RowMatrixf>& rows,
                   const Eigen::Ref<const Eigen::MatrixXd>& weights,
                   Eigen::Ref<Eigen::MatrixXd> out, CpuPath path) {
  if (weights.rows() != rows.rows() || out.rows() != rows.cols() || out.cols() != weights.cols()) {
    throw std::invalid_argument("weighted_rows: expected rows m x d, weights m x g and out d x g");
  }
  if (path == CpuPath::kPortable) {
    out.noalias() = rows.cast<double>().transpose() * weights;
    return;
  }
  if (!cpu_supports_avx2_fma())
    throw InputError("weighted rows", "cpu path avx2", "a CPU with AVX2 and FMA");
#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
  // Ref guarantees unit inner strides: rows by row (stride outerStride), weights and out by column.
  if (weights.outerStride() == weights.rows() && out.outerStride() == out.rows()) {
    detail::weighted_rows_avx2(rows.data(), int(rows.rows()), int(rows.cols()),
                               int(rows.outerStride()), weights.data(), int(weights.cols()),
                               out.data());
    return;
  }
#endif
  out.noalias() =
      rows.cast<double>().transpose() * weights;  // strided weights or out: the portable product
}

void gathered_weighted_rows(const Eigen::Ref<const RowMatrixf>& rows, std::span<const int> index,
                            const Eigen::Ref<const RowMatrixd>& weights, Eigen::Ref<RowMatrixd> out, CpuPath path,
                            int threads) {
  const Eigen::Index count = Eigen::Index(index.size()), queries = weights.rows(), d = rows.cols();
  if (weights.cols() != count || out.rows() != queries || out.cols() != d || threads < 1) {
    throw std::invalid_argument(
        "gathered_weighted_rows: expected weights q x count (count = the indices), out q x d and threads >= 1");
  }
  for (int u : index) {
    if (u < 0 || u >= rows.rows()) throw std::invalid_argument("gathered_weighted_rows: an index is outside the rows");
  }
  if (path == CpuPath::kAvx2Fma && !cpu_supports_avx2_fma())
    throw InputError("weighted rows", "cpu path avx2", "a CPU with AVX2 and FMA");
  const int quads = int((queries + 3) / 4);
#pragma omp parallel for schedule(static) num_threads(std::max(1, std::min(threads, quads)))
  for (int quad = 0; quad < quads; ++quad) {
    const int first = 4 * quad, size = std::min(4, int(queries) - first);
#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
    if (path == CpuPath::kAvx2Fma) {
      detail::gathered_weighted_rows_avx2(rows.data(), int(rows.outerStride()), index.data(), int(count),
                                          weights.data() + Eigen::Index(first) * weights.outerStride(),
                                          int(weights.outerStride()), size, int(d),
                                          out.data() + Eigen::Index(first) * out.outerStride(),
                                          int(out.outerStride()));
      continue;
    }
#endif
    for (int b = first; b < first + size; ++b) {
      for (Eigen::Index c = 0; c < d; ++c) {
        double acc = 0.0;
        for (Eigen::Index u = 0; u < count; ++u) acc = std::fma(weights(b, u), double(rows(index[std::size_t(u)], c)), acc);
        out(b, c) = acc;
      }
    }
  }
}

}  // namespace subevict
