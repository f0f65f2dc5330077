#pragma once
/// \file
/// Statistical leverage of the keys (Chari & Van Durme 2025, "Compactor", arXiv 2507.08143;
/// kvpress `LeverageScorePress`, name "leverage" here): keep the geometric outliers among the
/// keys. Attention-free.

#include <Eigen/Cholesky>
#include <algorithm>
#include <string>
#include <vector>

#include "core/input_error.hpp"
#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy::policies {

/// The ridge leverage h_t = x_tᵀ (XᵀX + λI)⁻¹ x_t of each member t of `members` (any order; the
/// result is aligned with it), X the |M| × d matrix of the keys k_t (rows of `keys`) centred on
/// their mean (summed in the order of `members`). Requires ridge > 0 and a non-empty set.
inline std::vector<double> ridge_leverage(const ConstHeadMap& keys, const std::vector<Token>& members, double ridge) {
  const Eigen::Index m = Eigen::Index(members.size()), d = keys.cols();
  Eigen::MatrixXd x(m, d);
  for (Eigen::Index r = 0; r < m; ++r) x.row(r) = keys.row(members[std::size_t(r)]).cast<double>();
  Eigen::RowVectorXd mean = Eigen::RowVectorXd::Zero(d);
  for (Eigen::Index r = 0; r < m; ++r) mean += x.row(r);
  mean /= double(m);
  x.rowwise() -= mean;
  Eigen::MatrixXd gram(d, d);
  gram.noalias() = x.transpose().lazyProduct(x);  // lazy: never Eigen's threaded GEMM
  gram.diagonal().array() += ridge;
  const Eigen::MatrixXd inverse = gram.llt().solve(Eigen::MatrixXd::Identity(d, d));
  const Eigen::MatrixXd projected = x.lazyProduct(inverse);  // rows x_tᵀ (XᵀX + λI)⁻¹
  std::vector<double> h(static_cast<std::size_t>(m));
  for (Eigen::Index r = 0; r < m; ++r) h[std::size_t(r)] = projected.row(r).dot(x.row(r));
  return h;
}

/// Rule: over a set M (G_i in streaming, the prompt 0..P−1 at prefill), X is the |M| × d matrix of
/// the centred keys x_t = k_t − k̄ (the pre-RoPE keys, as kvpress, where the workload stores them,
/// HeadGroup::keys_before_rope; else the keys after RoPE) (k̄ the mean key of M, summed in ascending token order) and the
/// leverage of t is h_t = x_tᵀ (XᵀX + λI)⁻¹ x_t (ridge λ > 0: `ridge`, default 1e-2, absolute).
/// Once full, evict the member of G_i with the smallest leverage (ties: lowest token; the new
/// token is a candidate). Prefill: the same scores over the prompt; keep the top k.
/// Differences from kvpress, which approximates these scores: it sketches the keys with a random
/// Gaussian d × 48 matrix Φ (here the exact d-dimensional scores: d ≤ 256, so no sketch is
/// needed) and reads pre-RoPE keys always (here where the workload holds them; otherwise the keys
/// after RoPE). Its Cholesky always starts with the jitter 1e-2 on the sketched Gram matrix
/// (ΦᵀXᵀXΦ + 10⁻² I, growing tenfold only when the factorization fails), the ridge λ = 1e-2 here;
/// with Φ the identity embedding of R^d (d ≤ 48) its scores are these. It z-normalizes the scores
/// over the layer, an increasing map that does not change the choice.
class LeveragePolicy final : public SetScoredPolicy<LeveragePolicy> {
 public:
  explicit LeveragePolicy(double ridge) : ridge_(ridge) {}
  [[nodiscard]] std::string name() const override { return "leverage"; }
  // The rule (RankedPolicy hooks).
  void on_reset() {
    if (!(ridge_ > 0.0)) throw InputError("policy", "leverage: ridge", "a ridge > 0", std::to_string(ridge_));
    score_.assign(std::size_t(context().tokens), 0.0);
  }

  void score_members(const std::vector<Token>& members) {
    const std::vector<double> h = ridge_leverage(context().input->keys_before_rope(), members, ridge_);
    for (std::size_t r = 0; r < members.size(); ++r) score_[std::size_t(members[r])] = h[r];
  }

 private:
  double ridge_;
};

}  // namespace subevict::greedy::policies
