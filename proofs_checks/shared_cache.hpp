#pragma once
/// \file
/// How a layer's cache budget is best split across its KV heads (theory.md §5): the uniform split,
/// the optimal static allocation (greedy/eviction/budgets/budget_allocation.hpp) and one cache
/// shared by the heads over time (greedy/eviction/optimum/shared_optimum.hpp).

#include <Eigen/Core>
#include <functional>
#include <vector>

#include "core/workload.hpp"
#include "proofs_checks/check.hpp"

namespace subevict::proofs_checks {

/// The shared optimum under test: the best total retained mass of one cache of `total` entries
/// shared by heads with these gains.
using SharedSolver = std::function<double(const std::vector<Eigen::MatrixXd>& gains, long long total)>;

/// greedy::shared_optimum (LEMON network simplex), its schedule's value.
[[nodiscard]] SharedSolver exact_shared_optimum();

/// Longest prefix of a layer allocation.uniform_static_shared solves (the shared flow has
/// O(H n²) arcs and verify runs it on several layers).
inline constexpr int kMaxSharedTokens = 256;

/// allocation.uniform_static_shared, a measurement (the order uniform ≤ static ≤ shared holds by
/// definition: a uniform split is one static allocation, a static allocation one schedule of the
/// shared cache): for each layer of `layers`, the gains of its KV heads (greedy::gain_matrix) on
/// the first max_tokens tokens (all when ≤ 0) at budget k per head, total T = k · H: Σ_h OPT_h(k),
/// the optimal static allocation of T (allocate_budget over the heads' exact curves from
/// shortest_path_curve) and shared(W, T). One instance per layer; outcome `measured`.
/// Measurements: "static_over_uniform" and "shared_over_static" (means over layers),
/// "chain_breaks" (layers where the order breaks beyond rounding: 0 unless a solver is wrong; the
/// first is described in the notes). Series "allocation": static / uniform and shared / uniform
/// per layer. Throws std::invalid_argument for no layer or a budget outside [1, tokens used].
[[nodiscard]] CheckResult check_shared_cache(const Workload& workload, const std::vector<int>& layers, int budget,
                                             const SharedSolver& shared, int max_tokens = 0);

}  // namespace subevict::proofs_checks
