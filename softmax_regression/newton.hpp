#pragma once
/// \file
/// Exact Newton's method: x_{t+1} = x_t + s_t p_t with H(x_t) p_t = -grad L(x_t) solved by
/// Cholesky (LDLT fallback, see newton_direction) and s_t = 1 or an Armijo backtracking factor.

#include "softmax_regression/solver.hpp"

namespace subevict::softmax_regression {

/// Options of exact Newton; the stopping rule is in solver.hpp.
struct NewtonOptions {
  StoppingRule stop;
  /// Backtrack from the full step until the Armijo condition holds (armijo_step; the trace records
  /// the factor as step_size and the halvings as backtracks). Off: always take the full step (pure
  /// Newton, as in the local convergence theory; from a far start it can increase the loss).
  bool line_search = true;
};

/// Minimises `kind` from x0. Each iteration: the Hessian A^T (diag(m) + outer terms) A in
/// O(n d^2), one O(d^3) factorisation, the gradient in O(n d) and O(n d) per line-search trial.
Summary newton(const Problem& problem, LossKind kind, const Vector& x0,
               const NewtonOptions& options = {});

}  // namespace subevict::softmax_regression
