#pragma once
/// \file
/// One cache shared by several heads that move in lockstep (a layer's KV heads, or the whole
/// model's), each head ranked by its own policy, the evictions chosen across heads: AdaKV's rule
/// (a layer's budget goes to the heads whose members score highest, with a per-head floor), run
/// as a streaming process. The shared optimum (greedy/eviction/optimum/shared_optimum.hpp) is the
/// offline optimum of exactly this process.
///
/// Semantics (0-based steps; every head's token i arrives at step i):
/// - Head h holds S^h_{i−1}; query i of head h attends over G^h_i = S^h_{i−1} ∪ {i} with the
///   arithmetic and metrics of simulate() (streaming_head.hpp), so one head's step is the same
///   bits as in simulate() for the same cache.
/// - Sliding windows: at step i each windowed head's token i + 1 − W, which query i still sees,
///   leaves first (not an eviction, as in simulate()); write G'^h_i for G^h_i without it.
/// - The cache holds at most T entries over all heads after every step. When Σ_h |G'^h_i| > T the
///   step is full for every head: each policy ranks its members (EvictionPolicy::rank, after
///   observing the step as step() would), and the excess E = Σ_h |G'^h_i| − T leaves in the order
///   (key, token, head) ascending among the members of the G'^h_i, skipping a member whose head
///   would fall below `floor` entries and members ranked +infinity (never evicted). A head may
///   lose several tokens in one step, or none. Otherwise nothing is evicted.
/// - No prefill: the whole sequence streams.
/// With floor = k and T = H k every head keeps exactly k after every full step and evicts its own
/// smallest key: the run is simulate() at budget k, head by head, bit for bit (a test).

#include <cstdint>
#include <vector>

#include <Eigen/Core>

#include "core/exact_attention_rows.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/policies/eviction_policy.hpp"
#include "greedy/eviction/process/head_group.hpp"

namespace subevict::greedy {

struct SharedSimulationOptions {
  /// k ≥ 1: the mean budget per head, the budget every policy is reset with (its windows, splits
  /// and sink counts are shares of k).
  int budget = 1;
  /// T ≥ H · floor: entries the cache holds over all heads after every step (0: H · k).
  long long total = 0;
  /// Entries every head keeps at least once it has them (AdaKV's safeguard ⌊α k⌋); 0 ≤ floor ≤ k.
  int floor = 0;
  GroupAggregation aggregation = GroupAggregation::kSum;
  /// As SimulationOptions::compute_metrics: without, only the decisions are made (r is NaN).
  bool compute_metrics = true;
  std::uint64_t seed = 0;
  /// Workers over heads within a step (0: OpenMP's default); results do not depend on it.
  int threads = 1;
};

/// The record of one shared run.
struct SharedRun {
  /// One per head, in the order given; Trace::budget = k. StepRecord::evicted holds the smallest
  /// token a head lost at a step (it may lose several): last_step is the exact record.
  std::vector<Trace> traces;
  /// last_step[h][j]: the last step whose cache S^h_i holds token j of head h (j − 1: evicted on
  /// arrival; n − 1: never evicted); sliding windows cut it as Trace::last_step() does.
  std::vector<std::vector<int>> last_step;
  /// occupancy(i, h) = |S^h_i| after step i.
  Eigen::MatrixXi occupancy;
  double seconds = 0.0;  ///< wall seconds of the steps (exact rows excluded)

  /// Σ_h traces[h].total_retained_mass(): the objective the shared optimum bounds.
  [[nodiscard]] double total_retained_mass() const;
};

/// Runs the heads through one shared cache. `policies[h]` ranks head h (ranks() true; reset by the
/// call with budget k, prefill 0, the options' aggregation and seed). `*exact[h]` =
/// group_exact_rows(heads[h]) when metrics are computed (empty: computed here); the rows are read
/// in place. Throws
/// InputError (source "shared cache") for no head, heads of different lengths, a policy that does
/// not rank or does not compress its head, k < 1, floor outside [0, k] or T < H · floor; and
/// std::runtime_error naming the step when floors and never-evicted members leave fewer than E
/// members to evict.
[[nodiscard]] SharedRun simulate_shared(const std::vector<HeadGroup>& heads, const std::vector<EvictionPolicy*>& policies,
                                        const SharedSimulationOptions& options,
                                        const std::vector<const std::vector<ExactRows>*>& exact = {});

}  // namespace subevict::greedy
