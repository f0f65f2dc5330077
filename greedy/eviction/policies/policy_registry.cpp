#include "greedy/eviction/policies/policy_registry.hpp"

#include <functional>
#include <utility>

#include "core/input_error.hpp"
#include "core/named_choice.hpp"
#include "greedy/eviction/policies/cap.hpp"
#include "greedy/eviction/policies/compactor.hpp"
#include "greedy/eviction/policies/cur.hpp"
#include "greedy/eviction/policies/expected_attention.hpp"
#include "greedy/eviction/policies/h2o_alg1.hpp"
#include "greedy/eviction/policies/h2o_alg2.hpp"
#include "greedy/eviction/policies/h2o_flexgen.hpp"
#include "greedy/eviction/policies/h2o_heavy_recent.hpp"
#include "greedy/eviction/policies/h2o_noisy.hpp"
#include "greedy/eviction/policies/h2o_oracle.hpp"
#include "greedy/eviction/policies/keydiff.hpp"
#include "greedy/eviction/policies/l2norm.hpp"
#include "greedy/eviction/policies/lagkv.hpp"
#include "greedy/eviction/policies/leverage.hpp"
#include "greedy/eviction/policies/local.hpp"
#include "greedy/eviction/policies/non_causal_attention.hpp"
#include "greedy/eviction/policies/observed_attention.hpp"
#include "greedy/eviction/policies/random.hpp"
#include "greedy/eviction/policies/snapkv.hpp"
#include "greedy/eviction/policies/sparse_fixed.hpp"
#include "greedy/eviction/policies/sparse_strided.hpp"
#include "greedy/eviction/policies/streaming_llm.hpp"
#include "greedy/eviction/policies/tova.hpp"

namespace subevict::greedy {

namespace {

using Maker = std::function<std::unique_ptr<EvictionPolicy>(const PolicyParams&)>;

/// The one list of policies: name and constructor, in the order of policy_names().
const std::vector<std::pair<std::string, Maker>>& registry() {
  using namespace policies;
  static const std::vector<std::pair<std::string, Maker>> list = {
      {"h2o", [](const PolicyParams& p) { return std::make_unique<H2oHeavyRecentPolicy>(p.heavy_ratio, p.heavy, p.recent); }},
      {"h2o-alg1", [](const PolicyParams&) { return std::make_unique<H2oAlg1Policy>(); }},
      {"h2o-alg2-linear", [](const PolicyParams&) { return std::make_unique<H2oAlg2Policy>(Concave::kIdentity); }},
      {"h2o-alg2-sqrt", [](const PolicyParams&) { return std::make_unique<H2oAlg2Policy>(Concave::kSqrt); }},
      {"h2o-alg2-log", [](const PolicyParams&) { return std::make_unique<H2oAlg2Policy>(Concave::kLog); }},
      {"h2o-flexgen", [](const PolicyParams&) { return std::make_unique<H2oFlexgenPolicy>(); }},
      {"h2o-oracle", [](const PolicyParams& p) { return std::make_unique<H2oOraclePolicy>(p.heavy_ratio, p.heavy, p.recent); }},
      {"local", [](const PolicyParams&) { return std::make_unique<LocalPolicy>(); }},
      {"streamingllm", [](const PolicyParams& p) { return std::make_unique<StreamingLlmPolicy>(p.sinks); }},
      {"sparse-strided", [](const PolicyParams& p) { return std::make_unique<SparseStridedPolicy>(p.stride, p.window); }},
      {"sparse-fixed", [](const PolicyParams& p) { return std::make_unique<SparseFixedPolicy>(p.stride, p.summary); }},
      {"random", [](const PolicyParams&) { return std::make_unique<RandomPolicy>(); }},
      {"l2norm", [](const PolicyParams& p) { return std::make_unique<L2NormPolicy>(p.skipped_layers); }},
      {"tova", [](const PolicyParams&) { return std::make_unique<TovaPolicy>(); }},
      {"snapkv", [](const PolicyParams& p) { return std::make_unique<SnapKvPolicy>(p.observation_window, p.pooling, p.pooling_kernel); }},
      {"h2o-noisy", [](const PolicyParams& p) { return std::make_unique<H2oNoisyPolicy>(p.epsilon); }},
      // kvpress's names (its evaluation registry): aliases of the rules above where they are the
      // same rule, and its scorers that need no trained component (docs/eviction.md).
      {"knorm", [](const PolicyParams&) { return std::make_unique<L2NormPolicy>(std::vector<int>{}, "knorm"); }},
      {"streaming_llm", [](const PolicyParams& p) { return std::make_unique<StreamingLlmPolicy>(p.sinks, "streaming_llm"); }},
      {"observed_attention", [](const PolicyParams&) { return std::make_unique<ObservedAttentionPolicy>(); }},
      {"keydiff", [](const PolicyParams&) { return std::make_unique<KeyDiffPolicy>(); }},
      {"leverage", [](const PolicyParams& p) { return std::make_unique<LeveragePolicy>(p.ridge); }},
      {"expected_attention", [](const PolicyParams& p) {
         return std::make_unique<ExpectedAttentionPolicy>(p.sinks, p.expected_epsilon, p.use_covariance, p.use_vnorm,
                                                          p.n_future_positions);
       }},
      {"lagkv", [](const PolicyParams& p) { return std::make_unique<LagKvPolicy>(p.sinks, p.lag_size, p.cross_scoring); }},
      {"cur", [](const PolicyParams& p) {
         return std::make_unique<CurPolicy>(p.sinks, p.cur_leverage, p.use_local_approximation, p.local_window_size);
       }},
      {"cap", [](const PolicyParams& p) { return std::make_unique<CapPolicy>(p.sinks, p.tau, p.cap_epsilon, p.n_future_positions); }},
      {"compactor", [](const PolicyParams& p) {
         return std::make_unique<CompactorPolicy>(p.sink_size_start, p.sink_size_end, p.chunk_size, p.ridge, p.blending);
       }},
      {"non_causal_attention", [](const PolicyParams& p) { return std::make_unique<NonCausalAttentionPolicy>(p.chunk_size); }},
  };
  return list;
}

}  // namespace

std::string to_string(Pooling pooling) {
  switch (pooling) {
    case Pooling::kMax:
      return "max";
    case Pooling::kAvg:
      return "avg";
    case Pooling::kNone:
      break;
  }
  return "none";
}

Pooling parse_pooling(std::string_view name) {
  return parse_named_choice(name, {Pooling::kNone, Pooling::kMax, Pooling::kAvg},
                            [](Pooling p) { return to_string(p); }, "pooling");
}

std::string to_string(CurLeverage leverage) {
  switch (leverage) {
    case CurLeverage::kKey:
      return "key";
    case CurLeverage::kValue:
      return "value";
    case CurLeverage::kKvAvg:
      return "kv_avg";
    case CurLeverage::kKvProduct:
      break;
  }
  return "kv_product";
}

CurLeverage parse_cur_leverage(std::string_view name) {
  return parse_named_choice(name, {CurLeverage::kKey, CurLeverage::kValue, CurLeverage::kKvAvg, CurLeverage::kKvProduct},
                            [](CurLeverage l) { return to_string(l); }, "leverage_type");
}

std::vector<std::string> policy_names() {
  std::vector<std::string> names;
  for (const auto& entry : registry()) names.push_back(entry.first);
  return names;
}

std::unique_ptr<EvictionPolicy> make_policy(std::string_view name, const PolicyParams& params) {
  if (!(params.epsilon >= 0.0)) throw InputError("policy", "epsilon", "a noise bound >= 0", std::to_string(params.epsilon));
  for (const auto& entry : registry()) {
    if (entry.first == name) return entry.second(params);
  }
  std::string accepted;
  for (const auto& entry : registry()) accepted += (accepted.empty() ? "" : ", ") + entry.first;
  throw InputError("policy", "name", "one of " + accepted, std::string(name));
}

}  // namespace subevict::greedy
