#pragma once
/// \file
/// kvpress `ObservedAttentionPress` (registry name "observed_attention"): the MEAN attention a
/// token received over the queries that saw it (H2O's accumulated score divided by the number of
/// those queries).

#include <string>

#include "greedy/eviction/policies/accumulated_attention.hpp"

namespace subevict::greedy::policies {

/// Rule: acc_t += ã_it over G_i as in h2o-alg1; a member t of G_i was seen by every query from its
/// arrival to i, so its observed attention is acc_t / (i − t + 1); once full, evict the smallest
/// (ties: lowest token; the new token is a candidate, with score ã_ii). Prefill: acc_t = the
/// prompt's accumulated full attention (group-aggregated per weight), score acc_t / (P − t); keep
/// the top k. kvpress averages over the group after dividing; with aggregation mean (kvpress's)
/// the two orders give the same score, since both steps are linear.
class ObservedAttentionPolicy final : public RankedPolicy<ObservedAttentionPolicy> {
 public:
  [[nodiscard]] std::string name() const override { return "observed_attention"; }
  // The rule (RankedPolicy hooks).
  void on_reset() { acc_.reset(context()); }
  void on_prefill() { acc_.add_prompt(context()); }
  void observe(const StepView& view) { acc_.add(view); }
  [[nodiscard]] double key(int step, Token t) const { return acc_[t] / double(step - t + 1); }

 private:
  AccumulatedAttention acc_;
};

}  // namespace subevict::greedy::policies
