#include "core/cached_scores.hpp"

#include <algorithm>
#include <stdexcept>

#include "core/attention_avx2.hpp"
#include "core/exact_attention_rows.hpp"
#include "core/input_error.hpp"

namespace subevict {

bool avx2_scores_reproduce_eigen() {
#if defined(SUBEVICT_HAVE_AVX2_KERNELS) && defined(EIGEN_VECTORIZE_SSE2) && \
    !defined(EIGEN_VECTORIZE_AVX) && !defined(EIGEN_VECTORIZE_FMA)
  return Eigen::internal::packet_traits<double>::size == 2;
#else
  return false;
#endif
}

bool cached_scores_by_kernel(Eigen::Index m, Eigen::Index d) {
  // Eigen takes its matrix-vector kernel unless the product is small (below its threshold it
  // evaluates coefficient by coefficient) or has one row (a dot product): both in other orders.
  return d + m + 1 >= EIGEN_GEMM_TO_COEFFBASED_THRESHOLD && m >= 2;
}

void cached_scores(const Eigen::Ref<const RowMatrixf>& keys_t,
                   const Eigen::Ref<const Eigen::VectorXd>& query,
                   Eigen::Ref<Eigen::VectorXd> scores, CpuPath path) {
  const Eigen::Index m = keys_t.cols(), d = keys_t.rows();
  if (query.size() != d || scores.size() != m) {
    throw std::invalid_argument(
        "cached_scores: expected keys_t d x m, a d-vector query and m scores");
  }
  if (path == CpuPath::kAvx2Fma && !cpu_supports_avx2_fma()) {
    throw InputError("cached scores", "cpu path avx2", "a CPU with AVX2 and FMA");
  }
#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
  if (path == CpuPath::kAvx2Fma && avx2_scores_reproduce_eigen() && cached_scores_by_kernel(m, d)) {
    detail::sse2_order_scores_avx2(keys_t.data(), int(m), int(d), int(keys_t.outerStride()),
                                   query.data(), scores.data());
    return;
  }
#endif
  // The simulator's form: an m x d double matrix times a d x 1 matrix.
  const RowMatrixd doubles = keys_t.transpose().cast<double>();
  const Eigen::MatrixXd queries = query;
  Eigen::MatrixXd product(m, 1);
  product.noalias() = doubles * queries;
  scores = product.col(0);
}

void cached_score_block(const Eigen::Ref<const RowMatrixf>& keys_t, const Eigen::Ref<const RowMatrixd>& queries,
                        Eigen::Ref<RowMatrixd> scores, CpuPath path, int threads) {
  const Eigen::Index m = keys_t.cols(), d = keys_t.rows(), count = queries.rows();
  if (queries.cols() != d || scores.rows() != count || scores.cols() != m || threads < 1) {
    throw std::invalid_argument(
        "cached_score_block: expected keys_t d x m, queries count x d, scores count x m and threads >= 1");
  }
  if (path == CpuPath::kAvx2Fma && !cpu_supports_avx2_fma()) {
    throw InputError("cached scores", "cpu path avx2", "a CPU with AVX2 and FMA");
  }
  const int quads = int((count + 3) / 4);
#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
  if (path == CpuPath::kAvx2Fma && avx2_scores_reproduce_eigen() && cached_scores_by_kernel(m, d)) {
#pragma omp parallel for schedule(static) num_threads(std::max(1, std::min(threads, quads)))
    for (int quad = 0; quad < quads; ++quad) {
      const int first = 4 * quad, size = std::min(4, int(count) - first);
      detail::sse2_order_score_block_avx2(keys_t.data(), int(m), int(d), int(keys_t.outerStride()),
                                          queries.data() + Eigen::Index(first) * queries.outerStride(), size,
                                          scores.data() + Eigen::Index(first) * scores.outerStride(),
                                          int(scores.outerStride()));
    }
    return;
  }
#endif
  for (Eigen::Index b = 0; b < count; ++b) {
    const Eigen::VectorXd query = queries.row(b).transpose();
    Eigen::VectorXd row(m);
    cached_scores(keys_t, query, row, path);
    scores.row(b) = row.transpose();
  }
}

}  // namespace subevict
