#pragma once
/// \file
/// The streaming eviction simulator (theory.md §2), reference backend, double precision.
///
/// Semantics (0-based steps; token i is the query of step i; docs/eviction.md states them in full):
/// - S_{−1} = ∅. Step i: query i attends over G_i = S_{i−1} ∪ {i}; the policy returns S_i ⊆ G_i.
///   While |S_{i−1}| < k nothing is evicted (S_i = G_i); once |S_{i−1}| = k exactly one member of
///   G_i is evicted (possibly i itself). An evicted token never returns.
/// - Prefill (P > k): steps 0..P−1 attend over every earlier token (G_i = {0..i}); after step P−1
///   the policy's prefill rule keeps at most k of {0..P−1} and streaming resumes at step P. With
///   P ≤ k the prompt streams like any other tokens (nothing would be compressed).
/// - Sliding windows (HeadGroup::window = W > 0): query i sees keys i − W < j ≤ i only. Token
///   i + 1 − W, the oldest that query i sees, leaves the cache at step i as a windowed cache drops
///   it: query i attends over all of G_i (it included), then the token leaves FIRST, and the policy
///   evicts only when the cache is still over k: step i is full exactly when |G_i| = k + 1 and
///   i + 1 − W ∉ G_i. The window's drop is not an eviction and takes no budget
///   (StepRecord::evicted stays the policy's choice); after the prefill rule at step P − 1 every
///   token step P cannot see leaves the same way. Hence |G_i| ≤ W, every S_i holds
///   min(k, i + 1 − max(0, i + 2 − W)) tokens in pure streaming (what query i + 1 can see, up to
///   k), a budget k = W − 1 never evicts (the whole window is kept) and a budget k ≥ W compresses
///   nothing: the run reports budget n, as for a policy that does not compress the head. The
///   exact rows and every metric use the window's mask.
/// - Teacher forcing: Q, K and V are fixed inputs; eviction in one layer does not change the
///   inputs of later layers or later queries.
/// - Metrics of step i for query head h, with a the exact causal row over {0..i}:
///   r_i^h = Σ_{j ∈ G_i} a^h_ij (full-row normalizer), TV = 1 − r (theory.md §1), and the output
///   relative error ‖o_i − õ_i‖ / ‖o_i‖ (core/metrics.hpp output_relative_error), with õ the
///   output of the tracked attention (exactly zero weight on evicted tokens, erratum §9.4). When
///   G_i = {0..i} (nothing evicted yet) r = 1 and the error is 0 exactly (not recomputed).
///
/// Cost per (layer, KV head): the full-row normalizers log Σ_{j≤i} exp(s_ij) and exact outputs
/// o_i are precomputed per query head by core/exact_attention_rows.hpp on the CPU path that
/// active_cpu_path() names (SUBEVICT_CPU_PATH; the paths agree within exact_rows_tolerance, and
/// the per-step scores, core/cached_scores.hpp, are bit-identical on both, so no decision
/// depends on the path), O(g n² d) flops; each streaming step then costs O(g k d) (one (k+1) x d by d x g product for
/// the scores, one for the outputs) plus the policy. Memory O(g n d + k d).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/exact_attention_rows.hpp"
#include "core/workload.hpp"
#include "greedy/eviction/policies/eviction_policy.hpp"
#include "greedy/eviction/process/head_group.hpp"

namespace subevict::greedy {

/// A cache budget: an absolute size, or a ratio of a stated base.
/// resolve() = max(1, round(ratio * base)) (half away from zero), capped at n, where base is
/// n (kRatioOfTokens, H2O's "x% of the sequence") or the prompt length P (kRatioOfPrompt, as
/// H2O's masking simulation and FlexGen fix the budget from the prompt; requires P > 0).
struct Budget {
  enum class Kind { kAbsolute, kRatioOfTokens, kRatioOfPrompt };
  Kind kind = Kind::kAbsolute;
  double value = 1.0;  ///< k for kAbsolute (an integer ≥ 1), else the ratio in (0, 1]

  static Budget absolute(int k) { return {Kind::kAbsolute, double(k)}; }
  static Budget ratio_of_tokens(double ratio) { return {Kind::kRatioOfTokens, ratio}; }
  static Budget ratio_of_prompt(double ratio) { return {Kind::kRatioOfPrompt, ratio}; }

  /// The absolute k for n tokens and prompt length P. Throws InputError (source "budget") for a
  /// non-integer or < 1 absolute size, a ratio outside (0, 1], or kRatioOfPrompt with P = 0.
  [[nodiscard]] int resolve(int tokens, int prefill) const;
};

/// Options of one simulation.
struct SimulationOptions {
  /// k, the cache capacity in KV entries (absolute; use Budget::resolve for ratios). ≥ 1.
  int budget = 1;
  /// How the group's query heads combine their attention for scoring policies.
  GroupAggregation aggregation = GroupAggregation::kSum;
  /// P: tokens processed with full attention before the policy's prefill rule compresses them to
  /// k (0: pure streaming). 0 ≤ P ≤ n.
  int prefill = 0;
  /// Record S_i (ascending) for every step in Trace::cache (memory O(n k)).
  bool record_cache = false;
  /// Compute the per-step metrics (needs the O(g n² d) precompute). When false only evictions
  /// are recorded (StepRecord metrics are NaN, the per-head vectors stay empty): the cost of the
  /// tracked attention and the policy decisions alone, O(g k d) per step.
  bool compute_metrics = true;
  /// Seed of randomized policies; each (layer, KV head) derives its own stream from it.
  std::uint64_t seed = 0;
  /// OpenMP threads (≥ 1) of the products a head computes for a block of steps at once
  /// (streaming_head.hpp; one inside another parallel region). Results do not depend on it.
  int threads = 1;
  /// Called with (steps done, n) after every kStepReport-th step and after the last (may be
  /// empty): how a caller shows that a long head is alive.
  std::function<void(int, int)> on_steps;
};

/// The steps between two SimulationOptions::on_steps calls.
inline constexpr int kStepReport = 4096;

/// One step's group summary. Retained mass is clamped to ≤ 1 (rounding can exceed it by an ulp).
struct StepRecord {
  int step = 0;                 ///< i
  double retained_mass = 1.0;   ///< mean over the g query heads of r_i^h(G_i)
  double total_variation = 0.0; ///< 1 − retained_mass (= mean over heads of TV(a_i^h, ã_i^h))
  double output_error = 0.0;    ///< mean over the g query heads of ‖o_i − õ_i‖ / ‖o_i‖
  Token evicted = kNoEviction;  ///< the member of G_i evicted at step i, or kNoEviction
};

/// The record of one simulation of one (layer, KV head).
struct Trace {
  std::string policy;   ///< the policy's name()
  bool oracle = false;  ///< the policy reads the future (label it an oracle in reports)
  int layer = 0;
  int kv_head = 0;
  int tokens = 0;       ///< n
  int heads = 1;        ///< g
  int budget = 0;       ///< k actually used (n when the policy does not compress this head, or k ≥ window)
  int prefill = 0;      ///< P
  int window = 0;       ///< HeadGroup::window (0: global)
  /// Per step i = 0..n−1. Steps i < P (with P > k) attend over the whole prefix (r = 1).
  std::vector<StepRecord> steps;
  /// Per step and query head, row-major [step][head] (n × g); empty without metrics.
  std::vector<double> head_retained_mass;
  std::vector<double> head_output_error;
  /// Tokens the prefill rule dropped at the end of step P−1, ascending (empty without prefill);
  /// on a windowed layer only those step P still sees (the others leave with the window first).
  std::vector<Token> prefill_evicted;
  /// S_i ascending for i = 0..n−1 when SimulationOptions::record_cache, else empty.
  std::vector<std::vector<Token>> cache;
  /// Wall-clock seconds of the exact-row precompute (0 without metrics or when the rows were
  /// given to simulate) and of the steps
  /// (prefill rule and streaming steps, policy included).
  double precompute_seconds = 0.0;
  double step_seconds = 0.0;

  /// Σ_i Σ_h r_i^h: the objective of theory.md §5 summed over the group (the quantity the
  /// offline optimum bounds). Excludes prefill steps i < P when P > k (they are not part of the
  /// streaming process); 0 without metrics.
  [[nodiscard]] double total_retained_mass() const;

  /// The schedule t_j (greedy/eviction/process/cache_schedule.hpp): the last step i with j ∈ S_i; j − 1 when
  /// evicted on arrival, n − 1 when never evicted; prefill-dropped tokens get P − 2 (they are in
  /// G_{P−1} but not in S_{P−1}); with a window W, t_j ≤ j + W − 2 (the token leaves after step
  /// j + W − 1, the last that sees it). j ∈ G_i exactly for j ≤ i ≤ t_j + 1.
  [[nodiscard]] std::vector<int> last_step() const;
};

/// Simulates `policy` on one (layer, KV head). Throws std::invalid_argument for invalid input
/// (HeadGroup::validate, budget < 1, prefill outside [0, n], threads < 1) and std::logic_error naming the
/// policy when it breaks its contract (evicts while not full, evicts nothing or a non-member when
/// full, keeps more than k or a non-prompt token at prefill).
[[nodiscard]] Trace simulate(const HeadGroup& input, EvictionPolicy& policy,
                             const SimulationOptions& options);

/// The exact rows of every query head of `input` (core/exact_attention_rows.hpp, on
/// active_cpu_path()): the precompute of simulate's metrics, O(g n² d), which depends on the
/// group only. Compute it once to simulate several policies or budgets on the same group. Each
/// head's rows use `threads` OpenMP threads (the same bits on any count).
[[nodiscard]] std::vector<ExactRows> group_exact_rows(const HeadGroup& input, int threads = 1);

/// simulate with the precompute given: `exact` = group_exact_rows(input) (read only when
/// options.compute_metrics). The trace equals simulate(input, policy, options)'s bit for bit,
/// except precompute_seconds = 0. Throws std::invalid_argument, in addition, when `exact` does not
/// hold g heads of n rows and n x d outputs.
[[nodiscard]] Trace simulate(const HeadGroup& input, EvictionPolicy& policy, const SimulationOptions& options,
                             const std::vector<ExactRows>& exact);

/// Creates a fresh policy; called once per worker thread.
using PolicyFactory = std::function<std::unique_ptr<EvictionPolicy>()>;

/// Simulates every (layer, KV head) of `workload`, layer-major: result[layer * kv_heads + kv_head].
/// `threads` workers (0 = OpenMP default), one policy instance each; results do not depend on the
/// thread count. `progress(done, total)`, if set, is called after each head from one thread at a
/// time.
[[nodiscard]] std::vector<Trace> simulate_workload(
    const Workload& workload, const PolicyFactory& make_policy, const SimulationOptions& options,
    int threads = 1, const std::function<void(int, int)>& progress = {});

}  // namespace subevict::greedy
