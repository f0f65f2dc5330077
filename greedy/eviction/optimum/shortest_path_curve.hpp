#pragma once
/// \file
/// The budget curve OPT(1), ..., OPT(K) of one head, every budget exact and certified, by
/// successive shortest paths on the eviction network of offline_optimum.hpp with its token arcs
/// implicit (implicit_flow.hpp); what budget_curve.hpp computes exact curves with. Measured side by
/// side with raising the column generation's network simplex budget by budget (implicit_flow_optima)
/// in bench/budget_curve_bench.cpp (bench/results/budget_curve.md).
///
/// Network and integer costs are implicit_flow's (R_j → D_e: token j cached on steps j..e−1), with
/// the backbone D_i → D_{i+1} at capacity n, which never binds (the cut between two steps carries
/// exactly k units, backbone plus cached tokens), so raising the budget from k to k + 1 only adds a
/// unit of supply at D_0 and of demand at D_n. The flow is held as each token's arc (its end e_j)
/// and the backbone's flows; nothing else is stored: every other token arc stays implicit. The
/// solver keeps integer potentials π with reduced cost c + π(u) − π(v) ≥ 0 on every residual arc of
/// the whole network (dual feasibility, which makes the flow optimal):
///
///   - a run's first budget comes from the column generation (implicit_flow.hpp's solve_budget, from
///     guessed arcs), whose optimal basis's potentials are dual feasible on the whole residual
///     network;
///   - k → k + 1: one Dijkstra from D_0 on the reduced costs of the whole residual network finds
///     the cheapest augmenting path. The residual arcs are the backbone (both ways where it carries
///     flow), D_{e_j} → R_j (the reverse of token j's arc, R_j's only way in) and every implicit
///     arc R_j → D_e. When R_j settles, its first block of 64 steps is relaxed at once; its later
///     blocks enter the queue one at a time, in the order of a lower bound on what each can give
///     (C_j at the block's end and the block's largest π(D_e)), while that bound stays below an
///     upper bound on D_n's distance (a settled D_i plus the backbone to D_n); a block is walked
///     only if it comes out of the queue before D_n and still holds a step not settled (an arc
///     into a settled node changes nothing). So the distances below D_n's are exact on the
///     whole network, π grows by the distances capped at D_n's and stays dual feasible
///     everywhere: no pricing pass, no restricted network, no retry. The queue is a radix heap
///     (radix_heap.hpp): its keys are integer distances that never fall below the last one
///     popped.
///
/// Certificate: with every reduced cost ≥ 0 (π(R_j) raised until its arc's reduced cost is 0), each
/// token's Lagrangian term is bounded from π(R_j) alone, so the bound of implicit_flow.hpp
/// (upper_bound_from) costs O(n) per budget: value ≤ OPT(k) ≤ upper_bound, value = Σ_j W_jj +
/// Σ_j C_j(e_j) of the flow's schedule. Costs are rounded to the quantum of implicit_flow.hpp, so
/// value is the optimum of the rounded network and upper_bound − value the certified rounding gap
/// (≤ n · 2^−s).
///
/// Memory: O(n) for the flow and potentials per run, the pricing's block sums (n²/128 doubles and as
/// many integer costs, shared by the runs) and the queue. Time per budget: one Dijkstra on 2n + 1
/// nodes plus the blocks it walks (bench/results/budget_curve.md).

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
  std::size_t augmentations = 0;   ///< Dijkstras, one per budget after each run's first
  std::size_t pricing_passes = 0;  ///< the column generation rounds of each run's first budget
  std::size_t nodes_settled = 0;   ///< over all Dijkstras
  /// The blocks of 64 steps after a settled token's first: never walked (on their bound, or every
  /// step settled), queued (one per token at a time) and walked step by step (out of the queue
  /// before D_n with a step not settled).
  std::size_t blocks_skipped = 0;
  std::size_t blocks_queued = 0;
  std::size_t blocks_walked = 0;

  /// Adds another run's counts.
  ShortestPathCurveStats& operator+=(const ShortestPathCurveStats& other) {
    augmentations += other.augmentations;
    pricing_passes += other.pricing_passes;
    nodes_settled += other.nodes_settled;
    blocks_skipped += other.blocks_skipped;
    blocks_queued += other.blocks_queued;
    blocks_walked += other.blocks_walked;
    return *this;
  }
};

struct ShortestPathCurveOptions {
  /// Called with each budget and its certificate y_0..y_n (lagrangian_upper_bound(gains, budget,
  /// y) equals the point's upper_bound up to summation order); may be empty. Certificates arrive
  /// in increasing order of budget, each once, from one thread at a time (with threads > 1 the
  /// later runs' certificates are held, n + 1 doubles each, until every run is done).
  std::function<void(int budget, const std::vector<double>& y)> on_certificate;
  /// Called after each certified budget with the number certified so far; may be empty. With
  /// threads > 1 it is called from the runs' threads, one call at a time.
  std::function<void(int done)> on_budget;
  /// Threads (≥ 1): the budgets are cut into up to this many runs of consecutive budgets (of 256
  /// at least), each started by its own column generation at its first budget and run on its own
  /// thread. Every point is exact either way; values may differ in the last bits (another optimal
  /// flow of the same integer cost).
  int threads = 1;
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
