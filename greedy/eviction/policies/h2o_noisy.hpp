#pragma once
/// \file
/// ε-noisy H2O (theory.md §3): Algorithm 1 with a noisy score oracle, to exercise Corollary D.18.

#include <string>

#include "core/counter_rng.hpp"
#include "greedy/eviction/policies/accumulated_attention.hpp"

namespace subevict::greedy::policies {

/// Rule: acc += ã_i over G_i (exact); once full, evict the member minimizing acc_t + η_it with
/// η_it = ε (2 u − 1), u = uniform(seed, noise stream of (layer, KV head), i n + t) (Philox: fresh,
/// bounded |η| ≤ ε, reproducible); ties: lowest token. Prefill: acc = the prompt's accumulated full
/// attention; keep the top k of acc_t + η_{P−1,t}.
class H2oNoisyPolicy final : public RankedPolicy<H2oNoisyPolicy> {
 public:
  explicit H2oNoisyPolicy(double epsilon) : epsilon_(epsilon) {}
  [[nodiscard]] std::string name() const override { return "h2o-noisy"; }
  // The rule (RankedPolicy hooks).
  void on_reset() {
    stream_ = policy_stream(PolicyStream::kNoise, context().input->layer, context().input->kv_head);
    acc_.reset(context());
  }
  void on_prefill() { acc_.add_prompt(context()); }
  void observe(const StepView& view) { acc_.add(view); }
  [[nodiscard]] double key(int step, Token t) const {
    const std::uint64_t e = std::uint64_t(step) * std::uint64_t(context().tokens) + std::uint64_t(t);
    return acc_[t] + epsilon_ * (2.0 * uniform(context().seed, stream_, e) - 1.0);
  }

 private:
  double epsilon_;
  std::uint64_t stream_ = 0;
  AccumulatedAttention acc_;
};

}  // namespace subevict::greedy::policies
