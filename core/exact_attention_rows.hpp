#pragma once
/// \file
/// The exact causal rows of one query head that every per-step metric compares against
/// (theory.md §1): the log normalizers L_i = log sum_{j<=i} exp(s_ij) and the outputs
/// o_i = sum_{j<=i} a_ij v_j, s_ij = scale <q_i, k_j>, a_ij = exp(s_ij - L_i). Two code paths
/// (core/cpu_path.hpp): the portable one (Eigen, blocked GEMMs through for_each_attention_block)
/// and the AVX2 + FMA kernel (core/attention_avx2.hpp exact_attention_rows_avx2); both in
/// double, agreeing within exact_rows_tolerance.

#include <Eigen/Core>
#include <vector>

#include "core/cpu_path.hpp"
#include "core/workload.hpp"

namespace subevict {

/// Row-major n x d doubles.
using RowMatrixd = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// The exact rows of one query head.
struct ExactRows {
  std::vector<double> log_normalizer;  ///< L_i, i = 0..n-1
  RowMatrixd output;                   ///< n x d, row i = o_i
};

/// L_i and o_i for every query i of one head on `path`. q is n x d, k and v are n x d (the head's
/// KV head). Throws std::invalid_argument when the shapes disagree or n = 0, InputError when
/// `path` is kAvx2Fma and cpu_supports_avx2_fma() is false. Preconditions: finite inputs. Cost
/// O(n^2 d) (2 n^2 d flops on the AVX2 path, about 4 n^2 d on the portable one, which computes
/// whole blocks); memory O(n d) doubles. The portable path is the arithmetic the simulator used
/// before the dispatch existed (its results are unchanged).
/// With a sliding window of `window` keys (> 0) the sums run over j in
/// [first_visible_key(i, window), i] (core/attention.hpp), on the portable path whatever `path`
/// says (the AVX2 kernel is causal only); window < 0 throws std::invalid_argument.
/// The AVX2 path deals its row blocks to `threads` OpenMP threads (the same bits on any count);
/// the portable path runs on one. threads < 1 throws std::invalid_argument.
[[nodiscard]] ExactRows exact_attention_rows(const ConstHeadMap& q, const ConstHeadMap& k,
                                             const ConstHeadMap& v, double scale,
                                             CpuPath path = active_cpu_path(), int window = 0,
                                             int threads = 1);

/// How far two paths' exact rows may differ (the same quantities computed in double with other
/// summation orders, FMA, and exp within 2 ulp). With M = max_ij scale ||q_i|| ||k_j|| and
/// gamma(m) = Tol<double>::sum(m) (Higham's bound on an m-term sum): each path's scores are
/// within gamma(d) M of the exact ones, so L_i differs by at most
///   log_normalizer = 2 (2 gamma(d) M + gamma(n) + 8 eps)  (the sums of exps and the log),
/// and each weight a_ij by a relative 2 log_normalizer, so |o_ic - o'_ic| <= output * V, V =
/// max_jc |v_jc|, with
///   output = 2 (2 log_normalizer + gamma(n)).
/// Headroom 2 in both.
struct ExactRowsTolerance {
  double log_normalizer = 0;  ///< absolute, on L_i
  double output = 0;          ///< absolute on o_ic, in units of max |v|
};

/// The tolerance for n tokens, head dimension d and score magnitude M (see ExactRowsTolerance).
[[nodiscard]] ExactRowsTolerance exact_rows_tolerance(int n, int d, double score_magnitude);

/// M = scale * max_i ||q_i|| * max_j ||k_j|| (>= the largest scale ||q_i|| ||k_j||), for
/// exact_rows_tolerance. Precondition: q and k have at least one row.
[[nodiscard]] double score_magnitude(const ConstHeadMap& q, const ConstHeadMap& k, double scale);

}  // namespace subevict
