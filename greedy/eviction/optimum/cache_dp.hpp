#pragma once
/// \file
/// The offline optimum of the eviction process by exhaustive dynamic programming over cache
/// states, for tiny n: an implementation of the process rules of theory.md §2 written
/// independently of the flow model, to cross-check it (offline_optimum.hpp).
///
/// States after step i are the caches S_i reachable under the rules: S_{−1} = ∅,
/// G_i = S_{i−1} ∪ {i}; S_i = G_i while |G_i| ≤ k, otherwise S_i = G_i \ {v} for one v ∈ G_i
/// (the new token i included: "evicted on arrival"). Step i earns Σ_{j ∈ G_i} W_ij. The value of
/// a state is the best total over steps 0..i among the histories reaching it; ties keep the
/// history found first (states in ascending bitmask order, victims in ascending index order).

#include <Eigen/Core>

#include "greedy/eviction/process/cache_schedule.hpp"

namespace subevict::greedy {

struct CacheDpOptions {
  /// Largest n accepted (states are bitmasks of n bits; the number of states after step i is
  /// C(i + 1, k) once full, so memory and time grow like C(n, n/2)).
  int max_tokens = 20;
};

/// The optimum of gains W (n × n, see cache_schedule.hpp) at budget k by the dynamic program
/// above. status kOptimal, upper_bound = the program's own accumulated total (value recomputed from the
/// schedule, equal up to rounding), model_size = the number of (step, state) pairs
/// visited. Throws InputError for invalid W or budget, or n > options.max_tokens.
/// Time O(Σ_i states_i · (k + 1) · k), memory O(Σ_i states_i).
ScheduleSummary cache_dp(const Eigen::MatrixXd& gains, int budget, const CacheDpOptions& options = {});

}  // namespace subevict::greedy
