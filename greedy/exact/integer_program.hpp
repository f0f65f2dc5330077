#pragma once
/// \file
/// OPT_k through COIN-OR CBC integer programs: an exact solver independent of the set-function
/// oracle, to cross-check branch and bound and exhaustive search (theory.md §5).

#include <cstddef>

#include "greedy/functions/facility_location.hpp"
#include "greedy/optimizers/selection.hpp"
#include "greedy/functions/weighted_coverage.hpp"

namespace subevict::greedy {

/// Options of the integer-program solvers.
struct IntegerProgramOptions {
  /// CBC's time limit in seconds; 0 = none. When it is hit, the result is the best integer
  /// solution found (optimal = false, upper_bound = CBC's best possible objective).
  double time_limit_seconds = 0.0;
  /// Print CBC's log to stdout (silenced by default).
  bool log = false;
  /// CBC's limit on branch-and-bound nodes; negative = none, 0 = stop after the root. Hit like the
  /// time limit (same result conventions), but independent of the machine's speed.
  int max_nodes = -1;
};

/// max_{|S| ≤ k} Σ_i max_{j∈S} sim_ij as the standard facility-location (p-median) program:
///   max Σ_ij sim_ij x_ij  s.t.  Σ_j x_ij ≤ 1 (clients i),  x_ij ≤ y_j,  Σ_j y_j ≤ k,
///   y ∈ {0,1}, x ∈ [0,1]
/// (x is integral at an optimum once y is; pairs with sim_ij = 0 get no x variable). Returns the
/// set {j : y_j = 1} (ascending), its value f(S) (one evaluation), optimal = CBC proved optimality,
/// upper_bound, nodes = CBC's node count, seconds. Size: nnz(sim) variables and constraints.
[[nodiscard]] Selection facility_location_ip(const FacilityLocation& f, std::size_t k,
                                             const IntegerProgramOptions& options = {});

/// max_{|S| ≤ k} weighted coverage as
///   max Σ_u w_u z_u  s.t.  z_u ≤ Σ_{j ∋ u} y_j,  Σ_j y_j ≤ k,  y ∈ {0,1}, z ∈ [0,1];
/// same result conventions as facility_location_ip.
[[nodiscard]] Selection weighted_coverage_ip(const WeightedCoverage& f, std::size_t k,
                                             const IntegerProgramOptions& options = {});

}  // namespace subevict::greedy
