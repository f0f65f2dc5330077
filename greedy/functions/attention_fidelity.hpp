#pragma once
/// \file
/// Attention-output fidelity f(S) = −Σ_i ‖o_i − õ_i(S)‖² (theory.md §4): how well the keys in S
/// reproduce the attention outputs of a few query rows. Not submodular in general; it exists to
/// exercise the weak-submodularity diagnostics.

#include <Eigen/Core>
#include <memory>
#include <span>
#include <string>

#include "greedy/functions/set_function.hpp"

namespace subevict::greedy {

/// Ground set: the n keys (columns of `logits`, rows of `values`). For each query row i, the exact
/// output is o_i = Σ_j a_ij v_j with a_i = softmax(logits row i) over all n keys, and the output
/// over S is õ_i(S) = Σ_{j∈S} ã_ij v_j with ã_i the tracked attention over S (core/attention.hpp:
/// exactly 0 outside S). Convention for the empty set: õ_i(∅) = 0, so f(∅) = −Σ_i ‖o_i‖² (not 0),
/// and f(V) = 0 is the maximum. Neither monotone nor submodular in general.
///
/// The incremental state keeps per row the numerator N_i = Σ_{j∈S} e^{l_ij − m_i} v_j and the
/// denominator D_i = Σ_{j∈S} e^{l_ij − m_i} (m_i the row maximum over all n keys): O(rows · d) per
/// gain, add and remove. A remove that cancels most of D_i (below 1e−3 of its largest value since
/// the last rebuild) rebuilds N_i, D_i from the members, O(|S| · rows · d), so the relative
/// rounding error stays within ~1e3 eps. Keys whose logit lies more than ~700 below the row
/// maximum underflow to weight 0 (then a set made only of such keys reads as empty).
class AttentionFidelity final : public SetFunction {
 public:
  /// `logits`: rows × n scores s_ij (already scaled), finite; `values`: n × d. Throws
  /// std::invalid_argument when the shapes disagree, a matrix is empty or an entry is not finite.
  AttentionFidelity(Eigen::MatrixXd logits, Eigen::MatrixXd values);

  std::size_t ground_size() const override { return std::size_t(logits_.cols()); }
  /// Uses core tracked_attention per row: O(rows · (n + |S| · d)).
  double evaluate(std::span<const Element> set) const override;
  std::unique_ptr<SetState> empty_state() const override;
  std::string name() const override { return "attention-fidelity"; }

  /// The exact outputs o_i, one per row (rows × d).
  [[nodiscard]] const Eigen::MatrixXd& exact_outputs() const { return outputs_; }
  /// e^{l_ij − m_i} (rows × n), the unnormalized shifted weights the incremental state sums.
  [[nodiscard]] const Eigen::MatrixXd& shifted_weights() const { return shifted_; }
  [[nodiscard]] const Eigen::MatrixXd& values() const { return values_; }

 private:
  Eigen::MatrixXd logits_;
  Eigen::MatrixXd values_;
  Eigen::MatrixXd outputs_;
  Eigen::MatrixXd shifted_;
};

}  // namespace subevict::greedy
