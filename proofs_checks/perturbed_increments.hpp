#pragma once
/// \file
/// H2O Lemma D.19 on the dynamic family: the greedy eviction process (theory.md §2–§3) run on a
/// perturbed family f̃_{S,i} = f_{S,i} + E_i whose increments over the steps are each off by at
/// most ε/(2n), against the exact greedy step (proofs_checks/dynamic_family.hpp states the
/// conventions: 0-based steps, f_{S_i,i}(T) = h(Σ_{s∈T} acc_{i,s}) − h(0) with the tracked acc).
///
/// Reading adopted. The increments of the family at step i are f_{S_i,i}(T) − f_{S_{i−1},i−1}(T)
/// (f_{S_{−1},−1} = 0); an error of at most ε/(2n) in each of them gives
/// |E_i(T)| = |f̃_{S_i,i}(T) − f_{S_i,i}(T)| ≤ (i + 1) ε/(2n) ≤ ε/2 for every T, so the step that
/// maximises f̃ over the candidates G_i \ {v} loses at most ε of f against the step that
/// maximises f: f_{S_i,i}(S̃_i) ≥ f̃(S̃_i) − ε/2 ≥ f̃(T*) − ε/2 ≥ f_{S_i,i}(T*) − ε. This is the
/// conclusion checked, at every eviction step of the perturbed process. Whole trajectories are not
/// compared by the conclusion: once one step chooses differently the two processes see different
/// caches and attention, and their final values can differ by more than ε (a perturbation of any
/// size flips an exact tie); that difference is reported as a measurement.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "proofs_checks/check.hpp"
#include "proofs_checks/dynamic_lemmas.hpp"

namespace subevict::proofs_checks {

/// The perturbation under test: at each eviction step i of one trajectory it receives the
/// candidate caches T_v = G_i \ {v} (ascending tokens) and their exact values f_{S_i,i}(T_v), and
/// returns E_i(T_v) = f̃_{S_i,i}(T_v) − f_{S_i,i}(T_v) for each, the sum of its increment errors
/// over steps 0..i. Stateful over one trajectory; the check verifies (it does not trust) that the
/// values it returns are the sums of increments of at most the bound it was made with.
class IncrementPerturbation {
 public:
  virtual ~IncrementPerturbation() = default;
  virtual std::vector<double> errors(int step, const std::vector<std::vector<int>>& candidates,
                                     const std::vector<double>& exact_values) = 0;
};

/// Makes a fresh perturbation for one trajectory, with increment errors of at most `increment_bound`
/// in absolute value and randomness drawn from `seed`.
using PerturbationFactory =
    std::function<std::unique_ptr<IncrementPerturbation>(double increment_bound, std::uint64_t seed)>;

/// The adversary: for each candidate, the range its accumulated error can still reach (±(i+1) b for
/// a set never seen, [E_j − (i−j) b, E_j + (i−j) b] after its last value E_j at step j); it takes
/// the lowest value for the candidate of largest exact value (ties: the lowest evicted token) and
/// the highest for every other, so it flips every step whose gap it can close.
[[nodiscard]] PerturbationFactory adversarial_perturbation();

/// Uniform random values in the same reachable ranges (std::mt19937_64 seeded per trajectory).
[[nodiscard]] PerturbationFactory random_perturbation();

/// The eviction step under test: given the exact values f(T_v) and the errors E(T_v) of the
/// candidates, the index of the candidate the process keeps.
using PerturbedChoice = std::function<std::size_t(const std::vector<double>& exact, const std::vector<double>& errors)>;

/// argmax_v (f(T_v) + E(T_v)), ties to the lowest index (candidates are ordered by the evicted
/// token, so the lowest evicted token).
[[nodiscard]] PerturbedChoice perturbed_argmax();

/// h2o.lemma_d19 on every head of `setup` (its budget and h; its policy is not used: the process
/// is the greedy one the lemma is about), once per perturbation: the exact process (no error) and
/// the perturbed process with increment errors of at most ε/(2n), n = tokens of the head. At each
/// eviction step i of the perturbed process (|G_i| = k + 1) the hypotheses hold when every error
/// the perturbation returned so far is reachable by increments of at most ε/(2n); the conclusion
/// is f_{S̃_i,i}(S̃_i) ≥ max_v f_{S̃_i,i}(G̃_i \ {v}) − ε. `epsilon` > 0 is in units of f.
/// Measurements: the largest step loss and its ratio to ε, the steps whose choice the perturbation
/// changed, the largest |E_i| / (ε/2), and the largest final-value difference between the exact
/// and the perturbed trajectory. Throws std::invalid_argument for epsilon <= 0.
[[nodiscard]] CheckResult check_lemma_d19(const TrajectorySetup& setup,
                                          const std::vector<PerturbationFactory>& perturbations,
                                          const PerturbedChoice& choice, double epsilon);

}  // namespace subevict::proofs_checks
