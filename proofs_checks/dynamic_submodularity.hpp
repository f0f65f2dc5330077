#pragma once
/// \file
/// The H2O dynamic family as a set function at each step of a trajectory: its submodularity
/// (Def D.1 for the family of Def 4.1) as a violation rate. Lemma D.19 is in
/// proofs_checks/perturbed_increments.hpp.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "greedy/optimizers/selection.hpp"
#include "greedy/functions/set_function.hpp"
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

/// h2o.def41_submodularity, a measurement (Kind::measurement: h concave non-decreasing of a
/// non-negative modular function is submodular, so nothing here can fail): at `steps_per_head`
/// steps evenly spread over each head's trajectory after the cache fills, f_{S_i,i}(T) =
/// h(Σ_{s∈T} acc_{i,s}) − h(0) on the ground set {0..i} (tracked acc) is searched for violations
/// of Def D.1 with greedy::find_submodularity_violations (`trials_per_step` random triples each).
/// Outcome `measured`; reports the number of violating triples, the Clopper–Pearson upper bound
/// on their rate, and (in the notes) a shrunk violating triple when one is found (a wrong h).
[[nodiscard]] CheckResult check_def41_submodularity(const TrajectorySetup& setup, int steps_per_head,
                                                    int trials_per_step);

}  // namespace subevict::proofs_checks
