#pragma once
/// \file
/// Exact OPT_k = max_{|T| ≤ k} f(T) for monotone submodular f by depth-first branch and bound
/// (theory.md §5).
///
/// A node fixes some elements in (the set S of a SetState) and some out; the rest are undecided.
/// Its subproblem is max f(T) over S ⊆ T ⊆ S ∪ U, |T| ≤ k, with U the undecided elements and
/// r = k − |S| the remaining budget. Bounds on that maximum, applied in this order (each only when
/// the previous did not prune):
///
/// 1. Online bound (Leskovec et al. 2007; greedy/optimizers/online_bound.hpp): f(S) + Σ of the r largest
///    positive Δ(e|S), e ∈ U. Valid because f(S ∪ T') ≤ f(S) + Σ_{e∈T'} Δ(e|S) by submodularity.
/// 2. A problem-specific plug-in (NodeBound), e.g. the Lagrangian bound of facility location
///    (greedy/exact/facility_location_bound.hpp).
/// 3. Pairwise bound. Order U by Δ(e|S) descending (ties: lowest index first) as o_1, o_2, ...
///    with gains g_1 ≥ g_2 ≥ .... For a non-empty T' ⊆ U let o_t be its first element in this
///    order; submodularity along the chain S ⊂ S ∪ {o_t} ⊂ ... gives
///      f(S ∪ T') ≤ f(S) + g_t + Σ_{e ∈ T' \ {o_t}} Δ(e | S ∪ {o_t}),
///    and every other element of T' comes later than o_t, so
///      max_{T'} f(S ∪ T') ≤ max(f(S), max_t P_t),
///      P_t = f(S) + g_t + top⁺_{r−1} { min(g_s, Δ(o_s | S ∪ {o_t})) : s > t },
///    where top⁺_q sums the q largest positive entries. The relaxation
///    C_t = f(S) + g_t + top⁺_{r−1}{g_s : s > t} ≥ P_t is nonincreasing in t (C_1 is the online
///    bound), so the scan over t stops as soon as C_t can no longer raise the maximum; when it stops
///    early (the node cannot be pruned, or `pairwise_first_elements` first elements were tried) the
///    bound returned is max(max_{t tried} P_t, C_{next t}), still valid. The pairwise term costs
///    up to |U| gains per first element tried. It exploits the interaction Δ(e|S ∪ {e'}) between
///    pairs, as in pairwise bounds of submodular branch and bound (cf. Sakaue and Ishihata 2018).
///
/// Branching: the plug-in's suggestion if it is undecided, else the undecided element with the
/// largest gain Δ(e|S) (ties: lowest index); the branch with the element in is searched first, so
/// the first leaf reached is the greedy solution. Pruning: a node whose bound is
/// ≤ incumbent + tolerance is closed, tolerance = relative_tolerance · max(1, |incumbent|), so the
/// returned value is optimal within that tolerance.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "greedy/optimizers/selection.hpp"
#include "greedy/functions/set_function.hpp"

namespace subevict::greedy {

/// The decision about one element at a node.
enum class Decision : unsigned char { kUndecided, kIn, kOut };

/// No element (e.g. no branching suggestion).
inline constexpr Element kNoElement = std::numeric_limits<Element>::max();

/// What a NodeBound sees of the node being bounded, and how it may improve the incumbent.
class BranchAndBoundNode {
 public:
  virtual ~BranchAndBoundNode() = default;
  /// The state of S, the elements fixed in (|S| < k at every bounded node).
  [[nodiscard]] virtual const SetState& state() const = 0;
  /// The decision per element of the ground set (kIn exactly for the members of S).
  [[nodiscard]] virtual std::span<const Decision> decisions() const = 0;
  /// The cardinality budget k.
  [[nodiscard]] virtual std::size_t k() const = 0;
  /// The best value found so far (of a feasible set).
  [[nodiscard]] virtual double incumbent() const = 0;
  /// The absolute tolerance: only sets with value > incumbent() + tolerance() matter.
  [[nodiscard]] virtual double tolerance() const = 0;
  /// True at the root node (a bound may spend more effort there).
  [[nodiscard]] virtual bool root() const = 0;
  /// Offers a feasible set (distinct elements, at most k, any order): it is evaluated (one oracle
  /// call) and becomes the incumbent if better. Returns incumbent() afterwards.
  virtual double offer(std::span<const Element> set) = 0;
};

/// What a NodeBound proves about a node.
struct NodeBoundResult {
  /// ≥ max f(T) over S ⊆ T ⊆ S ∪ U, |T| ≤ k (+infinity: nothing proven).
  double upper_bound = std::numeric_limits<double>::infinity();
  /// Undecided elements that no set of this subproblem with value > incumbent + tolerance
  /// contains: the search fixes them out.
  std::vector<Element> fix_out;
  /// Undecided elements that every such set contains: the search fixes them in.
  std::vector<Element> fix_in;
  /// An undecided element to branch on, or kNoElement for the default rule.
  Element branch = kNoElement;
};

/// A problem-specific bound plugged into the search. May keep state between calls (e.g. warm
/// multipliers); called once per node that the online bound did not prune, in depth-first order.
class NodeBound {
 public:
  virtual ~NodeBound() = default;
  /// Bounds `node`; may call node.offer. Must be valid (never below the subproblem's optimum).
  virtual NodeBoundResult bound(BranchAndBoundNode& node) = 0;
};

/// Options of branch_and_bound. Stopping rule: the search ends when the tree is closed
/// (Selection::optimal), or when nodes ≥ node_limit or elapsed ≥ time_limit_seconds (then
/// Selection::upper_bound is the largest bound of an unexplored subtree, or the incumbent if larger).
struct BranchAndBoundOptions {
  /// Maximum number of nodes; 0 = no limit.
  std::uint64_t node_limit = 0;
  /// Maximum wall-clock seconds; 0 = no limit.
  double time_limit_seconds = 0.0;
  /// An initial incumbent, e.g. greedy's set (distinct elements < n, at most k); empty = none
  /// (the empty set is always the first incumbent).
  std::vector<Element> initial_set;
  /// Use the pairwise bound (see the file comment).
  bool pairwise_bound = true;
  /// At most this many first elements o_t are tried by the pairwise bound per node.
  std::size_t pairwise_first_elements = 32;
  /// Pruning tolerance relative to max(1, |incumbent|).
  double relative_tolerance = 1e-9;
  /// Optional problem-specific bound (not owned; must outlive the call).
  NodeBound* node_bound = nullptr;
};

/// OPT_k by branch and bound. Precondition: f.monotone_submodular() (std::invalid_argument
/// otherwise: the bounds are only valid for submodular functions) and a valid initial_set
/// (std::invalid_argument). k ≥ n is allowed (the budget is then never binding). Returns the best
/// set found (ascending), its value, optimal = true when the tree was closed, upper_bound (= value
/// when optimal), oracle_calls (gains and evaluations), nodes and seconds. Worst case exponential
/// in n; each node costs O(n) gains plus the pairwise and plug-in bounds.
[[nodiscard]] Selection branch_and_bound(const SetFunction& f, std::size_t k,
                                         const BranchAndBoundOptions& options = {});

}  // namespace subevict::greedy
