#pragma once
/// \file
/// The exact optimum OPT_k = max_{|S| ≤ k} f(S) by enumeration, the reference every other
/// optimizer is tested against on small instances.

#include <cstddef>
#include <cstdint>

#include "greedy/optimizers/selection.hpp"
#include "greedy/functions/set_function.hpp"

namespace subevict::greedy {

/// Options of exhaustive_optimum.
struct ExhaustiveOptions {
  /// The cardinality budget; precondition k ≤ n.
  std::size_t k = 1;
  /// Refuse instances with more than this many candidate sets Σ_{j=0}^{k} C(n, j) (default 5·10^7,
  /// seconds for cheap functions).
  std::uint64_t max_sets = 50'000'000;
};

/// Σ_{j=0}^{k} C(n, j), saturating at UINT64_MAX.
[[nodiscard]] std::uint64_t count_subsets_up_to(std::size_t n, std::size_t k);

/// Visits every S with |S| ≤ k exactly once by depth-first search in lexicographic order of the
/// sorted sets (a prefix before its extensions), moving one incremental state by one add or remove
/// per step, and returns the best, ties to the lexicographically smallest sorted set (the lowest
/// indices; a set before its extensions). Selection::set is ascending, optimal = true,
/// upper_bound = value, nodes = sets visited, oracle_calls = sets visited (each visit is one value
/// query through the incremental state). Work: O(Σ_{j≤k} C(n, j)) state updates. Throws
/// std::invalid_argument when k > n or the count exceeds options.max_sets (naming both).
[[nodiscard]] Selection exhaustive_optimum(const SetFunction& f, const ExhaustiveOptions& options);

}  // namespace subevict::greedy
