#pragma once
/// \file
/// The offline optimum of implicit_flow.hpp on gains that are streamed, never stored
/// (streamed_gains.hpp): the same column generation, restricted network, integer costs,
/// certificate and stopping rules, with every pass over the gains a recomputation of the
/// attention tiles. Memory O(g n d + n · arcs per token) instead of the n(n + 1)/2-entry triangle,
/// so contexts whose triangle does not fit (n = 131072: 34 GB in float) get an exact optimum or,
/// with ImplicitFlowOptions::relative_gap, a certified interval.
///
/// Passes, each O(g n² d) flops on the gains' threads:
///   1. the starting arcs: per token its total earnings shift_j = C_j(n − 1) and the best
///      lifetimes against guessed slot prices (column_generation.hpp LifetimeGuess). The prices
///      p_i (the k-th largest entry of row i + 1) are estimated from 512 evenly spaced entries of
///      each row (exact for rows of ≤ 512 entries): any start is exact, a good one saves rounds;
///   2. one pricing pass per round: every arc's reduced cost in integers and the certificate's
///      per-token term, tile by tile (a double bound skips the integer test where it cannot be
///      negative);
///   3. with ImplicitFlowOptions::step_mass, the schedule's step masses: each pricing pass sums
///      them for the schedule it prices (PricingInput::schedule), so the round that stops has
///      them and no pass of their own is made (the same sums in the same order as such a pass).
/// Each C_j(e) is the running sum down column j in ascending rows on one thread, the one order
/// every pass uses, so the earnings of an arc added in one round are exactly those any later
/// round prices.
///
/// The instance is the streamed gains' (exact attention in double through the tiles), so results
/// equal implicit_flow_optimum on triangular_gain_matrix<double> within the attention paths'
/// tolerance (tests: 1e-9 relative).

#include <vector>

#include "greedy/eviction/optimum/implicit_flow.hpp"
#include "greedy/eviction/process/streamed_gains.hpp"

namespace subevict::greedy {

/// The optimum (or certified interval) for every budget in `budgets` (results in that order), each
/// solved from its own guessed arcs. Throws InputError naming "implicit_flow" for a negative
/// budget or invalid options. Budget 0 gives the never-cached schedule Σ_j W_jj with status
/// kOptimal, certified without a pass by y_i = g · i (no entry of g heads' summed attention exceeds
/// g, so every token's term is y_j, as in implicit_flow.cpp).
[[nodiscard]] std::vector<ImplicitFlowResult> streamed_flow_optima(const StreamedGains& gains,
                                                                   const std::vector<int>& budgets,
                                                                   const ImplicitFlowOptions& options = {});

/// streamed_flow_optima for one budget.
[[nodiscard]] ImplicitFlowResult streamed_flow_optimum(const StreamedGains& gains, int budget,
                                                       const ImplicitFlowOptions& options = {});

}  // namespace subevict::greedy
