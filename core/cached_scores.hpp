#pragma once
/// \file
/// The per-step scores of a query against the cached keys, s_e = <k_e, q>: what eviction policies
/// decide on, so every CPU path (core/cpu_path.hpp) must give them bit for bit alike.

#include <Eigen/Core>

#include "core/cpu_path.hpp"
#include "core/workload.hpp"

namespace subevict {

/// True when this build's portable product keys * query (Eigen, double) is the row-major
/// matrix-vector product on 2-wide packets without FMA that the AVX2 scores reproduce
/// (core/attention_avx2.hpp sse2_order_scores_avx2): the default x86-64 build. False for builds
/// with -march=native (AVX or FMA packets) or without vectorization.
[[nodiscard]] bool avx2_scores_reproduce_eigen();

/// scores(e) = <double(keys_t.col(e)), query> for e < m: the cached keys stored transposed,
/// keys_t d x m (row-major: row j holds every entry's column j), bit-identical on every path to
/// the portable product of the keys as an m x d double matrix times the query as a d x 1 double
/// matrix (the form greedy/eviction/evaluation/simulator.cpp evaluates): kAvx2Fma reads the float
/// keys directly (half the bytes, entries in vector lanes) when avx2_scores_reproduce_eigen() and
/// Eigen takes its matrix-vector kernel (m >= 2 and d + m + 1 >=
/// EIGEN_GEMM_TO_COEFFBASED_THRESHOLD), else it computes the portable product. Throws
/// std::invalid_argument when the sizes disagree, InputError for kAvx2Fma where
/// cpu_supports_avx2_fma() is false.
void cached_scores(const Eigen::Ref<const RowMatrixf>& keys_t,
                   const Eigen::Ref<const Eigen::VectorXd>& query,
                   Eigen::Ref<Eigen::VectorXd> scores, CpuPath path);

}  // namespace subevict
