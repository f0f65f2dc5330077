#pragma once
/// \file
/// Lazy greedy (CELF; Minoux 1978, Leskovec et al. 2007): the same selection as naive greedy with
/// far fewer oracle calls on submodular functions.

#include <cstddef>

#include "greedy/optimizers/naive_greedy.hpp"
#include "greedy/optimizers/selection.hpp"
#include "greedy/functions/set_function.hpp"

namespace subevict::greedy {

/// Options of lazy_greedy: the same as naive greedy's (k, stop_at_nonpositive_gain).
using LazyGreedyOptions = NaiveGreedyOptions;

/// CELF: a max-heap of stale gains ordered by (gain descending, index ascending); the top is
/// re-evaluated at the current set until a fresh entry (evaluated at the current set) is on top,
/// which is picked. For submodular f stale gains are upper bounds, so a fresh top is the argmax,
/// and the heap order makes ties go to the lowest index: the result equals naive_greedy's (same
/// set, same order, same value) up to gains that differ only by rounding. For non-submodular f it
/// is a heuristic.
/// Oracle calls: n at the start, then one per re-evaluation (between 1 and n − t at step t).
/// Work: O(log n) per heap operation plus O(n) per step for the bound. When
/// f.monotone_submodular(), Selection::upper_bound = min over t = 0..k of f(S_t) + Σ of the k
/// largest positive heap keys (stale gains bound the true ones), at no extra oracle call;
/// otherwise +infinity. Throws std::invalid_argument when k > n.
[[nodiscard]] Selection lazy_greedy(const SetFunction& f, const LazyGreedyOptions& options);

}  // namespace subevict::greedy
