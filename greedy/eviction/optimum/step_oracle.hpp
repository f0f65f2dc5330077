#pragma once
/// \file
/// The per-step reversible oracle of theory.md §5 (0-based steps):
/// U_i = W_ii + (sum of the `budget` largest entries of W_i over tokens 0..i−1).
/// It may re-admit evicted tokens, so it bounds every schedule of the irreversible process step by
/// step: r_i(G_i) ≤ U_i because |G_i \ {i}| = |S_{i−1}| ≤ budget. For attention rows U_i ≤ 1.

#include <Eigen/Core>
#include <vector>

#include "greedy/eviction/process/triangular_gains.hpp"

namespace subevict::greedy {

/// The oracle per step and summed.
struct StepOracle {
  /// U_i per step (length n).
  Eigen::VectorXd per_step;
  /// Σ_i U_i.
  double total = 0.0;
  /// The chosen past tokens of each step (ascending): the `budget` largest W_ij over j < i, ties
  /// to the lowest index. Filled only when requested (memory O(n min(n, budget))).
  std::vector<std::vector<int>> chosen;
};

/// U_i for every step of the gain matrix W (n × n, see cache_schedule.hpp: attention, weighted or
/// GQA-summed). Throws InputError for an invalid W or budget < 0. O(n²) time, O(n) extra memory
/// (plus `chosen` when keep_sets).
StepOracle step_oracle(const Eigen::MatrixXd& gains, int budget, bool keep_sets = false);

/// The oracle of stored gains for several budgets at once (results in the order of `budgets`; with
/// `chosen`, the same sets as step_oracle, only when keep_sets): U_i(k) = W_ii + the k largest past
/// entries of row i, selected (not sorted) from the largest budget down. Throws InputError for a
/// budget < 0. O(n² · budgets) time (O(n²) for one budget), O(n) extra memory (plus `chosen`:
/// O(n min(n, budget)) per budget, each set sorted).
template <class Scalar>
std::vector<StepOracle> step_oracles(const TriangularGains<Scalar>& gains, const std::vector<int>& budgets,
                                     bool keep_sets = false);

/// The oracle of the R-mass (query_rows.hpp) from the oracle of the whole gains: U_i kept on the
/// rows of `mask`, 0 on the others, total = Σ_{i ∈ R} U_i (the oracle of the row-restricted gains W',
/// since row i of W' is row i of W for i ∈ R). `chosen` is left as it is: on every row the full row's
/// choice, also where the row earns nothing. Throws std::invalid_argument unless mask has one entry
/// per step.
void restrict_to_rows(StepOracle& oracle, const std::vector<char>& mask);

}  // namespace subevict::greedy
