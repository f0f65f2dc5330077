#include "softmax_regression/solver.hpp"

#include <chrono>
#include <cmath>

#include "core/number_text.hpp"

namespace subevict::softmax_regression {
namespace {

/// A number in a stop message, as printf "%g" writes it.
std::string number(double v) { return significant_digits(v, 6); }

}  // namespace

std::string to_string(Status status) {
  switch (status) {
    case Status::kConverged: return "converged";
    case Status::kReachedXStar: return "reached_x_star";
    case Status::kMaxIterations: return "max_iterations";
    case Status::kLineSearchFailed: return "line_search_failed";
    case Status::kNonFinite: return "non_finite";
  }
  return "?";
}

Summary run_iterations(const Problem& problem, LossKind kind, const Vector& x0,
                       const StoppingRule& stop, const StepFunction& step,
                       const GradientPass& gradient_pass) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  Summary s;
  Vector x = x0;
  for (int t = 0;; ++t) {
    IterationRecord rec;
    rec.iteration = t;
    const Point pt = evaluate_point(problem, x);
    rec.loss = loss(problem, kind, pt);
    const Vector weights = gradient_weights(problem, kind, pt);
    const Vector g =
        gradient_pass ? gradient_pass(pt, weights) : Vector(problem.A.transpose() * weights);
    rec.gradient_norm = g.norm();
    if (stop.x_star) rec.distance_to_x_star = (x - *stop.x_star).norm();
    rec.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    s.trace.push_back(rec);
    s.x = x;
    s.final_loss = rec.loss;
    s.final_gradient_norm = rec.gradient_norm;
    bool done = true;
    if (!std::isfinite(rec.loss) || !std::isfinite(rec.gradient_norm)) {
      s.status = Status::kNonFinite;
      s.message = "loss or gradient not finite at iterate " + std::to_string(t);
    } else if (rec.gradient_norm <= stop.gradient_tolerance) {
      s.status = Status::kConverged;
      s.message = "|grad| = " + number(rec.gradient_norm) + " <= " + number(stop.gradient_tolerance);
    } else if (stop.x_star && stop.x_star_tolerance > 0 &&
               rec.distance_to_x_star <= stop.x_star_tolerance) {
      s.status = Status::kReachedXStar;
      s.message = "|x - x*| = " + number(rec.distance_to_x_star) + " <= " + number(stop.x_star_tolerance);
    } else if (t >= stop.max_iterations) {
      s.status = Status::kMaxIterations;
      s.message = "reached " + std::to_string(stop.max_iterations) + " iterations";
    } else {
      done = false;
    }
    if (done) break;
    std::optional<Vector> next = step(x, pt, rec.loss, g, s.trace.back(), s.status, s.message);
    if (!next) break;
    s.trace.back().step_length = (*next - x).norm();
    x = std::move(*next);
  }
  s.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return s;
}

Vector newton_direction(const Matrix& H, const Vector& g) {
  Eigen::LLT<Matrix> llt(H);
  if (llt.info() == Eigen::Success) return -llt.solve(g);
  Eigen::LDLT<Matrix> ldlt(H);
  if (ldlt.info() == Eigen::Success) {
    Vector p = -ldlt.solve(g);
    if (p.allFinite() && g.dot(p) < 0) return p;
  }
  return -g;
}

std::optional<LineSearchStep> armijo_step(const Problem& problem, LossKind kind, const Vector& x,
                                  double loss_value, const Vector& gradient, const Vector& p,
                                  double shrink, int max_halvings, double c) {
  const double slope = gradient.dot(p);
  const double slack = 4 * std::numeric_limits<double>::epsilon() * std::fabs(loss_value);
  double t = 1;
  double gradient_norm = -1;  // computed only when a trial is within rounding of L(x)
  for (int k = 0; k <= max_halvings; ++k, t *= shrink) {
    const Vector trial_x = x + t * p;
    const double trial = loss(problem, kind, trial_x);
    if (!std::isfinite(trial)) continue;
    if (trial <= loss_value + c * t * slope - slack) return LineSearchStep{t, k};
    if (trial <= loss_value + slack) {
      // Indistinguishable from L(x) in rounding: judge the step by the gradient norm instead.
      if (gradient_norm < 0) gradient_norm = gradient.norm();
      if (softmax_regression::gradient(problem, kind, trial_x).norm() < gradient_norm) {
        return LineSearchStep{t, k};
      }
    }
  }
  return std::nullopt;
}

}  // namespace subevict::softmax_regression
