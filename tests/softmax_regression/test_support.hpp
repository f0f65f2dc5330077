#pragma once
// Random small problems for the property tests of softmax_regression, and the far-start instance
// of the globalisation tests.
#include <rapidcheck.h>

#include "softmax_regression/instances.hpp"
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

// A start far beyond x* where a full Newton step raises the full loss: every row of A has a first
// entry >= 0.2 and the weights are small (w^2 ~ 0.002), so at x0 = -30 e_1 every z_i <= -6, the
// exp terms are negligible and the Hessian there is ~ A^T W^2 A; the Newton step lands near the
// regulariser's minimum (|x| ~ 1.6), where sum exp(z) ~ n, well above L(x0). x* ~ (-13, -0.6, -0.1),
// lambda(Hessian(x*)) in [0.137, 0.358]. n = 200, d = 3.
inline Instance far_start_instance() {
  InstanceSpec spec;
  spec.n = 200;
  spec.d = 3;
  spec.norm_A = 3;
  spec.parameters.R = 3;
  spec.seed = 1;
  spec.violation = Violation::kWeakW;
  Instance inst = make_instance(spec);
  inst.problem.A.col(0) = inst.problem.A.col(0).cwiseAbs().array() + 0.2;
  inst.problem.w *= 0.1;
  inst.x0 = Vector::Zero(3);
  inst.x0[0] = -30;
  return inst;
}

}  // namespace subevict::softmax_regression::testing
