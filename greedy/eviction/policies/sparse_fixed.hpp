#pragma once
/// \file
/// The Sparse Transformer fixed pattern (Child et al. 2019) as an eviction rule.

#include <string>

#include "core/input_error.hpp"
#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy::policies {

/// Rule: the fixed pattern lets query i see its own block {t : floor(t/l) = floor(i/l)} and the
/// summary positions {t : t mod l ≥ l − c} of earlier blocks; both sets only lose members as i
/// grows, so the pattern is a valid irreversible cache. Once full, evict in the order: tokens
/// outside the pattern (oldest first), then summary tokens of earlier blocks (oldest first), then
/// the current block (oldest first). When the pattern exceeds k the newest summaries and the
/// current block survive; when it is smaller the cache holds the most recent other tokens too (a
/// cache evicts only when full). Prefill: the same order applied at step P − 1.
class SparseFixedPolicy final : public RankedPolicy<SparseFixedPolicy> {
 public:
  SparseFixedPolicy(int stride, int summary) : stride_(stride), summary_(summary) {}
  [[nodiscard]] std::string name() const override { return "sparse-fixed"; }
  // The rule (RankedPolicy hooks).
  void on_reset() {
    if (stride_ < 1 || summary_ < 1 || summary_ > stride_) {
      throw InputError("policy", "sparse-fixed: stride, summary", "stride >= 1 and 1 <= summary <= stride",
                       std::to_string(stride_) + ", " + std::to_string(summary_));
    }
  }
  /// 2: in the current block; 1: a summary position; 0: outside the pattern (evicted first).
  [[nodiscard]] double key(int step, Token t) const {
    if (t / stride_ == step / stride_) return 2.0;
    return t % stride_ >= stride_ - summary_ ? 1.0 : 0.0;
  }

 private:
  int stride_, summary_;
};

}  // namespace subevict::greedy::policies
