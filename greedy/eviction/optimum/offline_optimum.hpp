#pragma once
/// \file
/// The exact offline optimum of the irreversible eviction process (theory.md §5) as a min-cost
/// flow solved by LEMON's network simplex. 0-based steps; the network:
///
///   nodes  R_j (j = 0..n−1), supply +1: token j chooses its last cached step t_j ∈ [j − 1, n − 1];
///          D_i (i = 0..n), supply k − 1 (i = 0), −1 (0 < i < n), −k (i = n);
///   arcs   R_j → D_{t+1} for t ≥ j − 1, capacity 1, cost −Σ_{i=j+1}^{min(t+1, n−1)} W_ij (the mass
///          j earns while cached on steps j..t; t = j − 1 is "never cached", cost 0);
///          D_i → D_{i+1}, capacity k, cost 0 (its flow is the free space k − |S_i|).
///   OPT = Σ_j W_jj − (min cost).
///
/// Feasible flows are exactly the schedules with |S_i| ≤ k at every step; the process of §2 also
/// forbids evicting while not full and more than one eviction per step, but with gains ≥ 0 every
/// feasible schedule is dominated by a process schedule (to_process_schedule), so both optima are
/// equal. The returned schedule is converted to that process form.
///
/// Pruning (exact): (a) an arc R_j → D_{t+1} with W_{t+1,j} = 0 (or t = n − 1, when step n does not
/// exist) costs the same as R_j → D_t while holding one more cache slot, so some optimal flow avoids
/// it and it is dropped (the never-cached arc always stays); the network keeps ≤ n(n+1)/2 + n arcs.
///
/// Exactness: LEMON's network simplex needs integer costs. Costs are shifted per token to be ≥ 0
/// (R_j sends its one unit on exactly one arc, so adding a constant to all of R_j's arcs adds a
/// constant to every flow) and rounded to multiples of a quantum q = 2^−s, s the largest integer
/// with (2n + 1) · max cost · 2^s ≤ 2^51, held in a double: then every potential and reduced cost
/// the simplex forms is an integer below 2^53, computed exactly (LEMON's 64-bit integer cost type
/// overflows: its artificial cost is 2^62). The schedule's value is recomputed from the schedule
/// in double, and an upper bound is certified from the solver's potentials with the unrounded
/// costs (Lagrangian dual of the flow LP): value ≤ OPT ≤ upper_bound; rounding can cost at most
/// n q, and the certified gap upper_bound − value is measured in the tests and the benchmark.

#include <Eigen/Core>
#include <cstdint>

#include "greedy/eviction/optimum/shared_optimum.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"

namespace subevict::greedy {

struct OfflineOptimumOptions {
  /// The entering-arc rule of the network simplex.
  PivotRule pivot = PivotRule::kBlockSearch;
  /// Drop the provably dominated arcs described in the file comment.
  bool prune_dominated_arcs = true;
  /// Compute the certified upper bound from the dual (one extra O(n²) pass); when false
  /// upper_bound is set to value.
  bool certify = true;
  /// Return the process form of the schedule (to_process_schedule); when false, the raw flow
  /// schedule (caches may be under-full).
  bool process_form = true;
};

/// The offline optimum for gains W (n × n; attention, weighted or GQA-summed: gain_matrix) and
/// budget k ≥ 0. status kOptimal unless LEMON reports otherwise (it cannot for valid input).
/// model_size = arcs, nodes = 0. Throws InputError for invalid W or budget.
/// Cost: O(n²) memory (≈ 60 bytes per arc) and network simplex time (measured in
/// bench/results/greedy_offline_optimum.md).
ScheduleSummary offline_optimum(const Eigen::MatrixXd& gains, int budget,
                                const OfflineOptimumOptions& options = {});

}  // namespace subevict::greedy
