#pragma once
/// \file
/// Eviction policies against the exact offline optimum of the irreversible process and the
/// per-step reversible oracle (theory.md §5): policy ≤ OPT_irreversible ≤ Σ_i U_i ≤ n g.

#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/workload.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "proofs_checks/check.hpp"

namespace subevict::proofs_checks {

/// A policy of the comparison, by name.
struct NamedPolicy {
  std::string name;
  greedy::PolicyFactory make;
};

/// The registry policies h2o, local, streamingllm, tova, l2norm and random for budget k
/// (greedy/eviction/policies/policy_registry.hpp defaults, except: streamingllm keeps min(4, k − 1) sinks, and l2norm
/// compresses every layer, since the decomposition compares policies at one budget).
[[nodiscard]] std::vector<NamedPolicy> comparison_policies(int budget);

/// The policies of `specs` (greedy/eviction/policies/policy_spec.hpp), each named by its label (verify --policy).
[[nodiscard]] std::vector<NamedPolicy> spec_policies(const std::vector<greedy::PolicySpec>& specs);

/// Longest prefix of a head h2o.greedy_vs_offline_optimum solves (the flow has O(n²) arcs).
inline constexpr int kMaxOfflineTokens = 1024;

/// The budget h2o.greedy_vs_offline_optimum compares at on a workload of `tokens` tokens:
/// k = ceil(ratio · m) clamped to [1, m], m = min(tokens, kMaxOfflineTokens) (the tokens it uses).
[[nodiscard]] int offline_comparison_budget(int tokens, double budget_ratio);

/// The offline optimum under test: OPT_irreversible for gains W (n × n) and budget k.
using OptimumSolver = std::function<double(const Eigen::MatrixXd& gains, int budget)>;

/// greedy::offline_optimum (LEMON network simplex), its schedule's value.
[[nodiscard]] OptimumSolver flow_optimum();

/// h2o.greedy_vs_offline_optimum, a measurement (Kind::measurement: policy ≤ OPT ≤ Σ U_i ≤ n g
/// holds by definition): for every (layer, KV head) in `heads` (pairs, layer-major index
/// layer · kv_heads + kv_head) and every policy, the simulated Σ_i Σ_h r_i^h (Trace::
/// total_retained_mass) against OPT = optimum(W, k), W = greedy::gain_matrix(group), against Σ_i U_i
/// (greedy::step_oracle) and against n g. One instance per (head, policy); outcome `measured`.
/// Measurements: each policy's mean ratio to OPT ("ratio_" + its name, non-alphanumerics as _), OPT / Σ U_i, Σ U_i / (n g), and "chain_breaks",
/// the (head, policy) pairs where a link of the chain breaks beyond the rounding allowance (0
/// unless a solver or the simulator is wrong; the first is described in the notes; a run the
/// policy did not compress, such as l2norm on a layer it skips, is not tested against the chain and
/// counted in "uncompressed_runs"); Series
/// "gap_to_optimum" (policy / OPT per head, one line per policy). With max_tokens > 0 only the first max_tokens tokens of each head
/// are used (the flow's O(n²) arcs bound the cost).
[[nodiscard]] CheckResult check_greedy_vs_offline(const Workload& workload, const std::vector<int>& heads,
                                                  int budget, const std::vector<NamedPolicy>& policies,
                                                  const OptimumSolver& optimum, std::uint64_t seed,
                                                  int max_tokens = 0);

}  // namespace subevict::proofs_checks
