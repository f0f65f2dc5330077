#pragma once
// Random small problems for the property tests of softmax_regression.
#include <rapidcheck.h>

#include "softmax_regression/loss.hpp"

namespace subevict::softmax_regression::testing {

// Entries of A in [-scale, scale], b >= 0 with |b|_1 <= 1, w in [0, 3], x in [-1, 1]^d.
struct RandomProblem {
  Problem problem;
  Vector x;
};

inline double draw(double lo, double hi) {
  return lo + (hi - lo) * double(*rc::gen::inRange(0, 1000001)) / 1e6;
}

inline RandomProblem random_problem(double scale = 1.0) {
  const Index n = *rc::gen::inRange(2, 12);
  const Index d = *rc::gen::inRange(1, 6);
  RandomProblem r;
  r.problem.A.resize(n, d);
  for (Index i = 0; i < n; ++i) {
    for (Index j = 0; j < d; ++j) r.problem.A(i, j) = draw(-scale, scale);
  }
  r.problem.b.resize(n);
  r.problem.w.resize(n);
  for (Index i = 0; i < n; ++i) {
    r.problem.b[i] = draw(0.01, 1);
    r.problem.w[i] = draw(0, 3);
  }
  r.problem.b *= draw(0.1, 1) / r.problem.b.sum();
  r.x.resize(d);
  for (Index j = 0; j < d; ++j) r.x[j] = draw(-1, 1);
  return r;
}

}  // namespace subevict::softmax_regression::testing
