#include "softmax_regression/gradient_descent.hpp"

namespace subevict::softmax_regression {

Summary gradient_descent(const Problem& problem, LossKind kind, const Vector& x0,
                         const GradientDescentOptions& options) {
  double scale = options.initial_step;
  return run_iterations(
      problem, kind, x0, options.stop,
      [&](const Vector& x, const Point&, double loss_value, const Vector& g, IterationRecord& rec,
          Status& status, std::string& message) -> std::optional<Vector> {
        const Vector p = -2 * scale * g;
        const std::optional<LineSearchStep> t = armijo_step(problem, kind, x, loss_value, g, p);
        if (!t) {
          status = Status::kLineSearchFailed;
          message = "no step along -grad decreases the loss";
          return std::nullopt;
        }
        scale *= 2 * t->t;
        rec.step_size = scale;
        rec.backtracks = t->backtracks;
        return Vector(x + t->t * p);
      });
}

}  // namespace subevict::softmax_regression
