#pragma once
/// \file
/// H2O's accumulated attention score, shared by every H2O variant: acc_t is the sum, over the
/// queries that saw token t, of the group-aggregated attention t received (tracked attention ã in
/// streaming steps, full attention a in prefill steps).

#include <vector>

#include "greedy/eviction/policies/eviction_policy.hpp"
#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy::policies {

class AccumulatedAttention {
 public:
  /// All scores 0 for n tokens.
  void reset(const PolicyContext& context) { acc_.assign(std::size_t(context.tokens), 0.0); }
  /// acc_t += ã_it for every member t of G_i (the current step's attention, before any eviction).
  void add(const StepView& view) {
    for (std::size_t e = 0; e < view.tokens.size(); ++e) acc_[view.tokens[e]] += view.attention[e];
  }
  /// acc_t = Σ_{i < P} agg_h a^h_it: the prompt's full attention (prefill steps 0..P−1).
  void add_prompt(const PolicyContext& context) {
    const std::vector<double> prompt =
        accumulated_full_attention(*context.input, context.aggregation, 0, context.prefill);
    for (std::size_t t = 0; t < prompt.size(); ++t) acc_[t] += prompt[t];
  }
  [[nodiscard]] double operator[](Token t) const { return acc_[std::size_t(t)]; }

 private:
  std::vector<double> acc_;
};

}  // namespace subevict::greedy::policies
