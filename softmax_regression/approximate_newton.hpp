#pragma once
/// \file
/// Approximate Newton (H2O Algorithm 4, with the sign of the update corrected, theory.md §9 item 2),
/// in one of two forms (Algorithm4Form):
///   literal: D = B_diag(x_t) + W^2 as printed, D~ = a leverage-score row sample of D^{1/2} A
///       with s rows, H~ = A^T D~ A and nothing else;
///   folded diagonal, exact low rank (the default): D = the whole diagonal of the inner Hessian
///       (for the full loss B_diag + diag(u) + W^2: the PSD diag(u) of L_sparse belongs to the
///       Hessian too), H~ = A^T D~ A + the exact rank <= 2 part A^T B_rank A (O(n d));
///   both: x_{t+1} = x_t - H~^{-1} grad L(x_t)   (exact gradient, full step).
/// No line search: Theorem D.49 analyses the full step from a start in a neighbourhood of x*
/// (M |x0 - x*| <= 0.1 l), so the algorithm is local; from a far start a full step can increase
/// the loss (globalised solvers: newton.hpp, gradient_descent.hpp).
/// Sample size: s = ceil(C * sum(tau^) * ln(d T / delta) / eps1^2), T = max_iterations, where
/// tau^ are the leverage scores used (sum = rank <= d when exact, the overestimate mass otherwise).
/// Leverage scores are recomputed only when the weights moved: with reference weights D_0 and
/// scores tau_0, tau_i(D) <= (D_i / D0_i) tau0_i / min_j (D_j / D0_j) (because A^T D A >=
/// min_j(D_j/D0_j) A^T D0 A), so these overestimates are used while
/// max_j(D_j/D0_j) / min_j(D_j/D0_j) <= refresh_ratio, and the scores are recomputed otherwise.
/// Scores and probabilities use max(D, 0): a row with D_i <= 0 (possible only where B_diag is
/// negative and W^2 (+ u in the folded form) does not compensate, i.e. outside Lemma D.47's w condition) is never
/// sampled, so H~ then omits its (non-PSD) contribution.

#include <cstdint>
#include <string>

#include "softmax_regression/leverage_scores.hpp"
#include "softmax_regression/solver.hpp"

namespace subevict::softmax_regression {

/// How leverage scores are computed.
enum class LeverageMethod {
  kExact,     ///< QR of D^{1/2} A, O(n d^2)
  kSketched,  ///< sketched_leverage_scores, O(n d k)
  kAuto,      ///< exact when n <= exact_leverage_max_rows, sketched otherwise
};

/// Which Hessian approximation Algorithm 4 uses (see the file comment).
enum class Algorithm4Form {
  /// As printed: D = B_diag + W^2 (the inner Hessian of L_exp + L_reg without its rank <= 2
  /// part; L_sparse's diag(u) is left out), H~ = A^T D~ A. Defined for LossKind::kFull and kDls.
  kLiteral,
  /// D = the whole inner diagonal (diag(u) folded in), H~ = A^T D~ A + A^T B_rank A exactly.
  kFoldedDiagonalExactLowRank,
};

/// "literal", "folded_diagonal_exact_low_rank".
std::string to_string(Algorithm4Form form);

/// Options of approximate Newton; the stopping rule is in solver.hpp.
struct ApproximateNewtonOptions {
  StoppingRule stop;
  /// Target spectral accuracy (1 +- eps1) of the sampled A^T D~ A against A^T D A.
  double epsilon1 = 0.5;
  /// Total failure probability; each of the T = max_iterations samples gets delta / T.
  double delta = 0.01;
  /// The constant C of the sample-size rule (the matrix Chernoff bound gives C = 8/3 for
  /// a (1 +- eps) guarantee; C = 1 is the default, and the spectral check measures the result).
  double sample_constant = 1.0;
  LeverageMethod leverage = LeverageMethod::kAuto;
  Index exact_leverage_max_rows = 20000;
  /// See the file comment; 1 recomputes the scores at every iteration.
  double refresh_ratio = 2.0;
  /// The Hessian approximation: the printed one or the variant (see Algorithm4Form).
  Algorithm4Form form = Algorithm4Form::kFoldedDiagonalExactLowRank;
  /// Measure the extreme eigenvalues of (A^T D A)^{-1/2} A^T D~ A (A^T D A)^{-1/2} at every
  /// iteration (O(n d^2): for tests and reports, not for speed).
  bool check_spectral = false;
  /// Take the printed update x_t + H~^{-1} g of Algorithm 4 (theory.md §9 item 2): for checks only.
  bool printed_sign = false;
  SketchOptions sketch;
  /// Seed of the row samples (iteration t uses its own counter stream).
  std::uint64_t seed = 0;
};

/// s = ceil(C * mass * ln(d T / delta) / eps1^2) (at least 1). Throws std::invalid_argument unless
/// eps1 > 0, 0 < delta < 1, T >= 1, C > 0.
Index approximate_newton_sample_size(double epsilon1, double delta, int iterations, Index d,
                                     double mass, double sample_constant);

/// Minimises `kind` from x0 by approximate Newton. Throws std::invalid_argument for the literal
/// form with a loss other than kFull or kDls. Per iteration: A x_t (one pass over A), the
/// gradient and the rank <= 2 terms together (gradient_and_outer_terms: a second pass), weights and
/// sampling O(n + s log n), H~ O(s d^2), solve O(d^3), plus leverage scores when refreshed.
Summary approximate_newton(const Problem& problem, LossKind kind, const Vector& x0,
                           const ApproximateNewtonOptions& options = {});

}  // namespace subevict::softmax_regression
