#pragma once
/// \file
/// The static greedy family of the registry (theory.md §6): the Nemhauser–Wolsey–Fisher bound on
/// random small monotone submodular instances against the exhaustive optimum, its tight family,
/// and the noisy-oracle guarantee of H2O Corollary D.18.
///
/// Each check is a free function of the instances AND the optimizer under test, so that a test
/// can feed a deliberately wrong optimizer and see the check fail; the registered checks pass
/// the library's greedy (greedy/optimizers/naive_greedy.hpp, greedy/optimizers/noisy_greedy.hpp).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "greedy/optimizers/selection.hpp"
#include "greedy/functions/set_function.hpp"
#include "greedy/diagnostics/tight_family.hpp"
#include "proofs_checks/check.hpp"

namespace subevict::proofs_checks {

/// An optimizer under test: a set of at most k elements of f's ground set with its value.
using StaticOptimizer = std::function<greedy::Selection(const greedy::SetFunction& f, std::size_t k)>;

/// A noisy-oracle optimizer under test: greedy whose gain queries are off by at most `epsilon`
/// (units of f), drawing its noise from `seed`.
using NoisyOptimizer = std::function<greedy::Selection(const greedy::SetFunction& f, std::size_t k,
                                                       double epsilon, std::uint64_t seed)>;

/// One static instance: a monotone submodular f with f(∅) = 0 and a budget k ≤ n.
struct GreedyInstance {
  std::string family;  ///< "facility-location", "weighted-coverage", "concave-over-modular-sqrt", ...
  std::shared_ptr<const greedy::SetFunction> f;
  std::size_t k = 1;
};

/// `per_family` instances of each of facility location (uniform similarities, 6–9 clients and
/// 6–10 candidates), weighted coverage (6–10 sets over 12 items, each item in a set with
/// probability 0.3) and concave-over-modular (sqrt and log of uniform weights), k uniform in
/// 1..min(4, n); all drawn from std::mt19937_64(seed). Small enough for exhaustive search
/// (at most 386 sets each). O(per_family · 100).
std::vector<GreedyInstance> random_monotone_instances(int per_family, std::uint64_t seed);

/// 1 − (1 − 1/k)^k, the Nemhauser–Wolsey–Fisher factor. Precondition k ≥ 1.
double nwf_factor(std::size_t k);

/// The factor of OPT_k a cardinality-k guarantee promises, as a function of k: nwf_factor for the
/// checks' claims; tests pass a slightly wrong one to see the tight family turn the check red.
using BoundFactor = std::function<double(std::size_t k)>;

/// The constants of Corollary D.18's conclusion f(S) ≥ opt_factor · OPT_k − noise_factor · k ε.
/// The defaults are the printed ones.
struct NoisyBoundConstants {
  double opt_factor = 1.0 - 0.36787944117144233;    ///< 1 − 1/e
  double noise_factor = 2.0 - 0.36787944117144233;  ///< 2 − 1/e
};

/// greedy.nwf_bound: on every instance, OPT_k by exhaustive search (greedy/exact/exhaustive.hpp) and
/// the conclusion f(S) ≥ (1 − (1 − 1/k)^k) OPT_k for S = optimizer(f, k), up to rounding
/// (Tol<double>::sum(n) · max(1, OPT)). Hypotheses: f.monotone_submodular(), |S| ≤ k. Slack =
/// f(S) − bound (f re-evaluated from S, not taken from the optimizer). The counterexample is the
/// violating instance with the smallest n (first on ties). `factor` replaces 1 − (1 − 1/k)^k.
CheckResult check_nwf_bound(const std::vector<GreedyInstance>& instances,
                            const StaticOptimizer& optimizer, const BoundFactor& factor = nwf_factor);

/// greedy.nwf_tightness: for each k, the tied tight family (greedy/diagnostics/tight_family.hpp) with ties
/// ordered by `ties` and the tie-free variant with M = k + 1; the conclusion is that the
/// optimizer's value equals the closed form exactly: (1 − (1 − 1/k)^k) OPT for the tied family,
/// M (k^{k+1} − k (k−1)^k) + k for the tie-free one (within Tol<double>::kValue relative). With
/// ties towards the rows greedy finds OPT on the tied family, so the tightness claim fails there.
/// Measurements ratio_k<k> (tied family) for each k. `factor` replaces 1 − (1 − 1/k)^k in the
/// tied family's closed form.
CheckResult check_nwf_tightness(const std::vector<std::size_t>& ks, greedy::TieTowards ties,
                                const StaticOptimizer& optimizer, const BoundFactor& factor = nwf_factor);

/// h2o.corollary_d18: for every instance, every relative noise level e in `epsilons` (ε = e ·
/// OPT_k / k) and `repeats` seeds, f(S) ≥ (1 − 1/e) OPT_k − k (2 − 1/e) ε for S =
/// optimizer(f, k, ε, seed), up to rounding. Series "noisy_greedy_slack": the smallest slack / OPT
/// per noise level. `constants` replace 1 − 1/e and 2 − 1/e.
///
/// How close an exact greedy can come: every noisy step gains at least (OPT − f)/k − 2ε, so
/// f(S) ≥ (1 − (1 − 1/k)^k)(OPT_k − 2kε), and the slack is at least (1/e − (1 − 1/k)^k) OPT_k +
/// k (2 (1 − 1/k)^k − 1/e) ε ≥ 0.13 k ε for k ≥ 2 (0.5 OPT/e at k = 1, where f ≥ 0 takes over).
/// The OPT term comes within 3.8% (k = 8, the tight family at ε = 0); the ε term cannot come
/// within 8% of k (2 − 1/e) ε, so a noise_factor lowered by 5% still holds for every greedy.
CheckResult check_corollary_d18(const std::vector<GreedyInstance>& instances,
                                const std::vector<double>& epsilons, int repeats,
                                std::uint64_t seed, const NoisyOptimizer& optimizer,
                                const NoisyBoundConstants& constants = {});

/// The library's naive greedy (greedy/optimizers/naive_greedy.hpp) as a StaticOptimizer.
greedy::Selection library_greedy(const greedy::SetFunction& f, std::size_t k);

/// The library's noisy greedy (greedy/optimizers/noisy_greedy.hpp) as a NoisyOptimizer.
greedy::Selection library_noisy_greedy(const greedy::SetFunction& f, std::size_t k, double epsilon,
                                       std::uint64_t seed);

/// The registered checks greedy.nwf_bound, greedy.nwf_tightness, h2o.corollary_d18 (with the
/// library's greedy and the default instances, scaled by CheckContext::effort).
std::vector<std::unique_ptr<Check>> static_greedy_checks();

}  // namespace subevict::proofs_checks
