#pragma once
/// \file
/// StreamingLLM (Xiao et al. 2023): attention sinks plus a recent window.

#include <string>
#include <utility>

#include "core/input_error.hpp"
#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy::policies {

/// Rule: the first s tokens (sinks) are never evicted; once full, evict the oldest non-sink member
/// of G_i, so S_i = {0..s−1} ∪ the last k − s tokens. Requires s < k. Prefill: keep the sinks and
/// tokens P − (k − s) .. P − 1.
class StreamingLlmPolicy final : public RankedPolicy<StreamingLlmPolicy> {
 public:
  /// `name`: "streamingllm", or "streaming_llm" for kvpress's StreamingLLMPress (same rule).
  explicit StreamingLlmPolicy(int sinks, std::string name = "streamingllm")
      : sinks_(sinks), name_(std::move(name)) {}
  [[nodiscard]] std::string name() const override { return name_; }
  // The rule (RankedPolicy hooks).
  void on_reset() {
    if (sinks_ < 0 || sinks_ >= context().budget) {
      throw InputError("policy", name_ + ": sinks", "0 <= sinks < budget " + std::to_string(context().budget),
                       std::to_string(sinks_));
    }
  }
  [[nodiscard]] double key(int, Token) const { return 0.0; }
  [[nodiscard]] bool eligible(int, Token t) const { return t >= sinks_; }

 private:
  int sinks_;
  std::string name_;
};

}  // namespace subevict::greedy::policies
