#pragma once
/// \file
/// H2O in FlexGen (FMInference/H2O h2o_flexgen/flexgen/pytorch_backend.py: _heavy_hitter_pruning
/// at prefill, _get_light_hitter per decode step; flex_opt.py derives the cache from hh_k).

#include <algorithm>
#include <string>

#include "greedy/eviction/policies/accumulated_attention.hpp"

namespace subevict::greedy::policies {

/// Rule: with hh = floor((k + 1) / 2) (FlexGen's cache holds 2 hh_k − 1 entries), acc += ã_i over
/// G_i; once full, the last hh positions (tokens > i − hh, the current one included) are kept and
/// the argmin of acc over the other members is evicted (ties: lowest token). Prefill: acc = the
/// prompt's accumulated full attention; keep the top min(hh, P − hh + 1) of tokens < P − hh + 1
/// plus the last hh − 1 tokens.
class H2oFlexgenPolicy final : public RankedPolicy<H2oFlexgenPolicy> {
 public:
  [[nodiscard]] std::string name() const override { return "h2o-flexgen"; }
  // The rule (RankedPolicy hooks).
  void on_reset() {
    hh_ = (context().budget + 1) / 2;
    acc_.reset(context());
  }
  void on_prefill() { acc_.add_prompt(context()); }
  void observe(const StepView& view) { acc_.add(view); }
  [[nodiscard]] double key(int, Token t) const { return acc_[t]; }
  [[nodiscard]] bool eligible(int step, Token t) const { return t <= step - hh_; }
  [[nodiscard]] int prefill_keep() const { return std::min(context().budget, 2 * hh_ - 1); }
  [[nodiscard]] bool prefill_eligible(Token t) const { return t < context().prefill - hh_ + 1; }

 private:
  int hh_ = 1;
  AccumulatedAttention acc_;
};

}  // namespace subevict::greedy::policies
