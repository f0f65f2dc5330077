#pragma once
/// \file
/// SnapKV-style observation-window scoring (Li et al. 2024; NVIDIA/kvpress SnapKVPress).

#include <algorithm>
#include <string>
#include <vector>

#include "core/input_error.hpp"
#include "greedy/eviction/policies/attention_window.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy::policies {

/// Rule: prefill (SnapKV proper): for each query head, score_t = Σ_{i=P−w}^{P−1} a_it over the
/// prompt tokens t < P − w (full attention of the last w prompt queries), pooled per head (kernel K
/// odd, p = K / 2: max over [t − p, t + p] ∩ [0, P − w), or that sum divided by K, zero padding
/// counted as torch's avg_pool1d does; kNone or K = 1: no pooling), then
/// aggregated over the group (kvpress averages; here the GroupAggregation rule); keep the top
/// k − w plus the window P − w .. P − 1. Requires w < k. Streaming (SnapKV itself never evicts
/// while decoding; this is its rule applied per step with a sliding window): for each query head,
/// score_t = Σ_{s=i−w+1}^{i} attention of query s on t (the attention step s computed: full for
/// prompt steps, tracked over G_s afterwards, 0 where t was not visible) over the candidates, the
/// members t ≤ i − w; pooled per head along the candidates in ascending token order as at
/// prefill (neighbours are the adjacent candidates); aggregated over the group; the last w
/// positions are kept and the candidate with the smallest score is evicted (ties: lowest). At the
/// first full step (G_k = 0..k, every attention full) this is the prefill rule of a prompt of
/// k + 1 tokens, kvpress's SnapKVPress.
class SnapKvPolicy final : public RankedPolicy<SnapKvPolicy> {
 public:
  SnapKvPolicy(int window, Pooling pooling, int kernel)
      : window_(window), pooling_(pooling), kernel_(kernel) {}
  [[nodiscard]] std::string name() const override { return "snapkv"; }
  /// SnapKV's own prefill rule (observation window, pooling), not the streaming key at P − 1.
  [[nodiscard]] std::vector<Token> prefill() override {
    const PolicyContext& ctx = context();
    const int prompt = ctx.prefill;
    const int candidates = prompt - window_;
    const std::vector<Eigen::MatrixXd> rows = attention_rows(*ctx.input, candidates, window_);
    // Per head: observation sums over the candidates, pooled.
    std::vector<std::vector<double>> pooled;
    for (const Eigen::MatrixXd& head : rows) {
      std::vector<double> sums(std::size_t(candidates), 0.0);
      for (int t = 0; t < candidates; ++t) sums[t] = head.col(t).sum();
      pooled.push_back(pool(sums));
    }
    std::vector<double> score(static_cast<std::size_t>(candidates)), weights(pooled.size());
    for (int t = 0; t < candidates; ++t) {
      for (std::size_t h = 0; h < pooled.size(); ++h) weights[h] = pooled[h][t];
      score[t] = aggregate(ctx.aggregation, weights);
    }
    std::vector<Token> keep = keep_after_dropping(
        prompt, ctx.budget, [&](Token t) { return score[t]; },
        [&](Token t) { return t < candidates; });
    // The window's rows start the sliding history of the streaming rule (the kept tokens' weights).
    std::vector<Token> seen;
    std::vector<double> weights_seen;
    for (int r = 0; r < window_; ++r) {
      seen.clear();
      weights_seen.clear();
      for (Token t : keep) {
        if (t <= candidates + r) seen.push_back(t);
      }
      for (const Eigen::MatrixXd& head : rows) {
        for (Token t : seen) weights_seen.push_back(head(r, t));
      }
      history_.record(candidates + r, seen, weights_seen);
    }
    return keep;
  }
  // The streaming rule (RankedPolicy hooks).
  void on_reset() {
    if (window_ < 1 || window_ >= context().budget) {
      throw InputError("policy", "snapkv: observation_window",
                       "1 <= window < budget " + std::to_string(context().budget),
                       std::to_string(window_));
    }
    if (kernel_ < 1 || kernel_ % 2 == 0) {
      throw InputError("policy", "snapkv: pooling_kernel", "an odd kernel >= 1",
                       std::to_string(kernel_));
    }
    history_.reset(window_, context().input->group_size(), context().tokens, context().budget + 1);
    score_.assign(std::size_t(context().tokens), 0.0);
  }
  void observe(const StepView& view) {
    history_.record(view.step, view.tokens, view.head_attention);
    if (!view.full) return;
    // The candidates ascending; per head their window sums, pooled, aggregated over the group.
    const std::span<const Token> members = history_.members();
    const auto candidates = members.first(std::size_t(
        std::upper_bound(members.begin(), members.end(), view.step - window_) - members.begin()));
    history_.sums(candidates, sums_);
    for (auto& head : sums_) head = pool(head);
    const int heads = view.heads;
    std::vector<double> weights(static_cast<std::size_t>(heads));
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      for (int h = 0; h < heads; ++h) weights[std::size_t(h)] = sums_[std::size_t(h)][c];
      score_[candidates[c]] = aggregate(context().aggregation, weights);
    }
  }
  [[nodiscard]] double key(int, Token t) const { return score_[std::size_t(t)]; }
  [[nodiscard]] bool eligible(int step, Token t) const { return t <= step - window_; }

 private:
  [[nodiscard]] std::vector<double> pool(const std::vector<double>& x) const {
    if (pooling_ == Pooling::kNone || kernel_ == 1) return x;
    return pool_positions(x, kernel_, pooling_ == Pooling::kMax);
  }
  int window_;
  Pooling pooling_;
  int kernel_;
  AttentionWindow history_;                ///< the last w steps' attention per head
  std::vector<std::vector<double>> sums_;  ///< per head, the candidates' window sums
  std::vector<double> score_;  ///< per token, valid for the candidates of the last full step
};

}  // namespace subevict::greedy::policies
