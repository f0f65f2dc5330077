#pragma once
/// \file
/// Exact causal attention and attention over a tracked set (theory.md §1), in double precision.
/// Tokens are 0-based: query i attends over keys 0..i, or over its last W keys on a layer with a
/// sliding window of W keys (Workload::window; window 0 = global).

#include <Eigen/Core>
#include <functional>
#include <vector>

#include "core/workload.hpp"

namespace subevict {

/// The first key query i sees: 0 with window 0 (global), max(0, i - window + 1) with a sliding
/// window of `window` keys. Precondition: i >= 0, window >= 0.
constexpr int first_visible_key(int i, int window) { return window > 0 && i - window + 1 > 0 ? i - window + 1 : 0; }

/// Scores s_ij = scale * <q_i, k_j> for j = 0..i (a vector of length i + 1). O(i * d).
Eigen::VectorXd causal_logits(const ConstHeadMap& q, const ConstHeadMap& k, int i, double scale);

/// log sum_j exp(x_j) by max subtraction; -inf for an empty vector. Finite for finite input of
/// any magnitude (no overflow: every exponent is <= 0).
double log_sum_exp(const Eigen::VectorXd& x);

/// Below this exponent exp is not a normal double (log DBL_MIN = -708.396...).
inline constexpr double kLogMinNormal = -708.3964185322641;

/// exp of max-shifted logits (entries <= 0), with every entry below kLogMinNormal exactly 0.
/// Eigen's vectorised exp returns a subnormal (~5e-309) in some SIMD lanes and 0 in others there,
/// so equal logits could get unequal weights and the lowest-index tie rule would depend on the
/// lane; flushing makes equal logits equal weights. Use it for every attention weight.
template <class Derived>
auto underflow_exp(const Eigen::ArrayBase<Derived>& shifted) {
  return (shifted < kLogMinNormal).select(0.0, shifted.exp());
}

/// softmax(x)_j = exp(x_j - max x) / sum_k exp(x_k - max x), exactly 0 where x_j - max x <
/// kLogMinNormal (underflow_exp). Entries are in [0, 1] and sum to 1 within n eps. Precondition:
/// x non-empty with finite entries.
Eigen::VectorXd softmax(const Eigen::VectorXd& logits);

/// Exact causal attention row a_i (H2O Def D.9): softmax of causal_logits(q, k, i, scale), length
/// i + 1; with a sliding window the softmax runs over keys first_visible_key(i, window)..i and
/// the earlier entries are exactly 0.
Eigen::VectorXd attention_row(const ConstHeadMap& q, const ConstHeadMap& k, int i, double scale, int window = 0);

/// Tracked attention (Def D.10, corrected per theory.md §9 erratum 4): the softmax of `logits`
/// restricted to the positions where in_set[j] is true, exactly 0 elsewhere. Precondition:
/// in_set.size() == logits.size() and at least one position is in the set (std::invalid_argument).
Eigen::VectorXd tracked_attention(const Eigen::VectorXd& logits, const std::vector<bool>& in_set);

/// Attention output o = sum_j weights_j v_j over j < weights.size() (values from `v`, row-major
/// tokens x d). Precondition: weights.size() <= v.rows().
Eigen::VectorXd attention_output(const Eigen::VectorXd& weights, const ConstHeadMap& v);

/// The whole causal attention matrix (n x n, lower triangular, zeros above the diagonal and, with
/// a sliding window, before each row's first visible key). Memory 8 n^2 bytes: use
/// for_each_attention_block for large n.
Eigen::MatrixXd causal_attention(const ConstHeadMap& q, const ConstHeadMap& k, double scale, int window = 0);

/// Streams exact causal attention in blocks of `block_rows` query rows: calls
/// visit(first_row, probs) where probs is rows x n, row r holding a_{first_row + r} in its first
/// first_row + r + 1 columns and zeros after (with a sliding window of `window` keys, also zeros
/// before column first_visible_key(first_row + r, window)). Each block costs one GEMM; memory
/// 8 * block_rows * n bytes. The visitor must not keep references to probs. `visit_logits`, if
/// set, is called first with (first_row, scores): rows x (first_row + rows), row r holding the
/// scaled scores scale <q_i, k_j> of i = first_row + r against every key j of the block (those of
/// keys after i or before the window's first visible key are not attention entries). Throws
/// std::invalid_argument for window < 0.
void for_each_attention_block(const ConstHeadMap& q, const ConstHeadMap& k, double scale,
                              int block_rows,
                              const std::function<void(int, const Eigen::MatrixXd&)>& visit,
                              int window = 0,
                              const std::function<void(int, const Eigen::MatrixXd&)>& visit_logits = {});

}  // namespace subevict
