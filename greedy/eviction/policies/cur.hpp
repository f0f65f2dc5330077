#pragma once
/// \file
/// CurDKV (arXiv 2509.15038; kvpress `CURPress`, registry name "cur"): approximate leverage of the
/// keys and values by their squared norms, normalized in local windows of the cache.
/// Attention-free.

#include <algorithm>
#include <string>
#include <vector>

#include "core/input_error.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy::policies {

/// Rule, over the members M of G_i in ascending order (prefill: the prompt 0..P−1), with s =
/// `n_sink` (0 ≤ s < k): k2_t = ‖k_t‖², v2_t = ‖v_t‖²; with use_local_approximation = 1 each is
/// divided by its sum over the member's window of w = `local_window_size` consecutive positions of
/// M (positions [bw, (b + 1)w), the last window possibly shorter; a zero sum leaves 0); the score
/// is k2 (key), v2 (value), (k2 + v2) / 2 (kv_avg) or k2 · v2 (kv_product, the default), divided
/// by its sum over M (kvpress's normalization; it does not change the order). The first s
/// members, the tokens 0..s−1 (never evicted, so always the first s), are kept. Once full, evict
/// the non-sink member with the smallest score (ties: lowest token; the new token is a candidate).
/// Prefill: the same scores over the prompt; keep the sinks and the top k − s. Not supported:
/// kvpress's use_random_leverage (a random Gaussian projection of the keys and values first).
class CurPolicy final : public SetScoredPolicy<CurPolicy> {
 public:
  CurPolicy(int sinks, CurLeverage leverage, bool local, int window)
      : sinks_(sinks), leverage_(leverage), local_(local), window_(window) {}
  [[nodiscard]] std::string name() const override { return "cur"; }
  // The rule (RankedPolicy hooks).
  void on_reset() {
    if (sinks_ < 0 || sinks_ >= context().budget) {
      throw InputError("policy", "cur: n_sink", "0 <= n_sink < budget " + std::to_string(context().budget),
                       std::to_string(sinks_));
    }
    if (window_ < 1) throw InputError("policy", "cur: local_window_size", ">= 1", std::to_string(window_));
    k2_.clear();
    v2_.clear();
    rows_added(0);
    score_.assign(std::size_t(context().tokens), 0.0);
  }
  void rows_added(int from) override {
    const HeadGroup& in = *context().input;
    k2_.resize(std::size_t(in.k.rows()));
    v2_.resize(std::size_t(in.v.rows()));
    for (Eigen::Index t = from; t < in.k.rows(); ++t) {
      k2_[std::size_t(t)] = in.k.row(t).cast<double>().squaredNorm();
      v2_[std::size_t(t)] = in.v.row(t).cast<double>().squaredNorm();
    }
  }
  [[nodiscard]] bool eligible(int, Token t) const { return t >= sinks_; }

  void score_members(const std::vector<Token>& members) {
    const int m = int(members.size());
    std::vector<double> k2(static_cast<std::size_t>(m)), v2(static_cast<std::size_t>(m));
    for (int r = 0; r < m; ++r) k2[r] = k2_[std::size_t(members[r])], v2[r] = v2_[std::size_t(members[r])];
    if (local_) {
      for (int first = 0; first < m; first += window_) {
        const int last = std::min(m, first + window_);
        double sk = 0.0, sv = 0.0;
        for (int r = first; r < last; ++r) sk += k2[r], sv += v2[r];
        for (int r = first; r < last; ++r) {
          k2[r] = sk > 0.0 ? k2[r] / sk : 0.0;
          v2[r] = sv > 0.0 ? v2[r] / sv : 0.0;
        }
      }
    }
    std::vector<double> combined(static_cast<std::size_t>(m));
    double total = 0.0;
    for (int r = 0; r < m; ++r) {
      switch (leverage_) {
        case CurLeverage::kKey: combined[r] = k2[r]; break;
        case CurLeverage::kValue: combined[r] = v2[r]; break;
        case CurLeverage::kKvAvg: combined[r] = (k2[r] + v2[r]) / 2.0; break;
        case CurLeverage::kKvProduct: combined[r] = k2[r] * v2[r]; break;
      }
      total += combined[r];
    }
    for (int r = 0; r < m; ++r) score_[std::size_t(members[r])] = total > 0.0 ? combined[r] / total : 0.0;
  }

 private:
  int sinks_;
  CurLeverage leverage_;
  bool local_;
  int window_;
  std::vector<double> k2_, v2_;
};

}  // namespace subevict::greedy::policies
