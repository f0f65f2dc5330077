#pragma once
/// \file
/// H2O Definition D.33 and Claim D.34 on attention rows. A distribution D over rows is
/// (α, τ, k)-good when S₀ ⊆ supp_τ(x) and |supp_τ(x) \ S₀| ≤ α k for every sample x, with
/// supp_τ(x) = {j : x_j ≥ τ} (theory.md §6 and §9 item 6: the reading the library adopts); then
/// the union of the supports of n samples exceeds S₀ by at most α k n.
///
/// The check applies the claim as a prediction, with every constant fixed before the union is
/// measured: each instance's rows are split into calibration rows, which fix τ, S₀ and α from
/// their definitions (calibrate_d33), and test rows, the n samples the claim is applied to. The
/// hypotheses are what the calibration rows establish (a non-empty S₀); the conclusion is about
/// all test rows, which are not assumed to be good, so drifting or spreading supports violate it.
/// (Had every test row been required to be (α, τ, k)-good, the conclusion would follow from the
/// union bound and could not fail; how many test rows are good is reported instead.)

#include <Eigen/Core>
#include <string>
#include <vector>

#include "core/workload.hpp"
#include "proofs_checks/check.hpp"

namespace subevict::proofs_checks {

/// One instance of Claim D.34: rows are samples x (entries ≥ 0), one per matrix row; calibration
/// and test have the same number of columns.
struct SupportSamples {
  Eigen::MatrixXd calibration;  ///< fixes τ, S₀ and α
  Eigen::MatrixXd test;         ///< the n samples whose supports the claim bounds
  std::string label;            ///< where the rows come from, e.g. "layer 0 head 3"
};

/// τ, S₀ and α of Definition D.33 as fixed from calibration rows with budget k.
struct GoodConstants {
  double tau = 0;       ///< support threshold
  std::vector<int> s0;  ///< S₀, ascending
  int excess = 0;       ///< α k: the largest |supp_τ(x) \ S₀| over the calibration rows
  double alpha = 0;     ///< excess / k
};

/// The share of calibration rows whose τ-support must hold a token for it to join S₀.
inline constexpr double kS0Coverage = 0.95;

/// The constants the calibration rows determine, each from its definition:
/// - τ: the smallest threshold at which every calibration row's τ-support has at most k entries
///   (the support of any one query fits the cache budget): the next double above the largest
///   (k+1)-th largest entry of a row (0 for rows of at most k entries).
/// - S₀: the tokens in the τ-support of nearly every calibration row, at least a share
///   kS0Coverage of them (sinks and heavy hitters that the queries attend to; "every row" would
///   let one query that looks elsewhere empty S₀).
/// - α: the smallest value with |supp_τ(x) \ S₀| ≤ α k for every calibration row x.
/// Throws std::invalid_argument when there are no rows or k < 1. O(rows · cols).
[[nodiscard]] GoodConstants calibrate_d33(const Eigen::MatrixXd& calibration, int budget);

/// h2o.claim_d34 on `samples` with cache budget k: for each instance, calibrate_d33 on its
/// calibration rows; the hypotheses hold when S₀ is non-empty; the conclusion is
/// |∪_x supp_τ(x) \ S₀| ≤ α k n over the first n test rows (compared as integers: α k is an
/// integer), n the most rows (at most all) with α k n < reach(n), the tokens outside S₀ where one
/// of the first n rows is non-zero: the union never exceeds reach(n) (τ > 0), so elsewhere the
/// bound cannot fail. An instance with no such n ≥ 1 is vacuous (CheckResult::vacuous).
/// Measurements: |S₀|, τ, α, the union and the bound of each instance, and the share of test rows
/// that are (α, τ, k)-good (S₀ ⊆ supp_τ(x) and |supp_τ(x) \ S₀| ≤ α k). Throws
/// std::invalid_argument for k < 1, an instance without calibration or test rows, or column
/// counts that differ.
[[nodiscard]] CheckResult check_claim_d34(const std::vector<SupportSamples>& samples, int budget);

/// The samples of the registered check: for `count` query heads spread over `layers` of the
/// workload (spread_head, layer-major; empty: every layer), the exact causal attention rows of queries n/2 ≤ i < 3n/4 as
/// calibration and 3n/4 ≤ i < n as test (zero above the diagonal): the constants are fixed on
/// earlier queries and tested on later ones. Throws std::invalid_argument for fewer than 4 tokens
/// or count < 1. O(count n² d).
[[nodiscard]] std::vector<SupportSamples> attention_row_samples(const Workload& workload, int count,
                                                                const std::vector<int>& layers = {});

}  // namespace subevict::proofs_checks
