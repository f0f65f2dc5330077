#pragma once
/// \file
/// The interface every KV-cache eviction policy implements (theory.md §2 and §3). The streaming
/// simulator (greedy/eviction/evaluation/simulator.hpp) owns the cache and the attention arithmetic; a policy only
/// decides which member of G_i = S_{i−1} ∪ {i} leaves.
///
/// Conventions (stated once for every policy):
/// - Tokens and steps are 0-based: token i arrives at step i and is the query of step i.
/// - Ties: among members with equal scores the LOWEST TOKEN INDEX is chosen, i.e. a policy that
///   evicts the member with the smallest score evicts the oldest of the equal ones; a prefill rule
///   that keeps the top-k evicts in the order (score ascending, token ascending), so among equal
///   scores the newest tokens are kept. Both orders are the same rule applied once or repeatedly.
/// - Attention handed to a policy is the attention the model computes with the cache: the tracked
///   attention ã_i over G_i (softmax over G_i only, theory.md §1 Def D.10), per query head and
///   aggregated over the group by the explicit GroupAggregation rule. No causal policy sees the
///   full-row attention a_i; only policies labelled oracles read the future (h2o-oracle).

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "greedy/eviction/process/head_group.hpp"

namespace subevict::greedy {

/// Everything a policy may know before step 0 of one run. The pointer stays valid for the run.
struct PolicyContext {
  const HeadGroup* input = nullptr;  ///< Q, K, V of the group (oracles and key-based rules read it)
  int tokens = 0;                    ///< n
  int budget = 0;                    ///< k ≥ 1, the cache capacity (absolute)
  int prefill = 0;                   ///< P (0: pure streaming)
  GroupAggregation aggregation = GroupAggregation::kSum;
  /// Seed of randomized policies (random, h2o-noisy); they draw from counter-based streams keyed
  /// by (seed, layer, KV head), so every head gets its own stream.
  std::uint64_t seed = 0;
};

/// What a policy sees at streaming step i. Spans are valid only during the call.
struct StepView {
  int step = 0;  ///< i
  /// True when |S_{i−1}| = k: the policy MUST return exactly one member of `tokens`. False: it
  /// MUST return kNoEviction (nothing is evicted while the cache is not full).
  bool full = false;
  /// The members of G_i in the simulator's slot order (not sorted); the last entry is i.
  std::span<const Token> tokens;
  /// Group-aggregated tracked attention ã_i over G_i, aligned with `tokens`.
  std::span<const double> attention;
  /// Per query head tracked attention, head h at [h * tokens.size(), (h + 1) * tokens.size()).
  std::span<const double> head_attention;
  int heads = 1;  ///< g
};

/// A KV-cache eviction policy: one instance runs one (layer, KV head) at a time; reset() starts a
/// new run, so an instance may be reused serially (not concurrently).
class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;

  /// The stable CLI name (policy_registry.hpp), e.g. "h2o".
  [[nodiscard]] virtual std::string name() const = 0;

  /// True when the policy reads information a causal cache cannot have (future queries); reports
  /// must label it an oracle.
  [[nodiscard]] virtual bool is_oracle() const { return false; }

  /// Starts a run: forget all state and read what the rule needs from `context` (it stays valid
  /// until the next reset). Throws InputError when the policy's parameters do not fit the budget.
  virtual void reset(const PolicyContext& context) = 0;

  /// The group grew: context.input now holds rows `from`.. beyond those it held at reset or at the
  /// last call (earlier rows unchanged; context.tokens already counted them). Called by a
  /// resumable run (greedy/eviction/evaluation/resumable_simulation.hpp) before the new steps; a
  /// policy that derives per-token values from the rows at reset extends them here. The default
  /// does nothing, right for every policy that derives nothing from the rows at reset.
  virtual void rows_added(int from) { (void)from; }

  /// False when the policy does not compress this (layer, KV head) at all (l2norm's skipped
  /// layers): the simulator then runs with budget n, so nothing is ever evicted. Valid after reset.
  [[nodiscard]] virtual bool compresses() const { return true; }

  /// The prefill rule (theory.md §2): the first P = context.prefill tokens were processed with
  /// full attention (steps 0..P−1); return the tokens 0..P−1 to keep, at most context.budget of
  /// them, ascending. Called once, after reset, only when P > budget (otherwise the prompt simply
  /// streams). The policy computes what it needs from context.input (see policy_support.hpp).
  [[nodiscard]] virtual std::vector<Token> prefill() = 0;

  /// One streaming step (called for every step i ≥ P in order, full or not, so accumulators see
  /// every query). Returns the evicted member of view.tokens when view.full, else kNoEviction.
  [[nodiscard]] virtual Token step(const StepView& view) = 0;

  /// True when the policy's choice is "evict the eligible member with the smallest key" and it can
  /// therefore hand its keys to a cache shared with other heads (rank()).
  [[nodiscard]] virtual bool ranks() const { return false; }

  /// The shared-cache form of step() (greedy/eviction/evaluation/shared_simulator.hpp): observes
  /// the view exactly as step() does and, when view.full, writes into keys[e] the key of member
  /// view.tokens[e] (+infinity for a member the policy never evicts), so that the caller may evict
  /// any number of members (none, one or several) in the order (key, token) it would evict them;
  /// keys is left unread when !view.full. keys.size() == view.tokens.size(). Throws
  /// std::logic_error for a policy that does not rank (ranks() false).
  virtual void rank(const StepView& view, std::span<double> keys);

  /// A copy of this policy in its present state (the same decisions from here on, given the same
  /// views) whose context reads `input` instead: the same rows at another address, which the copy
  /// reads as this policy reads its own (a resumable run forked at a step,
  /// ResumableSimulation::fork). `input` must outlive the copy. The default throws
  /// std::logic_error naming the policy (a policy that cannot be copied).
  [[nodiscard]] virtual std::unique_ptr<EvictionPolicy> copy_onto(const HeadGroup& input) const;
};

}  // namespace subevict::greedy
