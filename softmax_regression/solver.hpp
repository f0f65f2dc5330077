#pragma once
/// \file
/// What the solvers share: the stopping rule, the per-iteration trace, the Summary and Status, and
/// the iteration driver that evaluates the loss and gradient, records the trace and stops.
///
/// Stopping (checked at every iterate x_t, in this order):
///   L(x_t) or grad L(x_t) not finite                            -> Status::kNonFinite
///   |grad L(x_t)|_2 <= gradient_tolerance                      -> Status::kConverged
///   x_star given and |x_t - x_star|_2 <= x_star_tolerance       -> Status::kReachedXStar
///   t == max_iterations                                         -> Status::kMaxIterations
/// and a solver may stop with kLineSearchFailed when no step decreases the loss.

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "softmax_regression/loss.hpp"

namespace subevict::softmax_regression {

/// Why a solver stopped.
enum class Status { kConverged, kReachedXStar, kMaxIterations, kLineSearchFailed, kNonFinite };

/// "converged", "reached_x_star", "max_iterations", "line_search_failed", "non_finite".
std::string to_string(Status status);

/// The stopping rule shared by every solver (see the file comment).
struct StoppingRule {
  int max_iterations = 100;
  double gradient_tolerance = 1e-10;
  /// The known minimiser, when there is one: enables distance_to_x_star in the trace.
  std::optional<Vector> x_star;
  /// Stop once |x_t - x_star| <= this (only with x_star; 0 disables).
  double x_star_tolerance = 0;
};

/// One row of the convergence trace, recorded at iterate x_t (before the step from it).
struct IterationRecord {
  int iteration = 0;
  double loss = 0;
  double gradient_norm = 0;
  /// |x_{t+1} - x_t|: NaN at the last iterate.
  double step_length = std::numeric_limits<double>::quiet_NaN();
  /// Line-search factor of the step taken from x_t (1 = full step); NaN at the last iterate.
  double step_size = std::numeric_limits<double>::quiet_NaN();
  /// Line-search trials rejected before the step from x_t was accepted (0: the first trial was
  /// accepted, or the solver has no line search).
  int backtracks = 0;
  /// |x_t - x_star|, NaN when x_star is unknown.
  double distance_to_x_star = std::numeric_limits<double>::quiet_NaN();
  /// Wall-clock seconds since the solver started, at the time x_t was evaluated.
  double seconds = 0;
  /// Approximate Newton only: rows in the sample (distinct) and the extreme eigenvalues of
  /// H_D^{-1/2} H~ H_D^{-1/2} when the spectral check is on (NaN otherwise).
  Index sampled_rows = 0;
  double spectral_min = std::numeric_limits<double>::quiet_NaN();
  double spectral_max = std::numeric_limits<double>::quiet_NaN();
};

/// What a solver returns.
struct Summary {
  Status status = Status::kMaxIterations;
  Vector x;                                   ///< the last iterate
  std::vector<IterationRecord> trace;         ///< one record per iterate, x_0 first
  double final_loss = 0;
  double final_gradient_norm = 0;
  double seconds = 0;
  std::string message;  ///< one line describing why it stopped
  int iterations() const { return int(trace.size()) - 1; }
};

/// One solver step from x_t: given the point, gradient and the record of x_t (which the step may
/// annotate: step_size, sampled_rows, spectral_*), returns x_{t+1}, or nullopt after setting
/// `status` and `message` when it cannot continue.
using StepFunction = std::function<std::optional<Vector>(
    const Vector& x, const Point& point, double loss_value, const Vector& gradient,
    IterationRecord& record, Status& status, std::string& message)>;

/// Computes the gradient A^T v at an iterate from its point and gradient weights v
/// (gradient_weights). A solver that needs other products with A^T at the same point computes them
/// here, in the same pass over A, and keeps them for its step.
using GradientPass = std::function<Vector(const Point& point, const Vector& weights)>;

/// Runs the loop of every solver: evaluates x_t, records it, applies the stopping rule, takes a
/// step. O(n d) per iterate plus the step's cost. The gradient is `gradient_pass(point, v)` when
/// given (called once per iterate, before that iterate's step), A^T v otherwise.
Summary run_iterations(const Problem& problem, LossKind kind, const Vector& x0,
                       const StoppingRule& stop, const StepFunction& step,
                       const GradientPass& gradient_pass = nullptr);

/// Solves H p = -g by Cholesky (LLT), falling back to LDLT when H is not numerically positive
/// definite; when even that yields no descent direction (g^T p >= 0) returns -g. O(d^3).
Vector newton_direction(const Matrix& H, const Vector& g);

/// A step accepted by armijo_step: the factor t = shrink^k and k, the trials rejected before it.
struct LineSearchStep {
  double t = 1;
  int backtracks = 0;
};

/// Backtracking (Armijo) line search along p from x: the largest t = shrink^k, k = 0..max_halvings,
/// with L(x + t p) <= L(x) + c t g^T p - r, r = 4 eps |L(x)| the rounding level of L; a trial
/// within r of L(x) (too close to tell near the minimum) qualifies instead when it reduces the
/// gradient norm. Returns t and k, or nullopt when none qualifies. Each trial costs O(n d), plus
/// O(n d) for the gradient of a trial in the rounding band.
std::optional<LineSearchStep> armijo_step(const Problem& problem, LossKind kind, const Vector& x,
                                  double loss_value, const Vector& gradient, const Vector& p,
                                  double shrink = 0.5, int max_halvings = 40, double c = 1e-4);

}  // namespace subevict::softmax_regression
