#pragma once
/// \file
/// A randomized search for violations of the submodular inequality (Def D.1, theory.md §4):
/// Δ(x|X) ≥ Δ(x|Y) for X ⊆ Y, x ∉ Y.

#include <cstdint>
#include <optional>
#include <vector>

#include "core/statistics.hpp"
#include "greedy/functions/set_function.hpp"

namespace subevict::greedy {

/// One violating triple: X ⊆ Y, x ∉ Y and Δ(x|X) < Δ(x|Y) beyond the tolerance.
struct SubmodularityViolation {
  std::vector<Element> x_set;  ///< X, ascending
  std::vector<Element> y_set;  ///< Y, ascending
  Element element = 0;         ///< x
  double gain_small = 0.0;     ///< Δ(x|X)
  double gain_large = 0.0;     ///< Δ(x|Y)
};

/// Options of find_submodularity_violations.
struct ViolationSearchOptions {
  std::uint64_t trials = 10'000;
  /// Seed of the std::mt19937_64 engine (greedy/optimizers/random.hpp draws).
  std::uint64_t seed = 0;
  /// A triple violates when Δ(x|Y) − Δ(x|X) > tolerance · max(1, |Δ(x|X)|, |Δ(x|Y)|) (relative,
  /// with an absolute floor; rounding of the scratch evaluations stays far below the default).
  double tolerance = 1e-9;
  /// Confidence of the Clopper–Pearson interval on the violation rate.
  double confidence = 0.95;
};

/// The outcome: violation rate with its exact interval, and a minimal violating triple.
struct ViolationReport {
  std::uint64_t trials = 0;
  std::uint64_t violations = 0;
  /// violations / trials.
  double rate = 0.0;
  /// Clopper–Pearson interval (core/statistics.hpp) for the rate of the sampling distribution.
  Interval interval{0.0, 1.0};
  /// The first violation found, shrunk until no single removal (an element of Y \ X from Y, or an
  /// element of X from X, or from both X and Y) keeps it violating; std::nullopt when none.
  std::optional<SubmodularityViolation> minimal;
  std::uint64_t oracle_calls = 0;
};

/// Each trial draws x uniform in V, p and q uniform in [0, 1), Y ⊆ V \ {x} keeping each element
/// with probability p, X ⊆ Y keeping each with probability q, and tests the inequality with four
/// scratch evaluations (SetFunction::evaluate). O(trials · (n + 4 evaluate)). Throws
/// std::invalid_argument when trials = 0, n = 0, or tolerance/confidence are out of range.
[[nodiscard]] ViolationReport find_submodularity_violations(const SetFunction& f,
                                                            const ViolationSearchOptions& options);

}  // namespace subevict::greedy
