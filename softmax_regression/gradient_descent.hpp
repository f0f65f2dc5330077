#pragma once
/// \file
/// Gradient descent with backtracking, the baseline: x_{t+1} = x_t - s_t grad L(x_t), where s_t is
/// the Armijo factor searched down from 2 s_{t-1} (s_{-1} = initial_step). The trace records s_t as
/// step_size and the halvings from 2 s_{t-1} as backtracks.

#include "softmax_regression/solver.hpp"

namespace subevict::softmax_regression {

/// Options of gradient descent; the stopping rule is in solver.hpp.
struct GradientDescentOptions {
  StoppingRule stop{10000, 1e-10, std::nullopt, 0};
  /// First trial step; later trials start from twice the previous accepted step.
  double initial_step = 1.0;
};

/// Minimises `kind` from x0. O(n d) per iteration plus O(n d) per line-search trial.
Summary gradient_descent(const Problem& problem, LossKind kind, const Vector& x0,
                         const GradientDescentOptions& options = {});

}  // namespace subevict::softmax_regression
