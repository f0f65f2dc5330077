#pragma once
/// \file
/// Non-causal chunked attention (Chari & Van Durme 2025, "Compactor", arXiv 2507.08143; kvpress
/// `NonCausalAttnPress`, registry name "non_causal_attention"): what the members' own queries,
/// attending without a causal mask inside chunks of consecutive members, pay each member, times
/// its value norm. Compactor's attention half (compactor.hpp).

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/input_error.hpp"
#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy::policies {

/// The logit kvpress's NonCausalAttnPress gives a padding position of the last chunk (its
/// masked_fill value): padding keys enter every softmax of that chunk with this logit, and
/// padding queries (zero vectors: logit 0 on every member) attend too. Not −∞: kvpress's padding
/// is not masked out.
inline constexpr double kChunkPaddingLogit = -1e-9;

/// A_t ‖v_t‖ averaged over the neighbours (t−1, t, t+1) of `m` (zeros beyond its ends, divisor
/// always 3), aligned with `m` (ascending tokens), `vnorm` the value norms per token. A_t: `m` is
/// cut into chunks of `chunk` consecutive members; a last chunk of len < chunk members is padded,
/// as kvpress pads it, with chunk − len zero keys and zero queries; for each query head of `in`
/// and each query s of a chunk (members and padding), p_s = softmax over the chunk's keys of the
/// raw ⟨q_s, k_t⟩ (no score scale), padding keys at kChunkPaddingLogit, padding queries at logit
/// 0 on the members; A_t = mean over the query heads of Σ_s p_s(t). Requires chunk ≥ 1.
inline std::vector<double> non_causal_chunked_attention(const HeadGroup& in, const std::vector<Token>& m, int chunk,
                                                        const std::vector<double>& vnorm) {
  const std::size_t size = m.size();
  const Eigen::Index d = in.k.cols();
  std::vector<double> column(size, 0.0);
  for (std::size_t first = 0; first < size; first += std::size_t(chunk)) {
    const Eigen::Index len = Eigen::Index(std::min(size, first + std::size_t(chunk)) - first);
    const Eigen::Index pad = Eigen::Index(chunk) - len;  // > 0 only for a short last chunk
    Eigen::MatrixXd keys(len, d), queries(len, d);
    for (Eigen::Index r = 0; r < len; ++r) keys.row(r) = in.k.row(m[first + std::size_t(r)]).cast<double>();
    for (const ConstHeadMap& q : in.q) {
      for (Eigen::Index r = 0; r < len; ++r) queries.row(r) = q.row(m[first + std::size_t(r)]).cast<double>();
      Eigen::MatrixXd logits(len, len);
      logits.noalias() = queries.lazyProduct(keys.transpose());  // row s: <q_s, k_t> over the chunk
      for (Eigen::Index s = 0; s < len; ++s) {
        const double top = pad > 0 ? std::max(logits.row(s).maxCoeff(), kChunkPaddingLogit) : logits.row(s).maxCoeff();
        Eigen::ArrayXd p = (logits.row(s).array() - top).exp().transpose();
        const double total = p.sum() + double(pad) * std::exp(kChunkPaddingLogit - top);
        for (Eigen::Index t = 0; t < len; ++t) column[first + std::size_t(t)] += p[t] / total;
      }
      if (pad > 0) {  // each padding query: logit 0 on the len members, kChunkPaddingLogit on the pad keys
        const double share = 1.0 / (double(len) + double(pad) * std::exp(kChunkPaddingLogit));
        for (Eigen::Index t = 0; t < len; ++t) column[first + std::size_t(t)] += double(pad) * share;
      }
    }
  }
  std::vector<double> weighted(size);
  for (std::size_t r = 0; r < size; ++r) weighted[r] = column[r] / double(in.q.size()) * vnorm[std::size_t(m[r])];
  return pool_positions(weighted, 3, false);
}

/// Rule, with C = `chunk_size` ≥ 1: over M = G_i (the prompt at prefill), in ascending order,
/// score_t = non_causal_chunked_attention(M, C) (each member attends with its own query to its
/// chunk, later members included; kvpress's padding of a short last chunk). Once full, evict the
/// member with the smallest score (ties: lowest token; the new token is a candidate). Prefill: the
/// same over the prompt; keep the top k. kvpress z-normalizes the scores over the layer, an
/// increasing map that keeps every KV head's order. kvpress defines the press at prefill only; in
/// streaming the scores are those of the current set, recomputed at every eviction.
class NonCausalAttentionPolicy final : public SetScoredPolicy<NonCausalAttentionPolicy> {
 public:
  explicit NonCausalAttentionPolicy(int chunk) : chunk_(chunk) {}
  [[nodiscard]] std::string name() const override { return "non_causal_attention"; }
  // The rule (RankedPolicy hooks).
  void on_reset() {
    if (chunk_ < 1) throw InputError("policy", "non_causal_attention: chunk_size", ">= 1", std::to_string(chunk_));
    vnorm_.clear();
    rows_added(0);
    score_.assign(std::size_t(context().tokens), 0.0);
  }
  void rows_added(int from) override { extend_row_norms(context().input->v, from, vnorm_); }
  void score_members(const std::vector<Token>& members) {
    const std::vector<double> a = non_causal_chunked_attention(*context().input, members, chunk_, vnorm_);
    for (std::size_t r = 0; r < members.size(); ++r) score_[std::size_t(members[r])] = a[r];
  }

 private:
  int chunk_;
  std::vector<double> vnorm_;
};

}  // namespace subevict::greedy::policies
