#include "softmax_regression/errata.hpp"

#include "softmax_regression/solver.hpp"

namespace subevict::softmax_regression {

Vector printed_lemma_d44_gradient(const Problem& problem, const Vector& x) {
  const Point pt = evaluate_point(problem, x);
  const Vector v = pt.f * pt.c.dot(pt.f) + pt.f.cwiseProduct(pt.c);
  return problem.A.transpose() * v;
}

Vector printed_algorithm4_update(const Vector& x, const Matrix& H, const Vector& g) {
  return x - newton_direction(H, g);
}

Vector corrected_algorithm4_update(const Vector& x, const Matrix& H, const Vector& g) {
  return x + newton_direction(H, g);
}

}  // namespace subevict::softmax_regression
