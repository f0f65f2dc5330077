#pragma once
/// \file
/// The printed (wrong) forms of theory.md §9 items 1 and 2, kept only so that the errata tests and
/// checks can show that they fail. The library's solvers use the corrected forms.

#include "softmax_regression/loss.hpp"

namespace subevict::softmax_regression {

/// H2O Lemma D.44 part 5 as printed: grad L_exp = A^T (f <c, f> + diag(f) c). The correct form
/// (gradient(problem, LossKind::kExp, x)) is A^T (diag(f) c - f <c, f>): the first term's sign is
/// wrong, so the two differ by 2 <c, f> A^T f. O(n d).
Vector printed_lemma_d44_gradient(const Problem& problem, const Vector& x);

/// Algorithm 4's update as printed: x + H^{-1} g (an ascent step for a positive definite H).
/// O(d^3).
Vector printed_algorithm4_update(const Vector& x, const Matrix& H, const Vector& g);

/// The corrected Newton update x - H^{-1} g. O(d^3).
Vector corrected_algorithm4_update(const Vector& x, const Matrix& H, const Vector& g);

}  // namespace subevict::softmax_regression
