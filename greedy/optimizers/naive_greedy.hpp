#pragma once
/// \file
/// Naive greedy for max f(S) subject to |S| ≤ k (Nemhauser, Wolsey, Fisher 1978), with the online
/// bound of Leskovec et al. (2007) as a certificate.

#include <cstddef>
#include <functional>

#include "greedy/optimizers/selection.hpp"
#include "greedy/functions/set_function.hpp"

namespace subevict::greedy {

/// Options of naive_greedy (and, through it, noisy_greedy).
struct NaiveGreedyOptions {
  /// The cardinality budget; precondition k ≤ n (k = 0 returns the empty set).
  std::size_t k = 1;
  /// Stop before k picks when the best gain is ≤ 0 (for non-monotone functions, where a forced pick
  /// lowers f). Off by default: the textbook algorithm always picks min(k, n) elements.
  bool stop_at_nonpositive_gain = false;
};

/// Greedy: for t = 0..k−1, add argmax_{e ∉ S_t} Δ(e|S_t), ties to the lowest index. Oracle calls:
/// n − t gains at step t, plus n − k at the end for the bound: O(n k) calls, O(n k) extra work.
/// When f.monotone_submodular(), Selection::upper_bound = min over t = 0..k of f(S_t) + Σ of the k
/// largest positive Δ(e|S_t) (greedy/optimizers/online_bound.hpp); otherwise +infinity. Throws
/// std::invalid_argument when k > n.
[[nodiscard]] Selection naive_greedy(const SetFunction& f, const NaiveGreedyOptions& options);

/// Throws std::invalid_argument naming `caller` unless k ≤ f.ground_size().
void check_cardinality(const SetFunction& f, std::size_t k, const char* caller);

namespace detail {
/// The naive greedy loop with every gain passed through `perturb(gain)` before the argmax (the
/// identity for naive_greedy, the noisy oracle for noisy_greedy). The bound is computed from the
/// true gains and only when `bound` is set; `caller` names the algorithm in errors.
Selection greedy_scan(const SetFunction& f, const NaiveGreedyOptions& options,
                      const std::function<double(double)>& perturb, bool bound, const char* caller);
}  // namespace detail

}  // namespace subevict::greedy
