#pragma once
/// \file
/// H2O Definition D.33 and Claim D.34 on attention rows: a distribution D over rows is
/// (α, τ, k)-good when S₀ ⊆ supp_τ(x) and |supp_τ(x) \ S₀| ≤ α k for every sample x, with
/// supp_τ(x) = {j : x_j ≥ τ} (theory.md §6 and §9 item 6: the reading the library adopts); then
/// the union of the supports of m samples exceeds S₀ by at most α k m.

#include <Eigen/Core>
#include <functional>
#include <vector>

#include "core/workload.hpp"
#include "proofs_checks/check.hpp"

namespace subevict::proofs_checks {

/// The α the claim is applied with, from the samples' excess support sizes |supp_τ(x) \ S₀| and k.
using AlphaEstimator = std::function<double(const std::vector<int>& excess, int budget)>;

/// The smallest α that makes the samples (α, τ, k)-good: max excess / k.
[[nodiscard]] AlphaEstimator smallest_good_alpha();

/// h2o.claim_d34 on `samples` (one matrix per instance, one sample row per matrix row, entries ≥ 0):
/// S₀ = the intersection of all supports (the largest admissible S₀), α = alpha(excess, k), and the
/// conclusion |∪ supp_τ \ S₀| ≤ α k m. Measurements: the largest α, the mean |S₀|, the largest
/// union / bound, and the fraction of samples with excess ≤ k.
[[nodiscard]] CheckResult check_claim_d34(const std::vector<Eigen::MatrixXd>& samples, double tau, int budget,
                                          const AlphaEstimator& alpha);

/// The samples of the registered check: for `count` query heads spread over the workload
/// (layer-major), the exact attention rows of the second half of the queries (i ≥ n/2), zero above
/// the diagonal. O(count n² d).
[[nodiscard]] std::vector<Eigen::MatrixXd> attention_row_samples(const Workload& workload, int count);

}  // namespace subevict::proofs_checks
