#pragma once
/// \file
/// SnapKV-style observation-window scoring (Li et al. 2024; NVIDIA/kvpress SnapKVPress).

#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include "core/input_error.hpp"
#include "greedy/eviction/policies/policy_support.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"

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
    // The window's rows start the sliding history of the streaming rule.
    for (int r = 0; r < window_; ++r) {
      Row row;
      const int size = candidates + r + 1;
      for (Token t = 0; t < size; ++t) row.tokens.push_back(t);
      for (const Eigen::MatrixXd& head : rows) {
        for (Token t = 0; t < size; ++t) row.attention.push_back(head(r, t));
      }
      remember(std::move(row));
    }
    return keep_after_dropping(
        prompt, ctx.budget, [&](Token t) { return score[t]; }, [&](Token t) { return t < candidates; });
  }
  // The streaming rule (RankedPolicy hooks).
  void on_reset() {
    if (window_ < 1 || window_ >= context().budget) {
      throw InputError("policy", "snapkv: observation_window",
                       "1 <= window < budget " + std::to_string(context().budget), std::to_string(window_));
    }
    if (kernel_ < 1 || kernel_ % 2 == 0) {
      throw InputError("policy", "snapkv: pooling_kernel", "an odd kernel >= 1", std::to_string(kernel_));
    }
    rows_.clear();
    score_.assign(std::size_t(context().tokens), 0.0);
    slot_.assign(std::size_t(context().tokens), -1);
  }
  void observe(const StepView& view) {
    remember({std::vector<Token>(view.tokens.begin(), view.tokens.end()),
              std::vector<double>(view.head_attention.begin(), view.head_attention.end())});
    if (!view.full) return;
    // The candidates ascending; per head their window sums, pooled, aggregated over the group.
    std::vector<Token> candidates;
    for (Token t : view.tokens) {
      if (eligible(view.step, t)) candidates.push_back(t);
    }
    std::sort(candidates.begin(), candidates.end());
    for (std::size_t c = 0; c < candidates.size(); ++c) slot_[candidates[c]] = int(c);
    const int heads = view.heads;
    std::vector<std::vector<double>> sums(std::size_t(heads), std::vector<double>(candidates.size(), 0.0));
    for (const Row& row : rows_) {  // oldest first: a fixed summation order
      const std::size_t size = row.tokens.size();
      for (std::size_t e = 0; e < size; ++e) {
        const int c = slot_[row.tokens[e]];
        if (c < 0) continue;
        for (int h = 0; h < heads; ++h) sums[std::size_t(h)][std::size_t(c)] += row.attention[std::size_t(h) * size + e];
      }
    }
    for (Token t : candidates) slot_[t] = -1;
    for (auto& head : sums) head = pool(head);
    std::vector<double> weights(static_cast<std::size_t>(heads));
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      for (int h = 0; h < heads; ++h) weights[std::size_t(h)] = sums[std::size_t(h)][c];
      score_[candidates[c]] = aggregate(context().aggregation, weights);
    }
  }
  [[nodiscard]] double key(int, Token t) const { return score_[std::size_t(t)]; }
  [[nodiscard]] bool eligible(int step, Token t) const { return t <= step - window_; }

 private:
  /// One step's attention: its members and, per query head h, the weights at [h |tokens|, (h + 1) |tokens|).
  struct Row {
    std::vector<Token> tokens;
    std::vector<double> attention;
  };
  void remember(Row row) {
    rows_.push_back(std::move(row));
    if (int(rows_.size()) > window_) rows_.pop_front();
  }
  [[nodiscard]] std::vector<double> pool(const std::vector<double>& x) const {
    if (pooling_ == Pooling::kNone || kernel_ == 1) return x;
    return pool_positions(x, kernel_, pooling_ == Pooling::kMax);
  }
  int window_;
  Pooling pooling_;
  int kernel_;
  std::deque<Row> rows_;
  std::vector<double> score_;  ///< per token, valid for the candidates of the last full step
  std::vector<int> slot_;      ///< per token: its position among the current candidates, −1 otherwise
};

}  // namespace subevict::greedy::policies
