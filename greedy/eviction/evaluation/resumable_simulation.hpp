#pragma once
/// \file
/// A resumable streaming simulation of one (layer, KV head): the simulator's process (simulator.hpp)
/// run on rows that arrive in chunks, as a generating model produces them. The closed loop's
/// greedy generation needs, for each generated token, the cache its query attends over given
/// every earlier token; re-running simulate over all n + t tokens per generated token costs
/// O((n + t) k d) per token, resuming costs one step's O(k d) plus the policy.
///
/// Contract: with capacity C, the steps of the first m ≤ C rows (any split of them into extend()
/// calls: one prompt run, then chunks or single tokens) are exactly those of
/// simulate(group of the C rows, policy, options) restricted to steps 0..m−1, bit for bit: the
/// same cache after every step, the same evictions, the same prefill drops. For a causal policy
/// these are the steps of simulate on the first m rows alone, except that a policy whose rule
/// depends on n itself reads C as n (h2o-noisy's noise stream is keyed by n). Semantics are
/// simulate's: budget, GQA aggregation, seed, sliding window, prefill (only at the start: the first
/// extend() must hold at least P rows when P > k). No metrics (they need the exact full rows).
/// Refused (std::invalid_argument naming the policy): oracles (is_oracle(): h2o-oracle and
/// lookahead read rows that have not arrived), and groups with pre-RoPE tensors (not stored here).

#include <cstdint>
#include <memory>
#include <vector>

#include "core/workload.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/evaluation/streaming_head.hpp"
#include "greedy/eviction/policies/eviction_policy.hpp"
#include "greedy/eviction/process/head_group.hpp"

namespace subevict::greedy {

/// The shape of a resumable group: g query heads of dimension d over one KV head, its score
/// scale and window (HeadGroup's meanings), its labels, and the capacity C (rows it can hold).
struct ResumableShape {
  int group_size = 1;
  int head_dim = 1;
  double scale = 1.0;
  int window = 0;
  int capacity = 1;
  int layer = 0;    ///< what policies read as HeadGroup::layer (l2norm's skipped layers, seeds)
  int kv_head = 0;  ///< HeadGroup::kv_head (seeds per head)
};

/// What one extend() did, per new step in order.
struct ResumedSteps {
  int first = 0;                       ///< the step of the first appended row
  std::vector<Token> evicted;          ///< per new step: the member of G_i evicted, or kNoEviction
  std::vector<std::vector<Token>> cache;  ///< per new step S_i ascending (only when asked)
};

/// One (layer, KV head) whose Q, K and V rows arrive over time. Not copyable or movable (the
/// policy holds a pointer to the group); fork() makes a second run in the same state.
class ResumableSimulation {
 public:
  /// Starts an empty run of `policy` (owned) with `options` (budget, aggregation, prefill, seed,
  /// threads; record_cache, compute_metrics and on_steps are ignored). Throws
  /// std::invalid_argument for a bad shape (g, d, C ≥ 1, scale finite > 0, window ≥ 0), bad
  /// options (simulate's checks against n = C) or an oracle policy.
  ResumableSimulation(std::unique_ptr<EvictionPolicy> policy, const ResumableShape& shape,
                      const SimulationOptions& options);
  ResumableSimulation(const ResumableSimulation&) = delete;
  ResumableSimulation& operator=(const ResumableSimulation&) = delete;
  ~ResumableSimulation();

  /// Appends m rows (q[h] is m x d for each of the g heads, k and v m x d, float32 row-major) and
  /// runs their steps. The first call resets the policy (and runs the prefill rule when P > k; it
  /// must then hold ≥ P rows). Throws std::invalid_argument for wrong shapes, m = 0 or more rows
  /// than the capacity left (the run is unchanged then), std::logic_error for a policy breaking
  /// its contract (the run is then unusable). `record_cache`: fill ResumedSteps::cache.
  ResumedSteps extend(const std::vector<ConstHeadMap>& q, const ConstHeadMap& k, const ConstHeadMap& v,
                      bool record_cache = false);

  /// Rows appended so far (= steps run).
  [[nodiscard]] int tokens() const { return filled_; }
  [[nodiscard]] int capacity() const { return shape_.capacity; }
  [[nodiscard]] const ResumableShape& shape() const { return shape_; }
  /// k actually used: the budget, or C when the policy does not compress this head or k ≥ window
  /// (simulate's Trace::budget with n = C). 0 before the first extend().
  [[nodiscard]] int budget() const { return k_used_; }
  /// S after the last step, ascending (empty before the first extend()).
  [[nodiscard]] std::vector<Token> cache() const;
  /// The prefill rule's drops (simulate's Trace::prefill_evicted); empty without prefill.
  [[nodiscard]] const std::vector<Token>& prefill_evicted() const { return prefill_evicted_; }
  /// The policy's name().
  [[nodiscard]] std::string policy_name() const { return policy_->name(); }

  /// A second run in this run's present state: its rows, its policy's state
  /// (EvictionPolicy::copy_onto), its cache; extending either leaves the other as it was, and the
  /// fork extended with rows R decides exactly as one run fed this run's rows and then R. Throws
  /// std::logic_error naming the policy when the policy cannot be copied.
  [[nodiscard]] std::unique_ptr<ResumableSimulation> fork() const;

 private:
  /// Points group_'s maps at the first filled_ rows.
  void map_rows();
  struct Forked {};
  ResumableSimulation(const ResumableSimulation& other, Forked);

  std::unique_ptr<EvictionPolicy> policy_;
  ResumableShape shape_;
  SimulationOptions options_;
  std::vector<RowMatrixf> q_;
  RowMatrixf k_, v_;
  HeadGroup group_;
  Trace trace_;  // StreamingHead writes its step records here (C of them, no metrics)
  std::vector<ExactRows> no_exact_;
  std::unique_ptr<StreamingHead> head_;
  int filled_ = 0, k_used_ = 0;
  std::vector<Token> prefill_evicted_;
};

}  // namespace subevict::greedy
