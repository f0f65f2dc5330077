#pragma once
/// \file
/// Random eviction (seeded), the no-information baseline.

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/counter_rng.hpp"
#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy::policies {

/// Rule: once full, evict the r-th smallest token of S_{i−1} = G_i \ {i} (the new token stays),
/// r = floor(u |S_{i−1}|) with u = uniform(seed, random stream of (layer, KV head), i) (Philox,
/// reproducible and independent of everything else). Prefill: u_t = uniform(seed, prefill
/// stream, t); drop tokens in the order (u ascending, token ascending), keeping k.
class RandomPolicy final : public EvictionPolicy {
 public:
  [[nodiscard]] std::string name() const override { return "random"; }
  void reset(const PolicyContext& context) override {
    context_ = context;
    step_stream_ = policy_stream(PolicyStream::kRandomStep, context.input->layer, context.input->kv_head);
    prefill_stream_ = policy_stream(PolicyStream::kRandomPrefill, context.input->layer, context.input->kv_head);
  }
  [[nodiscard]] std::vector<Token> prefill() override {
    return keep_after_dropping(
        context_.prefill, context_.budget,
        [&](Token t) { return uniform(context_.seed, prefill_stream_, std::uint64_t(t)); },
        [](Token) { return true; });
  }
  [[nodiscard]] Token step(const StepView& view) override {
    if (!view.full) return kNoEviction;
    cached_.clear();
    for (Token t : view.tokens) {
      if (t != view.step) cached_.push_back(t);
    }
    const double u = uniform(context_.seed, step_stream_, std::uint64_t(view.step));
    const auto r = std::min(cached_.size() - 1, std::size_t(u * double(cached_.size())));
    std::nth_element(cached_.begin(), cached_.begin() + std::ptrdiff_t(r), cached_.end());
    return cached_[r];
  }
  [[nodiscard]] std::unique_ptr<EvictionPolicy> copy_onto(const HeadGroup& input) const override {
    auto copy = std::make_unique<RandomPolicy>(*this);
    copy->context_.input = &input;
    return copy;
  }

 private:
  PolicyContext context_;
  std::uint64_t step_stream_ = 0, prefill_stream_ = 0;
  std::vector<Token> cached_;
};

}  // namespace subevict::greedy::policies
