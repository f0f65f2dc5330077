#pragma once
/// \file
/// The exact p-median optimum min_{|S| ≤ p} Σ_i min_{j∈S} d(i, j) (equal to the optimum over
/// |S| = p) by depth-first branch and bound on the median variables y_j, bounded by the
/// Lagrangian relaxation of greedy/exact/pmedian_lagrangian.hpp.
///
/// Search: the incumbent starts from greedy addition improved by vertex substitution
/// (greedy/exact/pmedian_local_search.hpp), or from a given set. At every node, subgradient
/// optimisation (warm-started from the parent's multipliers) raises the bound L; every relaxed
/// solution Y is a feasible set and is evaluated, and at the root, at steps 0, 25, 50, 100, ...,
/// vertex substitution also runs from Y. A node closes when L reaches the cutoff
/// (pmedian_lagrangian.hpp: with integral distances, when ⌈L⌉ ≥ incumbent) or when Y is feasible
/// for the relaxation; otherwise reduced-cost fixing decides what it can and the search branches
/// on the undecided vertex whose share of the steps' Y is closest to 1/2 (an estimate of the most
/// fractional LP variable), y_j = 1 first.
///
/// Certification: `optimal` only when the tree is closed. With integral distances the reported
/// lower bound is ⌈min over open subtrees of their L⌉ (every set's value is an integer); when a
/// limit stops the search it is the best bound proven so far.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "greedy/exact/pmedian_lagrangian.hpp"
#include "greedy/functions/pmedian.hpp"

namespace subevict::greedy {

/// Options of pmedian_branch_and_bound.
struct PMedianSearchOptions {
  /// Maximum wall-clock seconds, checked when a node starts (a node's subgradient steps run to
  /// their end, about a second at the root for n = 900); 0 = no limit.
  double time_limit_seconds = 0.0;
  /// Maximum number of nodes; 0 = no limit.
  std::uint64_t node_limit = 0;
  /// Subgradient settings at the root.
  SubgradientOptions root{
      .iterations = 4000, .patience = 60, .initial_step = 2.0, .min_step = 1e-6};
  /// Subgradient settings at every other node (warm-started from the parent's multipliers).
  SubgradientOptions node{.iterations = 250, .patience = 20, .initial_step = 0.5, .min_step = 1e-4};
  /// Use reduced-cost fixing (off only to measure what it brings).
  bool reduced_cost_fixing = true;
  /// Run vertex substitution from the start set and from the root's relaxed solutions (off only
  /// to test or measure the tree alone: the incumbent then improves only through relaxed
  /// solutions).
  bool local_search = true;
  /// An initial incumbent (distinct vertices < n, 1..p of them); empty = greedy addition
  /// followed by vertex substitution.
  std::vector<Element> initial_set;
};

/// What pmedian_branch_and_bound found and proved.
struct PMedianSearchResult {
  /// The best set found (ascending; at most p vertices).
  std::vector<Element> set;
  /// Its p-median value.
  double value = 0.0;
  /// A proven lower bound on the optimum (= value when optimal).
  double lower_bound = 0.0;
  /// True when the tree was closed: value is the optimum.
  bool optimal = false;
  /// The root's Lagrangian bound (before rounding up).
  double root_bound = 0.0;
  /// The value of the starting incumbent (given, or greedy addition + vertex substitution).
  double initial_value = 0.0;
  /// Vertices fixed out and in by reduced-cost fixing at the root.
  std::size_t root_fixed_out = 0;
  std::size_t root_fixed_in = 0;
  /// Whether all distances are integers (then bounds are rounded up).
  bool integral = false;
  /// Nodes explored and subgradient steps taken.
  std::uint64_t nodes = 0;
  std::uint64_t subgradient_steps = 0;
  /// Wall-clock seconds.
  double seconds = 0.0;
};

/// The p-median optimum of `instance` by branch and bound (file comment). Throws InputError when p
/// is outside 1..n, the distance matrix is not n x n, or initial_set is invalid. Worst case
/// exponential in n; a node costs its subgradient steps.
[[nodiscard]] PMedianSearchResult pmedian_branch_and_bound(
    const PMedianInstance& instance, const PMedianSearchOptions& options = {});

}  // namespace subevict::greedy
