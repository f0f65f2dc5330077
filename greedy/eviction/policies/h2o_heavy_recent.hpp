#pragma once
/// \file
/// H2O as deployed: the real-drop cache of FMInference/H2O (h2o_hf/utils_real_drop/modify_llama.py,
/// H2OKVCache_LayerWise), one KV head of it.

#include <string>

#include "greedy/eviction/policies/accumulated_attention.hpp"

namespace subevict::greedy::policies {

/// Rule: budget k = heavy + recent (absolute sizes, or heavy = floor(heavy_ratio k)); acc += ã_i
/// over G_i; once full, the last `recent` positions (tokens > i − recent, the current one
/// included) are never evicted and the member with the smallest acc among the others is evicted
/// (ties: lowest token); this keeps the `heavy` top-scoring tokens outside the recent window, as
/// the real-drop cache's top-k does with one token over budget. Prefill: acc = the prompt's
/// accumulated full attention; keep the top `heavy` of tokens < P − recent plus the last `recent`.
class H2oHeavyRecentPolicy final : public RankedPolicy<H2oHeavyRecentPolicy> {
 public:
  H2oHeavyRecentPolicy(double heavy_ratio, int heavy, int recent)
      : heavy_ratio_(heavy_ratio), heavy_(heavy), recent_(recent) {}
  [[nodiscard]] std::string name() const override { return "h2o"; }
  // The rule (RankedPolicy hooks).
  void on_reset() {
    split_ = split_budget(context().budget, heavy_ratio_, heavy_, recent_, "h2o");
    acc_.reset(context());
  }
  void on_prefill() { acc_.add_prompt(context()); }
  void observe(const StepView& view) { acc_.add(view); }
  [[nodiscard]] double key(int, Token t) const { return acc_[t]; }
  [[nodiscard]] bool eligible(int step, Token t) const { return t <= step - split_.recent; }

 private:
  double heavy_ratio_;
  int heavy_, recent_;
  HeavyRecent split_;
  AccumulatedAttention acc_;
};

}  // namespace subevict::greedy::policies
