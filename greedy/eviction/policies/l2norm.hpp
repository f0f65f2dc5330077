#pragma once
/// \file
/// L2-norm keys (Devoto et al., arXiv 2406.11430; kvpress KnormPress scores −‖k‖): attention-free.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy::policies {

/// Rule: once full, evict the member of G_i with the largest key norm ‖k_t‖₂ (ties: lowest token),
/// so the lowest-norm keys are kept; attention is never read. In a skipped layer nothing is
/// compressed: the simulator runs that layer with budget n (the paper's "skip the first two
/// layers" spends more memory there than k). Prefill: keep the k lowest norms.
class L2NormPolicy final : public RankedPolicy<L2NormPolicy> {
 public:
  /// `name`: "l2norm", or "knorm" for kvpress's KnormPress (no skipped layers).
  explicit L2NormPolicy(std::vector<int> skipped_layers, std::string name = "l2norm")
      : skipped_(std::move(skipped_layers)), name_(std::move(name)) {}
  [[nodiscard]] std::string name() const override { return name_; }
  [[nodiscard]] bool compresses() const override { return compresses_; }
  // The rule (RankedPolicy hooks).
  void on_reset() {
    norm_.clear();
    rows_added(0);
    compresses_ = std::find(skipped_.begin(), skipped_.end(), context().input->layer) == skipped_.end();
  }
  void rows_added(int from) override { extend_row_norms(context().input->k, from, norm_); }
  [[nodiscard]] double key(int, Token t) const { return -norm_[std::size_t(t)]; }

 private:
  std::vector<int> skipped_;
  std::string name_;
  bool compresses_ = true;
  std::vector<double> norm_;
};

}  // namespace subevict::greedy::policies
