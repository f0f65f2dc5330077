#pragma once
/// \file
/// Compactor (Chari & Van Durme 2025, arXiv 2507.08143; kvpress `CompactorPress`, registry name
/// "compactor"): the ridge leverage of the keys (geometric outliers) blended with non-causal,
/// chunked attention (what the tokens' own queries pay each key of their chunk).

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/input_error.hpp"
#include "greedy/eviction/policies/leverage.hpp"
#include "greedy/eviction/policies/non_causal_attention.hpp"
#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy::policies {

/// z-normalization of `x` in place: (x − mean) / max(std, 1e-6), std with the divisor |x| − 1;
/// all zeros when |x| < 2 (no spread to measure).
inline void z_normalize(std::vector<double>& x) {
  const std::size_t m = x.size();
  if (m < 2) {
    std::fill(x.begin(), x.end(), 0.0);
    return;
  }
  double mean = 0.0;
  for (double value : x) mean += value;
  mean /= double(m);
  double squares = 0.0;
  for (double value : x) squares += (value - mean) * (value - mean);
  const double spread = std::max(std::sqrt(squares / double(m - 1)), 1e-6);
  for (double& value : x) value = (value - mean) / spread;
}

/// Rule, with a = `sink_size_start`, b = `sink_size_end` (a + b ≤ k), C = `chunk_size` ≥ 1,
/// λ = `ridge` > 0 and β = `blending` (negative: the compression ratio of the tokens seen so far,
/// 1 − k/(i + 1) at step i and 1 − k/P at prefill: kvpress's default, the compression ratio of a
/// prefill of i + 1 tokens kept to k, with no dependence on tokens still to come):
/// - the protected tokens are the first a (tokens 0..a−1) and the last b of the set (tokens
///   i−b+1..i at step i, P−b..P−1 at prefill); M is the rest of G_i (the prompt at prefill), in
///   ascending order;
/// - leverage: h_t = ridge_leverage over M (the `leverage` policy's score, on the pre-RoPE keys
///   where the workload stores them, as kvpress, else on the keys after RoPE), z-normalized over M;
/// - attention: non_causal_chunked_attention over M with chunks of C (non_causal_attention.hpp:
///   each member attends with its own queries, unscaled, to its chunk; kvpress's zero padding of
///   a short last chunk; ‖v‖; the 3-wide average pool), z-normalized over M;
/// - score_t = β · leverage_t + attention_t.
/// Once full, evict the member of M with the smallest score (ties: lowest token; the new token is
/// protected while b ≥ 1). Prefill: the same over the prompt; keep the protected tokens and the
/// top k − a − b.
/// Differences from kvpress, which defines the press at prefill only: in streaming the scores are
/// those of the current set, recomputed at every eviction (as every set scorer here); the leverage
/// is exact where kvpress sketches the pre-RoPE keys with a random Gaussian d × 48 matrix (and
/// reads the keys after RoPE where the workload has no pre-RoPE tensors); and the z-scores are
/// taken per KV head (this policy sees one), where kvpress's mean() and std() span every KV head
/// of the layer: the blend's relative weight of the two halves then differs per head
/// (docs/eviction.md measures it).
class CompactorPolicy final : public SetScoredPolicy<CompactorPolicy> {
 public:
  CompactorPolicy(int sink_start, int sink_end, int chunk, double ridge, double blending)
      : start_(sink_start), end_(sink_end), chunk_(chunk), ridge_(ridge), blending_(blending) {}
  [[nodiscard]] std::string name() const override { return "compactor"; }
  // The rule (RankedPolicy hooks).
  void on_reset() {
    const int k = context().budget;
    if (start_ < 0 || end_ < 0 || start_ + end_ > k) {
      throw InputError("policy", "compactor: sink_size_start, sink_size_end",
                       "counts >= 0 with sink_size_start + sink_size_end <= budget " + std::to_string(k),
                       std::to_string(start_) + ", " + std::to_string(end_));
    }
    if (chunk_ < 1) throw InputError("policy", "compactor: chunk_size", ">= 1", std::to_string(chunk_));
    if (!(ridge_ > 0.0)) throw InputError("policy", "compactor: ridge", "a ridge > 0", std::to_string(ridge_));
    if (!std::isfinite(blending_)) {
      throw InputError("policy", "compactor: blending", "a finite weight (negative: the compression ratio)",
                       std::to_string(blending_));
    }
    vnorm_.clear();
    rows_added(0);
    seen_ = 0;
    score_.assign(std::size_t(context().tokens), 0.0);
  }
  void rows_added(int from) override { extend_row_norms(context().input->v, from, vnorm_); }
  [[nodiscard]] bool eligible(int step, Token t) const { return t >= start_ && t <= step - end_; }
  [[nodiscard]] Token scored_from() const { return start_; }
  void on_query(int i) { seen_ = i + 1; }

  /// score_ of the unprotected members (`members`: the set from token a on, ascending, its last b
  /// the protected recent ones).
  void score_members(const std::vector<Token>& members) {
    if (int(members.size()) <= end_) return;
    const std::vector<Token> m(members.begin(), members.end() - end_);
    std::vector<double> leverage = ridge_leverage(context().input->keys_before_rope(), m, ridge_);
    std::vector<double> attention = non_causal_chunked_attention(*context().input, m, chunk_, vnorm_);
    z_normalize(leverage);
    z_normalize(attention);
    const double beta = blending_ >= 0.0 ? blending_ : 1.0 - double(context().budget) / double(seen_);
    for (std::size_t r = 0; r < m.size(); ++r) score_[std::size_t(m[r])] = beta * leverage[r] + attention[r];
  }

 private:
  int start_, end_, chunk_;
  double ridge_, blending_;
  int seen_ = 0;  ///< tokens seen so far: the last query scored + 1 (P at prefill, i + 1 at step i)
  std::vector<double> vnorm_;
};

}  // namespace subevict::greedy::policies
