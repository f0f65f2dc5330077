#pragma once
/// \file
/// The exact offline optimum of one cache of total size T shared by H heads that move in lockstep
/// (a layer's KV heads, or the whole model's): at step i every head's token i arrives, head h's
/// query i earns the attention W^h_ij of every token j of its own head in the cache, and the cache
/// holds at most T (head, token) entries in all after every step. Any split of T into fixed
/// per-head budgets is one such schedule, so uniform per-head OPT ≤ the static optimal allocation
/// (budget_allocation.hpp) ≤ this optimum; what the shared cache adds is moving slots between heads
/// over time.
///
/// It is again one min-cost flow (the network of offline_optimum.hpp with H tokens per step):
///
///   nodes  R_{h,j} (supply +1): token j of head h chooses its last cached step t ∈ [j − 1, n − 1];
///          D_i (i = 0..n), supply T − H (i = 0), −H (0 < i < n), −T (i = n);
///   arcs   R_{h,j} → D_{t+1}, capacity 1, cost −Σ_{i=j+1}^{min(t+1, n−1)} W^h_ij (pruned as in
///          offline_optimum.hpp: an arc whose last step earns 0 is dominated);
///          D_i → D_{i+1}, capacity T, cost 0 (its flow is the free space T − |S_i|).
///   OPT = Σ_h Σ_j W^h_jj − (min cost).
///
/// Solved by LEMON's network simplex on the explicit arcs (H · n(n+1)/2 at most: a layer of a few
/// KV heads at n = 2048, not the whole model), costs rounded to a quantum as offline_optimum.hpp
/// does (with the node count (H + 1) n + 1), certified by the Lagrangian dual from the simplex's
/// potentials with the unrounded costs: value ≤ OPT ≤ upper_bound. The schedule is the flow's (a
/// cache may be under-full and drop several entries at a step; with gains ≥ 0 the process of
/// theory.md §2 reaches the same optimum, as for one head).

#include <Eigen/Core>
#include <cstddef>
#include <vector>

#include "greedy/eviction/process/cache_schedule.hpp"

namespace subevict::greedy {

/// LEMON's network simplex pivot rules (lemon::NetworkSimplex::PivotRule); block search is
/// LEMON's default and the fastest on these networks (bench/results/greedy_offline_optimum.md).
enum class PivotRule { kBlockSearch, kFirstEligible, kBestEligible, kCandidateList, kAlteringList };

struct SharedOptimumOptions {
  /// The entering-arc rule of the network simplex.
  PivotRule pivot = PivotRule::kBlockSearch;
  /// Drop the provably dominated arcs described in the file comment.
  bool prune_dominated_arcs = true;
  /// Compute the certified upper bound from the dual (one extra pass over the arcs); when false
  /// upper_bound is set to value.
  bool certify = true;
};

struct SharedOptimum {
  ScheduleStatus status = ScheduleStatus::kFailed;
  double value = 0.0;        ///< Σ over heads and steps of the retained attention, from the schedule
  double upper_bound = 0.0;  ///< certified: value ≤ OPT ≤ upper_bound
  /// last_step[h][j]: the last step at which token j of head h is cached (j − 1: never).
  std::vector<std::vector<int>> last_step;
  /// occupancy(i, h): how many of head h's tokens the cache holds after step i (Σ_h ≤ T).
  Eigen::MatrixXi occupancy;
  std::size_t arcs = 0;
  double seconds = 0.0;
};

/// The shared optimum for the heads' gains (each n × n as cache_schedule.hpp's W: finite, ≥ 0,
/// 0 above the diagonal; all of one n) and total budget T ≥ 0 (T ≥ H n changes nothing). Throws
/// InputError naming "shared_optimum" for no head, gains of different sizes or invalid, or T < 0.
/// O(H n²) arcs (≈ 60 bytes each) and network simplex time (bench/results/budget_allocation.md).
[[nodiscard]] SharedOptimum shared_optimum(const std::vector<Eigen::MatrixXd>& gains, long long total,
                                           const SharedOptimumOptions& options = {});

/// The memory the explicit network of `heads` heads over n tokens takes, about: 60 bytes an arc,
/// H n (n + 1) / 2 token arcs (bench/results/shared_optimum.md).
[[nodiscard]] constexpr double shared_network_bytes(std::size_t heads, int n) {
  return 60.0 * double(heads) * double(n) * double(n + 1) / 2.0;
}

/// Where the callers that choose (simulate --share, subevict.shared_optimum's 'auto') stop using
/// the explicit network and run the column generation (shared_columns.hpp) instead.
constexpr double kExplicitSharedNetworkLimitBytes = 8e9;

/// The same on heads held elsewhere (no copy; every pointer non-null).
[[nodiscard]] SharedOptimum shared_optimum(const std::vector<const Eigen::MatrixXd*>& gains, long long total,
                                           const SharedOptimumOptions& options = {});

}  // namespace subevict::greedy
