#pragma once
/// \file
/// KeyDiff (arXiv 2504.15364; kvpress `KeyDiffPress`, registry name "keydiff"):
/// keep the keys least similar to the cache's mean direction. Attention-free.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy::policies {

/// Rule: over a set M (G_i in streaming, the prompt 0..P−1 at prefill), with k̂_t = k_t / ‖k_t‖
/// (0 for a zero key) and the anchor a = (1/|M|) Σ_{t∈M} k̂_t (summed in ascending token order),
/// score_t = −cos(k_t, a) = −⟨k_t, a⟩ / (‖k_t‖ ‖a‖) (0 when ‖k_t‖ ‖a‖ = 0). Once full, evict the
/// member of G_i with the smallest score, i.e. the key most similar to the anchor (ties: lowest
/// token; the new token is a candidate). Prefill: the same scores over the prompt; keep the top k.
/// kvpress scores the whole cache once per compression; streaming recomputes the anchor over G_i
/// at every full step (KeyDiff's paper evicts block-wise, kvpress's BlockPress; one per step here).
class KeyDiffPolicy final : public SetScoredPolicy<KeyDiffPolicy> {
 public:
  [[nodiscard]] std::string name() const override { return "keydiff"; }
  // The rule (RankedPolicy hooks).
  void on_reset() {
    norm_.clear();
    score_.assign(std::size_t(context().tokens), 0.0);
    rows_added(0);
  }
  void rows_added(int from) override { extend_row_norms(context().input->k, from, norm_); }

  void score_members(const std::vector<Token>& members) {
    const ConstHeadMap& k = context().input->k;
    Eigen::VectorXd anchor = Eigen::VectorXd::Zero(k.cols());
    for (Token t : members) {
      if (norm_[std::size_t(t)] > 0.0) anchor += k.row(t).cast<double>().transpose() / norm_[std::size_t(t)];
    }
    anchor /= double(members.size());
    const double anchor_norm = anchor.norm();
    for (Token t : members) {
      const double denominator = norm_[std::size_t(t)] * anchor_norm;
      score_[std::size_t(t)] = denominator > 0.0 ? -k.row(t).cast<double>().transpose().dot(anchor) / denominator : 0.0;
    }
  }

 private:
  std::vector<double> norm_;
};

}  // namespace subevict::greedy::policies
