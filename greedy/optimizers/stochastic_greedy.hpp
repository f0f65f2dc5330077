#pragma once
/// \file
/// Stochastic greedy (Mirzasoleiman et al., "Lazier than lazy greedy", AAAI 2015).

#include <cstddef>
#include <cstdint>

#include "greedy/optimizers/selection.hpp"
#include "greedy/functions/set_function.hpp"

namespace subevict::greedy {

/// Options of stochastic_greedy.
struct StochasticGreedyOptions {
  /// The cardinality budget; precondition 1 ≤ k ≤ n (k = 0 returns the empty set).
  std::size_t k = 1;
  /// ε ∈ (0, 1): each step evaluates s = min(n − t, ⌈(n / k) ln(1 / ε)⌉) candidates, and for
  /// monotone submodular f the expected value is ≥ (1 − 1/e − ε) OPT_k.
  double epsilon = 0.01;
  /// Seed of the std::mt19937_64 engine that draws the samples.
  std::uint64_t seed = 0;
};

/// The sample size ⌈(n / k) ln(1 / ε)⌉ (before capping at the remaining candidates).
[[nodiscard]] std::size_t stochastic_sample_size(std::size_t n, std::size_t k, double epsilon);

/// At each step t, draws s candidates uniformly without replacement from V \ S_t (a partial
/// Fisher–Yates shuffle of the remaining elements; indices drawn from the std::mt19937_64 output
/// by rejection, so the sequence is the same on every standard library) and adds the one with the
/// largest gain, ties to the lowest index. Oracle calls: s per step, O(n ln(1/ε)) in total.
/// Selection::upper_bound stays +infinity. Throws std::invalid_argument when k > n or ε ∉ (0, 1).
[[nodiscard]] Selection stochastic_greedy(const SetFunction& f,
                                          const StochasticGreedyOptions& options);

}  // namespace subevict::greedy
