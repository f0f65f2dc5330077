#pragma once
/// \file
/// The Sparse Transformer strided pattern (Child et al. 2019) as an eviction rule.

#include <string>

#include "core/input_error.hpp"
#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy::policies {

/// Rule: the strided pattern lets query i see its last w positions and every l-th position
/// before; a cache cannot follow offsets relative to i (a token evicted when it falls off one
/// residue class would be needed again), so the cache keeps the fixed grid {t : t mod l = 0} plus
/// the window {t > i − w}. Once full, evict in the order: tokens outside both (oldest first), then
/// grid tokens outside the window (oldest first), then window tokens (oldest first). When the
/// pattern exceeds k the newest grid tokens and the window survive; when it is smaller the cache
/// holds the most recent other tokens too (a cache evicts only when full). Prefill: the same
/// order applied at step P − 1.
class SparseStridedPolicy final : public RankedPolicy<SparseStridedPolicy> {
 public:
  SparseStridedPolicy(int stride, int window) : stride_(stride), window_(window == 0 ? stride : window) {}
  [[nodiscard]] std::string name() const override { return "sparse-strided"; }
  // The rule (RankedPolicy hooks).
  void on_reset() {
    if (stride_ < 1 || window_ < 0) {
      throw InputError("policy", "sparse-strided: stride, window", "stride >= 1 and window >= 0",
                       std::to_string(stride_) + ", " + std::to_string(window_));
    }
  }
  /// 2: in the window; 1: on the grid; 0: neither (evicted first).
  [[nodiscard]] double key(int step, Token t) const {
    if (t > step - window_) return 2.0;
    return t % stride_ == 0 ? 1.0 : 0.0;
  }

 private:
  int stride_, window_;
};

}  // namespace subevict::greedy::policies
