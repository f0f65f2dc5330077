#include "softmax_regression/finite_difference.hpp"

#include <cmath>
#include <limits>

namespace subevict::softmax_regression {
namespace {

DerivativeCheck compare(const Matrix& analytic, const Matrix& numeric, double value_scale,
                        double tolerance) {
  DerivativeCheck check;
  check.tolerance = tolerance;
  check.scale = std::fmax(1.0, std::fmax(value_scale, analytic.cwiseAbs().maxCoeff()));
  // Column-major scan with strict > keeps the first (lowest index) maximum.
  for (Index j = 0; j < analytic.cols(); ++j) {
    for (Index i = 0; i < analytic.rows(); ++i) {
      const double e = std::fabs(analytic(i, j) - numeric(i, j));
      if (e > check.max_abs_error || std::isnan(e)) {
        check.max_abs_error = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
        check.worst_row = i;
        check.worst_col = j;
      }
    }
  }
  check.passed = check.max_abs_error <= tolerance * check.scale;
  return check;
}

}  // namespace

double finite_difference_step(double xi) {
  return std::cbrt(std::numeric_limits<double>::epsilon()) * std::fmax(1.0, std::fabs(xi));
}

Vector finite_difference_gradient(const ScalarFunction& f, const Vector& x) {
  return finite_difference_jacobian([&](const Vector& y) { return Vector::Constant(1, f(y)); }, x)
      .row(0)
      .transpose();
}

Matrix finite_difference_jacobian(const VectorFunction& g, const Vector& x) {
  Matrix J;
  Vector xp = x;
  for (Index j = 0; j < x.size(); ++j) {
    const double h = finite_difference_step(x[j]);
    xp[j] = x[j] + h;
    const Vector up = g(xp);
    xp[j] = x[j] - h;
    const Vector down = g(xp);
    xp[j] = x[j];
    if (j == 0) J.resize(up.size(), x.size());
    J.col(j) = (up - down) / (2 * h);
  }
  return J;
}

DerivativeCheck check_gradient(const ScalarFunction& f, const Vector& analytic, const Vector& x,
                               double tolerance) {
  return compare(analytic, finite_difference_gradient(f, x), std::fabs(f(x)), tolerance);
}

DerivativeCheck check_hessian(const VectorFunction& g, const Matrix& analytic, const Vector& x,
                              double tolerance) {
  return compare(analytic, finite_difference_jacobian(g, x), g(x).cwiseAbs().maxCoeff(),
                 tolerance);
}

}  // namespace subevict::softmax_regression
