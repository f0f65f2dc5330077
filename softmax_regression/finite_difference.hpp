#pragma once
/// \file
/// Finite-difference derivatives and checks of closed-form gradients and Hessians (in the spirit
/// of Stan's finite_diff_gradient and Ceres' GradientChecker), used by the tests and the checks.
///
/// Central differences with step h_i = eps^(1/3) max(1, |x_i|): the truncation error O(h^2) and
/// the rounding error O(eps |F| / h) balance there, so a derivative is accurate to about
/// eps^(2/3) times the scale of F (Tol<double>::grad() budgets 100 eps^(2/3) = 3.7e-9).

#include <functional>

#include "softmax_regression/loss.hpp"

namespace subevict::softmax_regression {

/// A scalar function of x.
using ScalarFunction = std::function<double(const Vector&)>;
/// A vector-valued function of x (e.g. a gradient).
using VectorFunction = std::function<Vector(const Vector&)>;

/// The central-difference step for coordinate value `xi`: cbrt(eps) * max(1, |xi|).
double finite_difference_step(double xi);

/// Gradient of `f` at x by central differences. 2 d evaluations of f.
Vector finite_difference_gradient(const ScalarFunction& f, const Vector& x);

/// Jacobian of `g` at x by central differences (column j = d g / d x_j). For g = a gradient this
/// is the Hessian (not symmetrised). 2 d evaluations of g.
Matrix finite_difference_jacobian(const VectorFunction& g, const Vector& x);

/// The outcome of comparing a closed-form derivative with finite differences:
/// passed <=> max_abs_error <= tolerance * scale, where scale = max(1, |F(x)|, max |derivative|)
/// (rounding in the differences grows with |F(x)|, so the error is judged against it).
struct DerivativeCheck {
  double max_abs_error = 0;
  double scale = 1;
  double tolerance = 0;
  Index worst_row = 0;  ///< entry with the largest error (lowest index on ties)
  Index worst_col = 0;
  bool passed = false;
};

/// Compares `analytic` (the claimed gradient of f at x) with finite differences.
DerivativeCheck check_gradient(const ScalarFunction& f, const Vector& analytic, const Vector& x,
                               double tolerance);

/// Compares `analytic` (the claimed Hessian, i.e. the Jacobian of gradient g at x) with finite
/// differences of g.
DerivativeCheck check_hessian(const VectorFunction& g, const Matrix& analytic, const Vector& x,
                              double tolerance);

}  // namespace subevict::softmax_regression
