#pragma once
/// \file
/// The streaming eviction simulation of greedy/eviction/evaluation/simulator.hpp for every (layer, KV head) of a
/// workload at once, for the five policies with a closed-form rule: h2o (heavy + recent), local,
/// streamingllm, l2norm and tova, with the parameters of greedy::PolicyParams. Pure streaming
/// (no prefill rule), sum/mean/max group aggregation as greedy::GroupAggregation.

#include <cstdint>
#include <string>
#include <vector>

#include "core/workload.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "kernels/backend.hpp"

namespace subevict::kernels {

/// The policies the batched simulation runs (their greedy::make_policy names).
enum class BatchedPolicy { kH2o, kLocal, kStreamingLlm, kL2Norm, kTova };

/// "h2o" / "local" / "streamingllm" / "l2norm" / "tova".
[[nodiscard]] std::string to_string(BatchedPolicy policy);

/// The inverse of to_string; throws InputError (source "policy") naming the accepted names.
[[nodiscard]] BatchedPolicy parse_batched_policy(const std::string& name);

/// True when `name` is one of the five batched policies.
[[nodiscard]] bool is_batched_policy(const std::string& name);

/// Settings of one batched simulation.
struct BatchedOptions {
  BatchedPolicy policy = BatchedPolicy::kH2o;
  int budget = 1;  ///< k, the absolute cache capacity (>= 1; capped at n)
  greedy::GroupAggregation aggregation = greedy::GroupAggregation::kSum;
  /// Policy parameters (heavy_ratio, heavy, recent, sinks, skipped_layers are read).
  greedy::PolicyParams params;
};

/// Results per (layer, KV head) group, group index layer * kv_heads + kv_head. Per-step arrays
/// are [group][step][head in group] (n * g per group) and [group][step]. Semantics are those of
/// greedy::simulate with prefill 0 and compute_metrics: r_i^h over the full-row normalizer, and
/// the output relative error of the tracked attention.
struct BatchedSimulation {
  Shape shape;
  BatchedPolicy policy = BatchedPolicy::kH2o;
  std::vector<int> budget;                ///< [group] k used (n where l2norm skips the layer)
  std::vector<double> retained_mass;      ///< [group][step][head]
  std::vector<double> output_error;       ///< [group][step][head]
  std::vector<std::int32_t> evicted;      ///< [group][step], greedy::kNoEviction when none

  /// The result of one group as the reference simulator's Trace (policy name, budget, steps
  /// with their group means, per-head vectors); timing fields are 0.
  [[nodiscard]] greedy::Trace trace(int layer, int kv_head) const;
};

/// Simulates `options.policy` on every (layer, KV head) of `workload` on `backend`. The
/// simulation itself runs in double precision on every backend (eviction decisions compare
/// scores, so float rounding would change which token leaves); only the order of the sums
/// differs from the reference. Throws InputError for a budget < 1, policy parameters that do not
/// fit the budget (as make_policy's reset would) or an unavailable backend. Cost
/// O(layers * q_heads * (n^2 d + n k d)).
[[nodiscard]] BatchedSimulation simulate_batched(const Workload& workload, const BatchedOptions& options,
                                                 Backend backend);

}  // namespace subevict::kernels
