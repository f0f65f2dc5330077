#pragma once
/// \file
/// H2O Algorithm 1 (exact form, theory.md §3).

#include <string>

#include "greedy/eviction/policies/accumulated_attention.hpp"

namespace subevict::greedy::policies {

/// Rule: acc += ã_i over G_i, then evict argmax_v F(G_i \ {v}) with F(T) = Σ_{s∈T} acc_s, i.e. the
/// member of G_i with the smallest accumulated score (ties: lowest token). Prefill: acc = the
/// prompt's accumulated full attention; keep the top k.
class H2oAlg1Policy final : public RankedPolicy<H2oAlg1Policy> {
 public:
  [[nodiscard]] std::string name() const override { return "h2o-alg1"; }
  // The rule (RankedPolicy hooks).
  void on_reset() { acc_.reset(context()); }
  void on_prefill() { acc_.add_prompt(context()); }
  void observe(const StepView& view) { acc_.add(view); }
  [[nodiscard]] double key(int, Token t) const { return acc_[t]; }

 private:
  AccumulatedAttention acc_;
};

}  // namespace subevict::greedy::policies
