#pragma once
/// \file
/// Greedy with a noisy gain oracle (H2O Corollary D.18, theory.md §6): every gain the algorithm
/// sees is Δ(e|S) + η with η uniform in [−ε, ε].

#include <cstddef>
#include <cstdint>

#include "greedy/optimizers/selection.hpp"
#include "greedy/functions/set_function.hpp"

namespace subevict::greedy {

/// Options of noisy_greedy.
struct NoisyGreedyOptions {
  /// The cardinality budget; precondition k ≤ n.
  std::size_t k = 1;
  /// Half-width ε ≥ 0 of the noise (in units of f).
  double epsilon = 0.0;
  /// Seed of the std::mt19937_64 engine; the c-th gain query (0-based, in naive greedy's scan
  /// order) gets η = ε (2u − 1) with u = (x >> 11) 2^−53 from the c-th engine output x.
  std::uint64_t seed = 0;
};

/// Naive greedy on perturbed gains, ties (of perturbed gains) to the lowest index. For monotone
/// submodular f: f(S) ≥ (1 − 1/e) OPT_k − k (2 − 1/e) ε (Corollary D.18). Selection::value is the
/// true f(S); Selection::upper_bound is the online bound from the true gains (which the algorithm
/// also computes) when f.monotone_submodular(). Oracle calls as naive_greedy. Throws
/// std::invalid_argument when k > n or ε is negative or not finite.
[[nodiscard]] Selection noisy_greedy(const SetFunction& f, const NoisyGreedyOptions& options);

}  // namespace subevict::greedy
