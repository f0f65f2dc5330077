#pragma once
// Instances and deliberately broken implementations shared by the dynamic-eviction check tests.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/generator.hpp"
#include "greedy/eviction/policies/eviction_policy.hpp"
#include "proofs_checks/dynamic_family.hpp"

namespace subevict::proofs_checks::testing {

/// The opposite of H2O: accumulates the tracked attention like H2O and evicts the member of G_i
/// with the LARGEST accumulated score (ties: lowest token).
class HeaviestFirstPolicy final : public greedy::EvictionPolicy {
 public:
  std::string name() const override { return "heaviest-first"; }
  void reset(const greedy::PolicyContext& context) override { acc_.assign(std::size_t(context.tokens), 0.0); }
  std::vector<greedy::Token> prefill() override { return {}; }
  greedy::Token step(const greedy::StepView& view) override {
    for (std::size_t e = 0; e < view.tokens.size(); ++e) acc_[std::size_t(view.tokens[e])] += view.attention[e];
    if (!view.full) return greedy::kNoEviction;
    greedy::Token worst = view.tokens[0];
    for (greedy::Token t : view.tokens) {
      const double a = acc_[std::size_t(t)], b = acc_[std::size_t(worst)];
      if (a > b || (a == b && t < worst)) worst = t;
    }
    return worst;
  }

 private:
  std::vector<double> acc_;
};

inline greedy::PolicyFactory heaviest_first() {
  return [] { return std::make_unique<HeaviestFirstPolicy>(); };
}

/// Hard attention on n tokens: queries 1..k attend only to token 0, every other query only to
/// itself (logit gap 1000, so every other weight underflows to exactly 0). Exact accumulated
/// attention: token 0 gets 1 + k, tokens 1..k get 0, tokens i > k get 1 from step i on. A
/// policy that evicts token 0 at step k and then every arriving token keeps {1..k}, whose value
/// under h(z) = min(z, 1) is 0 while opt_i = 1 at every step; the tracked attention equals the
/// exact one on that trajectory (ε₀ = 0) and opt never grows (γ = 0).
inline SmallHead hard_attention_head(int n, int k) {
  RowMatrixf q = RowMatrixf::Zero(n, n), key = RowMatrixf::Identity(n, n), v = RowMatrixf::Identity(n, n);
  for (int i = 0; i < n; ++i) q(i, (i >= 1 && i <= k) ? 0 : i) = 1000.0f;
  return make_small_head(std::move(q), std::move(key), std::move(v), 1.0, "hard attention, " + std::to_string(n) + " tokens");
}

/// h(z) = min(z, 1): concave, non-decreasing, saturating.
inline Transform saturating() {
  return [](double z) { return std::min(z, 1.0); };
}

/// An LLM-like workload small enough for tests: 3 layers, 2 heads, d = 64, `tokens` tokens.
inline Workload llm_workload(int tokens, std::uint64_t seed = 5) {
  WorkloadSpec spec;
  spec.shape = Shape{3, 2, 2, tokens, 64};
  spec.seed = seed;
  return generate_workload(spec, 1);
}

/// The same shape with i.i.d. standard normal Q, K, V (no structure).
inline Workload gaussian_workload(int tokens, std::uint64_t seed = 5) {
  WorkloadSpec spec;
  spec.shape = Shape{3, 2, 2, tokens, 64};
  spec.kind = GeneratorKind::kGaussian;
  spec.seed = seed;
  return generate_workload(spec, 1);
}

}  // namespace subevict::proofs_checks::testing
