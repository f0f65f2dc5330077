#pragma once
/// \file
/// The exact offline optimum of the irreversible eviction process on the network of
/// offline_optimum.hpp, with its n(n+1)/2 token arcs left implicit (column generation).
///
/// An arc R_j → D_e (token j cached on steps j..e−1, e ∈ [j, n]) costs −C_j(e), where
/// C_j(e) = Σ_{i=j+1}^{min(e, n−1)} W_ij is a prefix sum down column j of W: any arc's cost is one
/// walk down a stored column, so no arc is ever stored unless it is needed. The solver keeps a
/// small restricted network (the never-cached arc of every token plus the arcs added so far),
/// solves it exactly with a network simplex that continues from its previous optimal basis
/// (incremental_network_simplex.hpp), and prices every implicit arc against the potentials in one
/// pass over the stored triangle, skipping blocks of 64 steps whose two bounds (from C_j at the
/// block's end and the block's largest potential) show they hold no violated arc and no lower
/// certificate term (PricingBlocks):
///
///   - an arc with negative reduced cost is added (per token, the most negative), and the
///     restricted network is solved again;
///   - when no arc has a negative reduced cost, the restricted optimum is optimal for the whole
///     network (linear-programming optimality), so the schedule is exact.
///
/// Costs are shifted per token and rounded to multiples of a quantum exactly as offline_optimum.hpp
/// does, and pricing uses the same rounded costs, so the final schedule is the optimum of the
/// rounded network, and the certificate below bounds the unrounded one.
///
/// Certificate. For any potentials y_0..y_n on the cache states D_0..D_n, Lagrangian relaxation of
/// flow conservation at the D nodes gives (b_0 = k − 1, b_i = −1 for 0 < i < n, b_n = −k)
///
///   OPT ≤ Σ_j W_jj − [ Σ_i b_i y_i + Σ_j min_{e ∈ [j, n]} (y_e − C_j(e)) + k Σ_{i<n} min(0, y_{i+1} − y_i) ],
///
/// evaluated in one pass (lagrangian_upper_bound). Every round yields a feasible schedule (a lower
/// bound) and such a bound from the round's potentials, so the loop can also stop at a requested
/// relative gap (certified mode).
///
/// Several budgets share one simplex: raising the budget keeps the basis feasible
/// (IncrementalNetworkSimplex::increase_budget), so each budget continues from the previous one's
/// optimum and arcs. Each budget still needs its own rounds and pricing passes (about 3 per budget
/// on the benchmark heads), so a budget curve costs far more than one budget: k = 1..2048 at
/// n = 4096 takes 119 s against 0.99 s for k = 2048 alone (bench/results/greedy_long_context_optimum.md).
///
/// Memory: the stored triangle (TriangularGains: n(n+1)/2 entries), n²/128 doubles of block-end
/// sums, plus O(n · rounds) for the restricted network; streamed_flow.hpp runs the same column
/// generation (column_generation.hpp) without the triangle. Time per round: one network simplex on the
/// restricted network and one pricing pass (O(n²) at worst, O(n²/64) when every block is skipped).

#include <cstdint>
#include <functional>
#include <vector>

#include "greedy/eviction/process/cache_schedule.hpp"
#include "greedy/eviction/process/triangular_gains.hpp"

namespace subevict::greedy {

/// What one pricing pass's block skip did, counted over every token (implicit_flow.cpp
/// price_token). For token j, each block of 64 steps after the one holding step j + 1 has two lower
/// bounds: on the reduced cost of its arcs (the block cannot add an arc when it is ≥ 0, or ≥ the
/// worst arc kept once `arcs_per_token` are kept) and on its certificate terms y_e − C_j(e) (the
/// block cannot lower the token's Lagrangian term when it is ≥ the term so far). A block is skipped
/// only when both allow it; each count below is of blocks, not steps.
struct PricingBlocks {
  std::size_t skipped = 0;                  ///< both bounds allowed the skip
  std::size_t walked_for_reduced_cost = 0;  ///< walked: only the reduced-cost bound forbade the skip
  std::size_t walked_for_term = 0;          ///< walked: only the term bound forbade the skip
  std::size_t walked_for_both = 0;          ///< walked: both bounds forbade the skip
};

/// One round of the column generation, for progress reports.
struct ImplicitFlowRound {
  int round = 0;                ///< 1-based
  std::size_t arcs = 0;         ///< token arcs in the restricted network
  std::size_t added = 0;        ///< arcs with negative reduced cost added after this round
  double value = 0.0;           ///< the round's schedule value (a lower bound on OPT)
  double upper_bound = 0.0;     ///< the round's certified upper bound
  double seconds = 0.0;         ///< since the solve started
  /// The round's pricing pass (implicit_flow_optimum and implicit_flow_optima; all zero from
  /// streamed_flow.hpp, which prices tile by tile without blocks).
  PricingBlocks blocks;
};

struct ImplicitFlowOptions {
  /// When > 0, stop as soon as upper_bound − value ≤ relative_gap · upper_bound (status kFeasible
  /// unless no arc is violated by then). 0: run until no arc is violated (status kOptimal). Must be
  /// finite and ≥ 0.
  double relative_gap = 0.0;
  /// Rounds at most (status kFeasible when reached before optimality). Must be ≥ 1.
  int max_rounds = 100000;
  /// When > 0, stop after the first round that ends past this many seconds (status kFeasible
  /// unless no arc is violated by then, its certified interval kept). Must be ≥ 0.
  double max_seconds = 0.0;
  /// Arcs added per violated token and round: the most negative reduced cost, then the next ones
  /// at other steps. Must be in [2, 4]: the most negative one may be the token's arc at capacity,
  /// already in the network.
  int arcs_per_token = 2;
  /// Return the process form of the schedule (to_process_schedule).
  bool process_form = true;
  /// Fill summary.step_mass (O(Σ lifetimes) per budget) and take summary.value as its sum; when
  /// false, step_mass is left empty and value = Σ_j W_jj + Σ_j C_j(e_j) over the flow's arcs (equal
  /// up to summation order), which keeps a budget curve of thousands of budgets cheap.
  bool step_mass = true;
  /// Called after every round (may be empty).
  std::function<void(const ImplicitFlowRound&)> on_round;
  /// implicit_flow_optima: called after each budget is solved with the number solved so far (may
  /// be empty); how a long budget curve reports progress.
  std::function<void(std::size_t)> on_budget;
};

/// The result: the schedule summary (value, certified upper_bound, schedule, step masses, status
/// kOptimal when no implicit arc is violated, model_size = token arcs kept, nodes = rounds) and the
/// potentials y_0..y_n whose Lagrangian bound is `summary.upper_bound`.
struct ImplicitFlowResult {
  ScheduleSummary summary;
  std::vector<double> potentials;
  int budget = 0;
};

/// The offline optimum for stored gains and budget ≥ 0 (throws InputError naming "implicit_flow"
/// for a negative budget or invalid options). Equal to offline_optimum on the same W up to the
/// certified rounding gap (tests: ≤ 1e-9 relative).
template <class Scalar>
[[nodiscard]] ImplicitFlowResult implicit_flow_optimum(const TriangularGains<Scalar>& gains, int budget,
                                                       const ImplicitFlowOptions& options = {});

/// implicit_flow_optimum for several budgets in one call (results in the order of `budgets`),
/// solved in ascending order of budget: a budget at most 15% above the previous one continues from
/// the previous optimal basis and arcs with the flow raised by the difference (the budget curve's
/// k → k + 1); a larger step starts a fresh simplex from its own guessed arcs. Every result is as
/// exact as a separate implicit_flow_optimum call.
template <class Scalar>
[[nodiscard]] std::vector<ImplicitFlowResult> implicit_flow_optima(const TriangularGains<Scalar>& gains,
                                                                   const std::vector<int>& budgets,
                                                                   const ImplicitFlowOptions& options = {});

/// The certificate's upper bound on OPT for `budget` from potentials y_0..y_n (any real values;
/// the formula in the file comment). Throws InputError unless potentials has n + 1 finite entries
/// and budget ≥ 0. O(n²).
template <class Scalar>
[[nodiscard]] double lagrangian_upper_bound(const TriangularGains<Scalar>& gains, int budget,
                                            const std::vector<double>& potentials);

namespace detail {

/// One token's pricing as the pricing pass of implicit_flow_optimum computes it, block skip
/// included, against potentials the caller chooses (tests: the skip must equal a walk over every
/// step for any potentials, not only a simplex's).
struct TokenPricing {
  /// The steps e of the arcs R_j → D_e kept (the `keep` most negative reduced costs, ascending;
  /// ties: the lowest step) and their integer reduced costs.
  std::vector<int> steps;
  std::vector<std::int64_t> reduced;
  /// min over e ∈ [j, n] of y_e − C_j(e), y = −pot / scale, C_j(n) = C_j(n − 1).
  double lagrangian = 0.0;
  /// The instance's cost scale 2^s: arc R_j → D_e has reduced cost
  /// ⌊(C_j(n − 1) − C_j(e)) · scale + 1/2⌋ + pot_r − pot[e].
  double scale = 0.0;
  PricingBlocks blocks;
};

/// Prices token j (0 ≤ j < n) against potentials pot of D_0..D_n (n + 1 values, each of magnitude
/// < 2^60) and pot_r of R_j, with `restricted` the steps e ∈ (j, n) of the token's restricted arcs
/// (ascending, each once; the never-cached arc e = j is always restricted) and 1 ≤ keep ≤ 4.
/// Throws InputError naming "implicit_flow" otherwise. O(n²) (it scales the whole instance).
template <class Scalar>
[[nodiscard]] TokenPricing price_token(const TriangularGains<Scalar>& gains, int j,
                                       const std::vector<std::int64_t>& pot, std::int64_t pot_r,
                                       const std::vector<int>& restricted, int keep);

}  // namespace detail

}  // namespace subevict::greedy
