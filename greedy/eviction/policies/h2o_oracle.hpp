#pragma once
/// \file
/// ORACLE: H2O's whole-prompt non-causal variant (FMInference/H2O h2o_hf/utils_lm_eval/
/// modify_llama.py: heavy hitters from attention summed over ALL query rows, future ones included).

#include <string>
#include <vector>

#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy::policies {

/// Rule (an oracle, not a causal policy): score_t = Σ_{i=0}^{n−1} agg_h a^h_it, the full causal
/// attention token t receives from every query of the whole sequence (future queries included);
/// heavy/recent split as h2o; once full, the last `recent` positions are kept and the member with
/// the smallest score among the others is evicted (ties: lowest token). With static scores this
/// keeps, outside the recent window, the top `heavy` tokens of the prefix by score, which contains
/// the lm_eval mask's heavy set restricted to the prefix. Prefill: the same rule at once.
class H2oOraclePolicy final : public RankedPolicy<H2oOraclePolicy> {
 public:
  H2oOraclePolicy(double heavy_ratio, int heavy, int recent)
      : heavy_ratio_(heavy_ratio), heavy_(heavy), recent_(recent) {}
  [[nodiscard]] std::string name() const override { return "h2o-oracle"; }
  [[nodiscard]] bool is_oracle() const override { return true; }
  // The rule (RankedPolicy hooks).
  void on_reset() {
    recent_size_ = split_budget(context().budget, heavy_ratio_, heavy_, recent_, "h2o-oracle").recent;
    score_ = accumulated_full_attention(*context().input, context().aggregation, 0, context().tokens);
  }
  [[nodiscard]] double key(int, Token t) const { return score_[std::size_t(t)]; }
  [[nodiscard]] bool eligible(int step, Token t) const { return t <= step - recent_size_; }

 private:
  double heavy_ratio_;
  int heavy_, recent_, recent_size_ = 0;
  std::vector<double> score_;
};

}  // namespace subevict::greedy::policies
