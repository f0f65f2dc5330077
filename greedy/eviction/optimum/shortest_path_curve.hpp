#pragma once
/// \file
/// The budget curve OPT(1), ..., OPT(K) of one head, every budget exact and certified, by
/// successive shortest paths on the eviction network of offline_optimum.hpp with its token arcs
/// implicit (implicit_flow.hpp). An alternative to raising the column generation's network simplex
/// budget by budget (implicit_flow_optima); measured side by side in bench/budget_curve_bench.cpp
/// (bench/results/budget_curve.md): about as fast at n = 1024 and 2048, slower at 4096, so
/// optimum_budget_curve keeps the column generation.
///
/// Network and integer costs are implicit_flow's (R_j → D_e: token j cached on steps j..e−1), with
/// the backbone D_i → D_{i+1} at capacity n, which never binds (the cut between two steps carries
/// exactly k units, backbone plus cached tokens), so raising the budget from k to k + 1 only adds a
/// unit of supply at D_0 and of demand at D_n. The solver keeps a flow on a restricted network and
/// integer potentials π with reduced cost c + π(u) − π(v) ≥ 0 on every residual arc (dual
/// feasibility, which makes the flow optimal on the restricted network):
///
///   - budget 1 comes from the column generation (implicit_flow.hpp's solve_budget), whose optimal
///     basis's potentials are dual feasible on the residual network; its arcs and flow are kept;
///   - k → k + 1: one Dijkstra from D_0 on the reduced costs finds the cheapest augmenting path;
///     π grows by the distances (capped at D_n's, so it stays dual feasible) and the unit is sent
///     along the path, whose arcs then have reduced cost 0. The same π is dual feasible for the
///     flows of both k and k + 1, so budgets go in pairs: two augmentations, one pricing;
///   - pricing: an implicit arc R_j → D_e changes its reduced cost by δ(R_j) − δ(D_e) in a
///     Dijkstra, every δ ≤ 0, so each token keeps a slack (a lower bound on its implicit arcs'
///     reduced costs from its last pricing, lowered by every fall of π(R_j) below the D_e after
///     it) and only tokens whose slack went negative are priced (triangle_pricing.hpp);
///   - a violated arc sends the pair back to its committed budget k (every change since is
///     journaled and undone), where π is dual feasible on the whole network, so the violated arcs
///     (up to 4 per token) join the restricted network at flow 0 and the pair is solved again.
///
/// Certificate: with every reduced cost ≥ 0 (the used arcs' 0), each token's Lagrangian term is
/// bounded from π(R_j) alone, so the bound of implicit_flow.hpp (upper_bound_from) costs O(n) per
/// budget: value ≤ OPT(k) ≤ upper_bound, value = Σ_j W_jj + Σ_j C_j(e_j) of the flow's schedule.
/// Costs are rounded to the quantum of implicit_flow.hpp, so value is the optimum of the rounded
/// network and upper_bound − value the certified rounding gap (≤ n · 2^−s).
///
/// Memory: the restricted network (tens of arcs per token) plus the pricing's block sums (n²/128
/// doubles). Time: per budget about two Dijkstras on 2n + 1 nodes and the pricing of the tokens
/// whose slack ran out (most of them on the benchmark heads: the Dijkstras settle nearly every
/// node), which is why it is no faster than the column generation.

#include <cstddef>
#include <functional>
#include <vector>

#include "greedy/eviction/process/triangular_gains.hpp"

namespace subevict::greedy {

/// One budget of the curve, exact: value ≤ OPT(budget) ≤ upper_bound, the difference the rounding.
struct CurveOptimum {
  int budget = 0;
  double value = 0.0;
  double upper_bound = 0.0;
};

/// What the solver did (for benchmarks and progress).
struct ShortestPathCurveStats {
  std::size_t augmentations = 0;   ///< Dijkstras that raised the budget by one (retries included)
  std::size_t pricing_passes = 0;  ///< pricing passes (the first budget's column generation included)
  std::size_t tokens_priced = 0;   ///< columns walked by those passes after the first budget
  std::size_t blocks_skipped = 0;  ///< their blocks of 64 steps skipped on the block bound
  std::size_t blocks_walked = 0;   ///< and walked step by step
  std::size_t arcs_added = 0;      ///< violated arcs added after the first budget
  std::size_t retries = 0;         ///< pairs priced as violated, undone and solved again
  std::size_t token_arcs = 0;      ///< restricted token arcs at the end (never-cached arcs included)
};

struct ShortestPathCurveOptions {
  /// Called with each budget and its certificate y_0..y_n (lagrangian_upper_bound(gains, budget,
  /// y) equals the point's upper_bound up to summation order); may be empty. Certificates arrive
  /// in increasing order of budget, each once.
  std::function<void(int budget, const std::vector<double>& y)> on_certificate;
  /// Called after each certified budget with the number certified so far; may be empty.
  std::function<void(int done)> on_budget;
};

struct ShortestPathCurve {
  std::vector<CurveOptimum> points;  ///< budgets 1..max_budget in order
  ShortestPathCurveStats stats;
};

/// OPT(k) for k = 1..max_budget on stored gains W (n = gains.size()). Throws InputError naming
/// "shortest_path_curve" unless 1 ≤ max_budget ≤ max(n, 1). Equal to implicit_flow_optimum at
/// every budget up to the certified rounding gaps (tests: 1e-9 relative).
template <class Scalar>
[[nodiscard]] ShortestPathCurve shortest_path_curve(const TriangularGains<Scalar>& gains, int max_budget,
                                                    const ShortestPathCurveOptions& options = {});

}  // namespace subevict::greedy
