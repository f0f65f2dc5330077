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
/// while decoding; this is its rule applied per step with a sliding window, without pooling):
/// score_t = Σ_{s=i−w+1}^{i} agg_h attention of query s on t (the attention step s computed:
/// full for prompt steps, tracked over G_s afterwards, 0 where t was not visible); the last w
/// positions are kept and the smallest score among the other members is evicted (ties: lowest).
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
      for (Token t = 0; t <= candidates + r; ++t) {
        for (std::size_t h = 0; h < rows.size(); ++h) weights[h] = rows[h](r, t);
        row.tokens.push_back(t);
        row.attention.push_back(aggregate(ctx.aggregation, weights));
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
    member_.assign(std::size_t(context().tokens), 0);
  }
  void observe(const StepView& view) {
    remember({std::vector<Token>(view.tokens.begin(), view.tokens.end()),
              std::vector<double>(view.attention.begin(), view.attention.end())});
    if (!view.full) return;
    for (Token t : view.tokens) score_[t] = 0.0;
    for (Token t : view.tokens) member_[t] = 1;
    for (const Row& row : rows_) {  // oldest first: a fixed summation order
      for (std::size_t e = 0; e < row.tokens.size(); ++e) {
        if (member_[row.tokens[e]]) score_[row.tokens[e]] += row.attention[e];
      }
    }
    for (Token t : view.tokens) member_[t] = 0;
  }
  [[nodiscard]] double key(int, Token t) const { return score_[std::size_t(t)]; }
  [[nodiscard]] bool eligible(int step, Token t) const { return t <= step - window_; }

 private:
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
  std::vector<double> score_;
  std::vector<char> member_;
};

}  // namespace subevict::greedy::policies
