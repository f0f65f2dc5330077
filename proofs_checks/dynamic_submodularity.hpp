#pragma once
/// \file
/// The H2O dynamic family as a set function at each step of a trajectory: its submodularity
/// (Def D.1 for the family of Def 4.1) as a violation rate, and Lemma D.19 (greedy on increments
/// perturbed by ε/(2n) loses at most ε).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "greedy/selection.hpp"
#include "greedy/set_function.hpp"
#include "proofs_checks/check.hpp"
#include "proofs_checks/dynamic_lemmas.hpp"

namespace subevict::proofs_checks {

/// f(S) = h(Σ_{j∈S} w_j) − h(0) for any transform h (the H2O family at one step when w = acc_i):
/// submodular and monotone exactly when h is concave and non-decreasing on the sums that occur,
/// which this class does not promise (monotone_submodular() is false). Incremental state O(1).
class TransformOverModular final : public greedy::SetFunction {
 public:
  /// Throws std::invalid_argument for a negative or non-finite weight.
  TransformOverModular(std::vector<double> weights, Transform h, std::string name);
  std::size_t ground_size() const override { return weights_.size(); }
  double evaluate(std::span<const greedy::Element> set) const override;
  std::unique_ptr<greedy::SetState> empty_state() const override;
  std::string name() const override { return name_; }

 private:
  std::vector<double> weights_;
  Transform h_;
  std::string name_;
};

/// h2o.def41_submodularity: at `steps_per_head` steps evenly spread over each head's trajectory
/// after the cache fills, f_{S_i,i}(T) = h(Σ_{s∈T} acc_{i,s}) − h(0) on the ground set {0..i}
/// (tracked acc) is searched for violations of Def D.1 with greedy::find_submodularity_violations
/// (`trials_per_step` random triples each). Reports the violation rate with its Clopper–Pearson
/// interval and a shrunk violating triple.
[[nodiscard]] CheckResult check_def41_submodularity(const TrajectorySetup& setup, int steps_per_head,
                                                    int trials_per_step);

/// The greedy under test for Lemma D.19: picks at most k elements of f's ground set with every
/// gain perturbed by at most `noise` (seeded).
using NoisyGreedy =
    std::function<greedy::Selection(const greedy::SetFunction& f, std::size_t k, double noise, std::uint64_t seed)>;

/// greedy::noisy_greedy (uniform noise in [−noise, noise]).
[[nodiscard]] NoisyGreedy default_noisy_greedy();

/// h2o.lemma_d19: at every step i ≥ k of each trajectory, the family f = f_{S_i,i} on {0..i}; the
/// greedy under test runs with gains perturbed by ε/(2n) (n = tokens of the head) and must reach
/// f(S̃) ≥ (1 − 1/e) OPT_k − ε, OPT_k by exhaustive search (greedy/exhaustive.hpp). This is the
/// reading adopted: Corollary D.18 with oracle error ε/(2n) and k ≤ n gives a loss of
/// k (2 − 1/e) ε/(2n) < ε. `epsilon` > 0 is in units of f. Also measures the loss against the
/// noiseless greedy.
[[nodiscard]] CheckResult check_lemma_d19(const TrajectorySetup& setup, const NoisyGreedy& greedy_under_test,
                                          double epsilon);

}  // namespace subevict::proofs_checks
