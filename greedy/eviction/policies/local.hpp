#pragma once
/// \file
/// Local attention as a cache: the recent window only (the "Local" baseline of the H2O paper).

#include <string>

#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy::policies {

/// Rule: once full, evict the oldest member of G_i (the lowest token), so S_i = the last k tokens.
/// Prefill: keep tokens P − k .. P − 1.
class LocalPolicy final : public RankedPolicy<LocalPolicy> {
 public:
  [[nodiscard]] std::string name() const override { return "local"; }
  // The rule (RankedPolicy hooks): equal keys, so the lowest token goes.
  [[nodiscard]] double key(int, Token) const { return 0.0; }
};

}  // namespace subevict::greedy::policies
