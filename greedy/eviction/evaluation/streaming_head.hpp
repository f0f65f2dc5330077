#pragma once
/// \file
/// One (layer, KV head) streaming through its cache: the arithmetic of a simulator step (the
/// tracked attention of every query head over G_i = S_{i−1} ∪ {i}, the group aggregation handed to
/// policies, and step i's metrics against the exact rows), with the choice of what leaves made
/// outside. simulate() (simulator.hpp) lets one policy choose; simulate_shared()
/// (shared_simulator.hpp) lets a cache shared by several heads choose. Both therefore compute
/// the same bits for the same cache contents.

#include <span>
#include <vector>

#include "core/exact_attention_rows.hpp"
#include "core/cpu_path.hpp"
#include "core/workload.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/policies/eviction_policy.hpp"
#include "greedy/eviction/process/head_group.hpp"

namespace subevict::greedy {

/// The cache G_i as dense arrays: entries 0..size−1 hold tokens, their keys and values in double,
/// and the keys as given (float, transposed, for the AVX2 scores, which read half the bytes);
/// removal moves the last entry into the hole.
struct DenseCache {
  std::vector<Token> tokens;
  RowMatrixd keys, values;
  RowMatrixf float_keys_t;  // keys transposed: d x capacity
  int size = 0;

  DenseCache(int capacity, int d);
  void push(const HeadGroup& in, Token t);
  /// Removes token t; returns false when t is not an entry.
  bool remove(Token t);
  /// True when token t is an entry. O(size).
  [[nodiscard]] bool holds(Token t) const;
  [[nodiscard]] std::vector<Token> sorted() const;
};

/// The trace of `policy` on `input` before step 0: its labels, budget k, prefill P and window,
/// n step records, and (with metrics) the n x g per-head arrays at r = 1 and error 0.
[[nodiscard]] Trace empty_trace(const HeadGroup& input, const EvictionPolicy& policy, int budget, int prefill,
                                bool metrics);

/// Steps whose per-step products StreamingHead computes together (kStepBlock below).
inline constexpr int kStepBlock = 64;

/// A head's cache and the per-step arithmetic. The trace is the caller's: arrive(i) writes
/// trace.steps[i] (evicted left kNoEviction) and, with metrics, row i of trace.head_retained_mass
/// and trace.head_output_error, which the caller sized (n and n x g).
///
/// On the AVX2 path the steps go in blocks of `block_steps`: at a block's first step every token
/// the block can hold (the cache's and the block's arrivals, U, ascending) is known, so the scores
/// of the block's queries against U come from one product (core/cached_scores.hpp
/// cached_score_block: bit for bit the per-step scores, for MHA groups; the cache is read once per
/// four queries instead of once per step), and the tracked outputs õ_i = Σ_{e ∈ G_i} ã_ie v_e, summed
/// over U in ascending token order with the absent tokens at weight 0
/// (core/weighted_rows.hpp gathered_weighted_rows), are computed when the block ends. Every bit of
/// the trace is therefore the same for any block size and thread count; the output errors of a
/// block are NaN until it ends (finish() ends the last). The portable path computes every step
/// alone, as the reference.
class StreamingHead {
 public:
  /// `capacity` ≥ the largest |G_i| the run can reach (≤ n + 1 is always enough); `exact` holds
  /// group_exact_rows(input) when `metrics`, else it is not read. Every reference must outlive
  /// the object. `block_steps` ≥ 1 and `threads` ≥ 1 (the OpenMP threads of a block's products;
  /// one inside another parallel region) change nothing but speed; std::invalid_argument otherwise.
  StreamingHead(const HeadGroup& input, int capacity, bool metrics, const std::vector<ExactRows>& exact,
                GroupAggregation aggregation, Trace& trace, int block_steps = kStepBlock, int threads = 1);

  /// A copy of `other` in its present state (its cache, its block, its marks) that reads `input`
  /// and `exact` and writes `trace` from here on: the same rows and exact rows at another address,
  /// and a trace holding other's records so far (ResumableSimulation::fork). Every reference must
  /// outlive the copy.
  StreamingHead(const StreamingHead& other, const HeadGroup& input, const std::vector<ExactRows>& exact,
                Trace& trace)
      : StreamingHead(other) {
    input_ = &input;
    exact_ = &exact;
    trace_ = &trace;
  }
  StreamingHead& operator=(const StreamingHead&) = delete;

  /// Puts token t into the cache without a step (the prefill rule's survivors). Precondition: no
  /// step has arrived yet.
  void admit(Token t) { cache_.push(*input_, t); }
  /// Takes token t out of the cache and marks that the cache has lost a token (later steps compute
  /// their retained mass instead of taking 1). Returns false when t is not an entry.
  bool evict(Token t);
  /// Marks a loss that happened outside evict() (the prefill rule's drops).
  void mark_loss() { lost_ = true; }
  [[nodiscard]] int size() const { return cache_.size; }
  [[nodiscard]] std::vector<Token> sorted() const { return cache_.sorted(); }

  /// Step i: token i joins the cache (G_i), every query head's tracked attention over G_i is
  /// computed, with step i's metrics into the trace. The returned view (full as given) stays valid
  /// until the next call that changes the cache.
  [[nodiscard]] StepView arrive(int i, bool full);

  /// The member of G_i = S_{i−1} ∪ {i} that leaves the sliding window at the end of step i: token
  /// i + 1 − W, the oldest key query i sees and the first query i + 1 does not; kNoEviction on a
  /// global layer, before step W − 1, or when the cache no longer holds it. The same before and
  /// after arrive(i).
  [[nodiscard]] Token window_exit(int i) const;

  /// |S_i| if step i evicts nothing: |G_i| less window_exit(i), which leaves first (it takes no
  /// budget; docs/eviction.md "Sliding windows"). Step i must evict exactly when this exceeds the
  /// budget. Call before arrive(i).
  [[nodiscard]] int size_without_eviction(int i) const {
    return cache_.size + 1 - (window_exit(i) != kNoEviction ? 1 : 0);
  }

  /// End of step i: window_exit(i) leaves (sliding window; not an eviction).
  void leave_window(int i);

  /// Writes the output errors of the steps that arrived in the current block into the trace. Call
  /// it once after the last step; a later arrive() starts a new block.
  void finish();

 private:
  /// Ends the current block (finish()) and starts one at step i.
  void start_block(int i);
  /// Step i's scores from the block into logits_ when the block holds them in the order the
  /// per-step product would take; false otherwise.
  bool block_scores(int i, int m);
  /// Step i's weights into the block's row for the outputs at the block's end.
  void keep_weights(int i, int m);

  StreamingHead(const StreamingHead&) = default;  // the re-pointing copy's start

  const HeadGroup* input_;
  bool metrics_;
  const std::vector<ExactRows>* exact_;
  GroupAggregation aggregation_;
  Trace* trace_;
  CpuPath path_;
  DenseCache cache_;
  bool lost_ = false;
  Eigen::MatrixXd queries_, logits_, outputs_;
  std::vector<double> attention_, aggregated_, group_, head_max_, head_sum_;
  // The block: steps [block_first_, block_end_), of which block_last_ arrived last; U in
  // block_tokens_ and a token's column in column_; the first step that lost mass in lost_from_.
  int block_steps_, threads_;
  bool blocked_scores_ = false, blocked_outputs_ = false;
  int block_first_ = 0, block_end_ = 0, block_last_ = -1, lost_from_ = 0;
  std::vector<Token> block_tokens_;
  std::vector<int> column_;
  RowMatrixf block_keys_t_;                                  // d x |U|
  RowMatrixd block_queries_, block_scores_;                  // steps x d, steps x |U|
  RowMatrixd block_weights_, block_outputs_;                 // (steps · g) x |U|, (steps · g) x d
  Eigen::VectorXd step_scores_;
};

/// Streaming step i of `policy` on `head` with budget k (the body of simulate's loop): the token
/// leaving the window leaves first, so the step is full only when G_i without it is still over k;
/// token i arrives, the policy decides, its eviction is applied, then the window's token leaves.
/// Returns the evicted member or kNoEviction. Throws std::logic_error naming the policy when it
/// evicts while not full, or evicts nothing or a non-member when full.
Token run_policy_step(StreamingHead& head, EvictionPolicy& policy, int i, int k);

/// The prefill rule at the end of step P − 1 (P = `prefill` > k): asks policy.prefill(), admits
/// the kept tokens step P still sees (`window`: HeadGroup::window) into the empty `head`, marks
/// the loss, and returns the dropped visible tokens ascending (Trace::prefill_evicted). Throws
/// std::logic_error naming the policy when it keeps more than k, unsorted, repeated or
/// non-prompt tokens.
std::vector<Token> run_prefill_rule(StreamingHead& head, EvictionPolicy& policy, int prefill, int k, int window);

}  // namespace subevict::greedy
