#pragma once
/// \file
/// The offline optimum of the eviction process as the 0/1 integer program of theory.md §5, solved
/// with COIN-OR CBC: an independent cross-check of the flow solver for small n.
///
///   variables  y_{j,t} ∈ {0, 1} for tokens j and t ∈ [j − 1, n − 1]: j is evicted right after
///              step t (last cached step t; t = j − 1: never cached)
///   maximize   Σ_{j,t} y_{j,t} Σ_{i=j+1}^{min(t+1, n−1)} W_ij   (+ Σ_j W_jj, a constant)
///   subject to Σ_t y_{j,t} = 1 for every token j;
///              Σ_{j ≤ i} Σ_{t ≥ i} y_{j,t} ≤ k for every step i (at most k tokens cached).
///
/// n(n+1)/2 variables, 2n rows, O(n³) non-zeros: meant for n ≤ 60 or so.

#include <Eigen/Core>

#include "greedy/eviction/process/cache_schedule.hpp"

namespace subevict::greedy {

struct OfflineOptimumIpOptions {
  /// CBC's time limit in seconds; 0 = none. When hit: status kFeasible with the incumbent (or
  /// kFailed without one) and upper_bound = CBC's best possible objective.
  double time_limit_seconds = 0.0;
  /// CBC's limit on branch-and-bound nodes; negative = none, 0 = stop after the root. Hit like the
  /// time limit (same status and bound conventions), but independent of the machine's speed.
  int max_nodes = -1;
  /// Print CBC's log (silenced by default).
  bool log = false;
};

/// The optimum of gains W (n × n, see cache_schedule.hpp) at budget k by the integer program
/// above. model_size = variables, nodes = CBC's branch-and-bound nodes. The schedule is returned
/// as CBC found it (not converted to the process form). Throws InputError for invalid W or budget.
ScheduleSummary offline_optimum_ip(const Eigen::MatrixXd& gains, int budget,
                                   const OfflineOptimumIpOptions& options = {});

}  // namespace subevict::greedy
