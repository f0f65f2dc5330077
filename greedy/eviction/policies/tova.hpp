#pragma once
/// \file
/// TOVA (Oren et al. 2024, "Transformers are Multi-State RNNs"): token omission via attention.

#include <string>
#include <vector>

#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy::policies {

/// Rule: once full, evict the member of G_i (the current token included) with the lowest
/// group-aggregated attention from the current query, ã_i (ties: lowest token); no history.
/// Prefill: keep the k largest entries of the last prompt row, agg_h a^h_{P−1}.
class TovaPolicy final : public RankedPolicy<TovaPolicy> {
 public:
  [[nodiscard]] std::string name() const override { return "tova"; }
  // The rule (RankedPolicy hooks).
  void on_reset() { current_.assign(std::size_t(context().tokens), 0.0); }
  void on_prefill() {
    const int last = context().prefill - 1;
    current_ = accumulated_full_attention(*context().input, context().aggregation, last, last + 1);
    current_.resize(std::size_t(context().tokens), 0.0);
  }
  void observe(const StepView& view) {
    for (std::size_t e = 0; e < view.tokens.size(); ++e) current_[std::size_t(view.tokens[e])] = view.attention[e];
  }
  [[nodiscard]] double key(int, Token t) const { return current_[std::size_t(t)]; }

 private:
  std::vector<double> current_;  // the current query's attention, by token
};

}  // namespace subevict::greedy::policies
