#pragma once
/// \file
/// The tight family of the greedy guarantee (theory.md §6): weighted max coverage instances on
/// which greedy reaches exactly 1 − (1 − 1/k)^k of OPT_k.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "greedy/functions/set_function.hpp"

namespace subevict::greedy {

/// Which candidate sets come first in the element order. Every optimizer breaks ties towards the
/// lowest index, so the order decides whether greedy's ties go to the columns or to the rows.
enum class TieTowards { kColumns, kRows };

/// A weighted max coverage instance in exact integer weights. Universe: the cells (r, c),
/// r = 0..k−1, c = 0..k, item r (k + 1) + c, with weight M (k−1)^c k^{k−1−c} for c < k and
/// M (k−1)^k for c = k; in the tie-free variant also k private items (item k (k + 1) + c, weight
/// 1, belonging to column c). Candidate sets (the ground set, n = 2k): the k rows {(r, ·)} and the
/// k columns {(·, c)}, c < k; the columns first (indices 0..k−1) for TieTowards::kColumns, the rows
/// first for kRows. Pass `weights` and `sets` to WeightedCoverage.
struct TightFamily {
  std::size_t k = 0;
  /// The multiplier M: 1 for the tied family, > k for the tie-free one.
  std::int64_t multiplier = 1;
  bool tie_free = false;
  /// Item weights (integers, exact in double: the largest instance, k = 8 and M = 9, stays
  /// below 2^31).
  std::vector<double> weights;
  /// Candidate set e holds the items sets[e].
  std::vector<std::vector<std::size_t>> sets;
  /// Element indices of the row sets and of the column sets, each in r or c order.
  std::vector<Element> rows;
  std::vector<Element> columns;
};

/// The tied family (M = 1) for 2 ≤ k ≤ 8 (k^{k+1} must stay far inside int64 and double);
/// throws std::invalid_argument otherwise.
[[nodiscard]] TightFamily tight_family(std::size_t k, TieTowards ties);

/// The tie-free variant: weights times M, plus the private items. Preconditions 2 ≤ k ≤ 8 and
/// k < M ≤ 1000; throws std::invalid_argument otherwise.
[[nodiscard]] TightFamily tie_free_tight_family(std::size_t k, std::int64_t multiplier,
                                                TieTowards ties);

/// OPT_k = M k^{k+1} (the rows), exact.
[[nodiscard]] std::int64_t tight_family_optimum(const TightFamily& family);

/// The value greedy reaches when it takes the k columns: M (k^{k+1} − k (k−1)^k), plus k in the
/// tie-free variant (the private items), exact.
[[nodiscard]] std::int64_t tight_family_columns_value(const TightFamily& family);

}  // namespace subevict::greedy
