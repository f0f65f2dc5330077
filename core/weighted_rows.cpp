#include "core/weighted_rows.hpp"

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

}  // namespace subevict
