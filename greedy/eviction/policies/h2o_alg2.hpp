#pragma once
/// \file
/// H2O Algorithm 2 with a concave transform h (theory.md §3, Remark D.15: one accumulator).

#include <string>

#include "greedy/functions/concave.hpp"
#include "greedy/eviction/policies/accumulated_attention.hpp"

namespace subevict::greedy::policies {

/// Rule: acc += ã_i over G_i, then evict argmax_v h(Σ_{s ∈ G_i \ {v}} acc_s) (ties: lowest token),
/// evaluated literally for every v. With one accumulator per token and h strictly increasing (all
/// three are), h(total − acc_v) is largest exactly where acc_v is smallest, so the choice equals
/// Algorithm 1's (h changes values, not the argmax, of a single eviction); the property tests check
/// this. Prefill: keep the k largest acc (maximizes h(Σ) for monotone h).
class H2oAlg2Policy final : public RankedPolicy<H2oAlg2Policy> {
 public:
  explicit H2oAlg2Policy(Concave h) : h_(h) {}
  [[nodiscard]] std::string name() const override {
    return h_ == Concave::kIdentity ? "h2o-alg2-linear" : "h2o-alg2-" + concave_name(h_);
  }
  // The rule (RankedPolicy hooks).
  void on_reset() {
    streaming_ = false;
    acc_.reset(context());
  }
  void on_prefill() { acc_.add_prompt(context()); }
  void observe(const StepView& view) {
    streaming_ = true;
    acc_.add(view);
    total_ = 0.0;
    for (Token t : view.tokens) total_ += acc_[t];
  }
  /// The argmax of F(G_i \ {v}) is the argmin of −F(G_i \ {v}). At prefill: the top k by acc.
  [[nodiscard]] double key(int, Token v) const {
    return streaming_ ? -concave_value(h_, total_ - acc_[v]) : acc_[v];
  }

 private:
  Concave h_;
  bool streaming_ = false;  // prefill (before the first step) ranks by acc itself
  double total_ = 0.0;
  AccumulatedAttention acc_;
};

}  // namespace subevict::greedy::policies
