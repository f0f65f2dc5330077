#pragma once
/// \file
/// The per-step scores of a query against the cached keys, s_e = <k_e, q>: what eviction policies
/// decide on, so every CPU path (core/cpu_path.hpp) must give them bit for bit alike.

#include <Eigen/Core>

#include "core/cpu_path.hpp"
#include "core/exact_attention_rows.hpp"
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

/// Whether cached_scores forms m entries' scores (head dimension d) by the matrix-vector kernel
/// (true) or coefficient by coefficient (a product too small for the kernel): a (query, key) pair
/// scored among m entries and among m' entries gets the same bits exactly when this agrees on m
/// and m' (it does for all m, m' >= 2 at d >= 17).
[[nodiscard]] bool cached_scores_by_kernel(Eigen::Index m, Eigen::Index d);

/// scores.row(b) = cached_scores(keys_t, queries.row(b)^T, path) for every query b, bit for bit:
/// the scores of a block of queries (count x d, row-major) against the same cached keys (scores
/// count x m). Where cached_scores would take its AVX2 kernel, every key load serves four
/// queries (the per-step product reads the whole cache once per query; the block, once per four);
/// elsewhere it is cached_scores per query. Query quads are dealt to `threads` OpenMP threads (one
/// inside another parallel region); the bits do not depend on the count. Throws as cached_scores,
/// and std::invalid_argument when the sizes disagree or threads < 1.
void cached_score_block(const Eigen::Ref<const RowMatrixf>& keys_t, const Eigen::Ref<const RowMatrixd>& queries,
                        Eigen::Ref<RowMatrixd> scores, CpuPath path, int threads = 1);

}  // namespace subevict
