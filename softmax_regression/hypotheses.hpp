#pragma once
/// \file
/// The hypotheses of H2O Lemma D.47 and Theorem D.49 (theory.md §7), measured on a problem. The CLI
/// warns with them and the checks reuse them; nothing here refuses a problem.

#include <optional>
#include <string>
#include <vector>

#include "softmax_regression/loss.hpp"

namespace subevict::softmax_regression {

/// One measured hypothesis: `holds` <=> measured <relation> required.
struct HypothesisCheck {
  std::string id;         ///< e.g. "w_condition"
  std::string statement;  ///< e.g. "min_i w_i^2 >= 20 + l / sigma_min(A)^2"
  double measured = 0;
  double required = 0;
  std::string relation;  ///< "<=" or ">=": measured relation required
  bool holds = false;
};

/// The constants of the theorem: R bounds |A|, |x*| (and the sampled |x|), l is the target
/// strong-convexity level.
struct TheoremParameters {
  double R = 10;
  double l = 1;
};

/// Extreme singular values of A (from the eigenvalues of A^T A). O(n d^2 + d^3).
struct SingularValueRange {
  double min = 0;
  double max = 0;
};
SingularValueRange singular_value_range(const Matrix& A);

/// Measures, in this order: norm_A (|A|_2 <= R), R_at_least_10 (R >= 10), b_nonnegative
/// (min_i b_i >= 0), b_mass (|b|_1 <= 1), w_condition (min_i w_i^2 >= 20 + l / sigma_min(A)^2), and
/// with x_star: norm_x_star (|x*| <= R) and start_neighbourhood (M |x0 - x*| <= 0.1 l with
/// M = n^2 exp(40 R^2), the Lipschitz constant of Lemma D.48, compared in logarithms:
/// measured ln|x0 - x*|, required ln(0.1 l) - 2 ln n - 40 R^2). O(n d^2).
std::vector<HypothesisCheck> check_hypotheses(const Problem& problem, const Vector& x0,
                                              const TheoremParameters& parameters,
                                              const std::optional<Vector>& x_star = std::nullopt);

/// "hypothesis ID (STATEMENT) violated: measured M, required RELATION R" (or "holds").
std::string describe(const HypothesisCheck& check);

}  // namespace subevict::softmax_regression
