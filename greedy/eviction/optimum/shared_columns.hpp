#pragma once
/// \file
/// The shared optimum (shared_optimum.hpp) with its H · n(n+1)/2 token arcs left implicit, for
/// caches shared by many heads: the whole model, where the explicit network does not fit (90
/// heads at n = 2048 hold 189 million arcs, about 11 GB).
///
/// The column generation of implicit_flow.hpp on the shared network (column_generation.hpp's
/// solve_budget with H heads): a restricted network holds, per (head, token), its never-cached arc,
/// its best lifetimes against guessed slot prices (the T-th best entry of each query row over the
/// heads, as the single-head solver guesses with k) and the arcs added so far. Each round solves it
/// exactly with the network simplex that continues from its previous basis
/// (incremental_network_simplex.hpp with H heads), prices every implicit arc of every head against
/// the round's potentials (triangle_pricing.hpp's price_token, the heads in parallel), and adds per
/// token the most negative arcs. The loop ends when no arc has a negative reduced cost (the
/// restricted optimum is optimal for the whole network: kOptimal), when the certificate's relative
/// gap is at most the requested one (kFeasible), or after max_rounds or max_seconds (kFeasible).
///
/// Certificate: implicit_flow.hpp's Lagrangian bound with H tokens per step
/// (column_generation.hpp upper_bound_from with heads = H), evaluated by the same pricing pass, so
/// every round's bound holds for the whole network; the best over the rounds is reported.
///
/// Costs are shifted per token and rounded to one quantum for all heads (column_generation's
/// scale for the largest shift of any head), and pricing uses the same integer costs.
/// Memory: the stored triangles (n(n+1)/2 doubles per head) plus the restricted network (about
/// 40 bytes an arc, H n (3 + arcs added) arcs).

#include <functional>
#include <vector>

#include "greedy/eviction/optimum/implicit_flow.hpp"
#include "greedy/eviction/optimum/shared_optimum.hpp"
#include "greedy/eviction/process/triangular_gains.hpp"

namespace subevict::greedy {

struct SharedColumnOptions {
  /// Stop when (upper_bound − value) / upper_bound ≤ this (0: only at optimality); ≥ 0.
  double relative_gap = 0.0;
  int max_rounds = 100;     ///< ≥ 1
  /// Stop after the first round that ends past this many seconds (kFeasible, its certified
  /// interval); 0: no limit. ≥ 0.
  double max_seconds = 0.0;
  int arcs_per_token = 4;   ///< the most arcs one pricing pass keeps per token, 2..4
  int threads = 0;          ///< pricing workers (0: OpenMP's default)
  std::function<void(const ImplicitFlowRound&)> on_round;  ///< may be empty; seconds since the call
};

/// The shared optimum of these heads (every pointer non-null, all of one n) for a total budget
/// T ≥ 0, with SharedOptimum's fields (arcs: the final restricted network's token arcs). Throws
/// InputError naming "shared_columns" for no head, heads of different sizes, T < 0 or options out
/// of range.
[[nodiscard]] SharedOptimum shared_optimum_columns(const std::vector<const TriangularGains<double>*>& gains,
                                                   long long total, const SharedColumnOptions& options = {});

}  // namespace subevict::greedy
