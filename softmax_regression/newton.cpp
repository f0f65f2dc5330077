#include "softmax_regression/newton.hpp"

namespace subevict::softmax_regression {

Summary newton(const Problem& problem, LossKind kind, const Vector& x0,
               const NewtonOptions& options) {
  return run_iterations(
      problem, kind, x0, options.stop,
      [&](const Vector& x, const Point& pt, double loss_value, const Vector& g,
          IterationRecord& rec, Status& status, std::string& message) -> std::optional<Vector> {
        const InnerHessian inner = inner_hessian(problem, kind, pt);
        Matrix H = weighted_gram(problem.A, inner.diagonal);
        add_outer_terms(problem.A, inner.terms, H);
        const Vector p = newton_direction(H, g);
        double t = 1;
        if (options.line_search) {
          const std::optional<double> step = armijo_step(problem, kind, x, loss_value, g, p);
          if (!step) {
            status = Status::kLineSearchFailed;
            message = "no step along the Newton direction decreases the loss";
            return std::nullopt;
          }
          t = *step;
        }
        rec.step_size = t;
        return Vector(x + t * p);
      });
}

}  // namespace subevict::softmax_regression
