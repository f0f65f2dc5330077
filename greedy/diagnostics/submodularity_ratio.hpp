#pragma once
/// \file
/// The submodularity ratio γ_{U,k} of Das and Kempe (2011) (theory.md §4): greedy on a monotone
/// function with ratio γ reaches ≥ (1 − e^{−γ}) OPT_k; γ ≥ 1 for submodular functions.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "greedy/functions/set_function.hpp"

namespace subevict::greedy {

/// γ_{U,k} = min over L ⊆ U and S ⊆ V \ L with 2 ≤ |S| ≤ k of Σ_{x∈S} Δ(x|L) / Δ(S|L), where
/// Δ(S|L) = f(L ∪ S) − f(L). Pairs with |S| = 1 have ratio 1 and pairs with Δ(S|L) ≤ 0 (0/0 for
/// a monotone f) are skipped; with no counted pair γ = 1.
struct SubmodularityRatio {
  double gamma = 1.0;
  /// The minimizing pair (empty when gamma stayed 1).
  std::vector<Element> l_set;
  std::vector<Element> s_set;
  /// Pairs (L, S) with |S| ≥ 2 examined, and oracle calls made (gains, evaluations and
  /// incremental value queries).
  std::uint64_t pairs = 0;
  std::uint64_t oracle_calls = 0;
  /// True for the enumeration (gamma is the exact minimum); false for sampling, where gamma is the
  /// minimum over the samples and therefore an UPPER bound on the true γ_{U,k}.
  bool exact = false;
};

/// Options of submodularity_ratio_exact.
struct SubmodularityRatioOptions {
  /// |S| ≤ k; precondition k ≤ n.
  std::size_t k = 2;
  /// U; std::nullopt means U = V (the whole ground set).
  std::optional<std::vector<Element>> universe;
  /// Refuse when 2^{|U|} Σ_{j≤k} C(n, j) exceeds this (default 10^7).
  std::uint64_t max_pairs = 10'000'000;
};

/// The exact γ_{U,k} by enumeration: a depth-first search over L ⊆ U with one incremental state,
/// the n gains Δ(x|L) per L, and a depth-first search over S with a clone of it; ties keep the
/// first minimizer found. Work O(2^{|U|} (n + Σ_{j≤k} C(n, j))). Throws std::invalid_argument
/// when k > n, U has an element ≥ n or a repeat, or the work exceeds options.max_pairs.
[[nodiscard]] SubmodularityRatio submodularity_ratio_exact(
    const SetFunction& f, const SubmodularityRatioOptions& options);

/// Options of submodularity_ratio_sampled.
struct SampledRatioOptions {
  /// |S| ≤ k; precondition k ≤ n (k < 2 leaves nothing to sample: γ = 1).
  std::size_t k = 2;
  /// U; std::nullopt means U = V.
  std::optional<std::vector<Element>> universe;
  std::uint64_t samples = 10'000;
  /// Seed of the std::mt19937_64 engine (greedy/optimizers/random.hpp draws).
  std::uint64_t seed = 0;
};

/// A sampled estimate: each sample draws p uniform in [0, 1), L ⊆ U keeping each element with
/// probability p, |S| uniform in 2..min(k, n − |L|) and S uniform among such subsets of V \ L;
/// returns the minimum ratio seen — an upper bound on γ_{U,k} (exact = false). O(samples · k)
/// gains plus the state updates. Throws std::invalid_argument as the exact version.
[[nodiscard]] SubmodularityRatio submodularity_ratio_sampled(const SetFunction& f,
                                                             const SampledRatioOptions& options);

}  // namespace subevict::greedy
