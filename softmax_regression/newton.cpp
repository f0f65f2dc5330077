#include "softmax_regression/newton.hpp"

namespace subevict::softmax_regression {

Summary newton(const Problem& problem, LossKind kind, const Vector& x0,
               const NewtonOptions& options) {
  // The gradient pass also projects the rank <= 2 terms for the step (one pass: A^T [v f g]).
  InnerHessian inner;
  Matrix outer;
  const GradientPass fused = [&](const Point& pt, const Vector& v) -> Vector {
    inner = inner_hessian(problem, kind, pt);
    GradientAndOuterTerms projected = gradient_and_outer_terms(problem.A, v, inner.terms);
    outer = std::move(projected.outer);
    return projected.gradient;
  };
  return run_iterations(
      problem, kind, x0, options.stop,
      [&](const Vector& x, const Point&, double loss_value, const Vector& g,
          IterationRecord& rec, Status& status, std::string& message) -> std::optional<Vector> {
        Matrix H = weighted_gram(problem.A, inner.diagonal);
        H += outer;
        const Vector p = newton_direction(H, g);
        double t = 1;
        if (options.line_search) {
          const std::optional<LineSearchStep> step = armijo_step(problem, kind, x, loss_value, g, p);
          if (!step) {
            status = Status::kLineSearchFailed;
            message = "no step along the Newton direction decreases the loss";
            return std::nullopt;
          }
          t = step->t;
          rec.backtracks = step->backtracks;
        }
        rec.step_size = t;
        return Vector(x + t * p);
      },
      fused);
}

}  // namespace subevict::softmax_regression
