#include "softmax_regression/approximate_newton.hpp"

#include <cmath>
#include <stdexcept>

namespace subevict::softmax_regression {
namespace {

constexpr std::uint64_t kSampleStream = 0x5352000100000000ull;

// Extreme eigenvalues of L^{-1} Ht L^{-T} with H = L L^T; NaN when H is not positive definite.
std::pair<double, double> relative_spectrum(const Matrix& H, const Matrix& Ht) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Eigen::LLT<Matrix> llt(H);
  if (llt.info() != Eigen::Success) return {nan, nan};
  Matrix C = llt.matrixL().solve(Ht);
  C = llt.matrixL().solve(Matrix(C.transpose()));
  Eigen::SelfAdjointEigenSolver<Matrix> eig(C, Eigen::EigenvaluesOnly);
  return {eig.eigenvalues().minCoeff(), eig.eigenvalues().maxCoeff()};
}

// Algorithm 4's D at a point whose inner Hessian is `inner`: the whole inner diagonal, or for the
// literal form B_diag + W^2 (the full loss's inner diagonal without L_sparse's u).
Vector algorithm4_diagonal(const InnerHessian& inner, const Point& pt, LossKind kind,
                           Algorithm4Form form) {
  if (form == Algorithm4Form::kLiteral && kind == LossKind::kFull) return inner.diagonal - pt.u;
  return inner.diagonal;
}

}  // namespace

std::string to_string(Algorithm4Form form) {
  switch (form) {
    case Algorithm4Form::kLiteral: return "literal";
    case Algorithm4Form::kFoldedDiagonalExactLowRank: return "folded_diagonal_exact_low_rank";
  }
  return "?";
}

Index approximate_newton_sample_size(double epsilon1, double delta, int iterations, Index d,
                                     double mass, double sample_constant) {
  if (!(epsilon1 > 0) || !(delta > 0 && delta < 1) || iterations < 1 || !(sample_constant > 0)) {
    throw std::invalid_argument(
        "approximate_newton_sample_size: need eps1 > 0, 0 < delta < 1, T >= 1, C > 0");
  }
  const double log_term = std::log(double(std::max<Index>(d, 1)) * iterations / delta);
  return std::max<Index>(
      1, Index(std::ceil(sample_constant * mass * log_term / (epsilon1 * epsilon1))));
}

Summary approximate_newton(const Problem& problem, LossKind kind, const Vector& x0,
                           const ApproximateNewtonOptions& options) {
  const bool literal = options.form == Algorithm4Form::kLiteral;
  if (literal && kind != LossKind::kFull && kind != LossKind::kDls) {
    throw std::invalid_argument("approximate_newton: the literal Algorithm 4 form needs the full "
                                "or the dls loss, got " + to_string(kind));
  }
  const Index n = problem.n(), d = problem.d();
  const bool exact = options.leverage == LeverageMethod::kExact ||
                     (options.leverage == LeverageMethod::kAuto &&
                      n <= options.exact_leverage_max_rows);
  Vector reference_weights, reference_scores;
  int step_count = 0;
  // The gradient pass also projects the rank <= 2 terms (one pass over A: A^T [v f g]); the step
  // that follows at the same iterate uses `inner` and `outer`.
  InnerHessian inner;
  Matrix outer;
  const GradientPass fused = [&](const Point& pt, const Vector& v) -> Vector {
    inner = inner_hessian(problem, kind, pt);
    inner.diagonal = algorithm4_diagonal(inner, pt, kind, options.form);  // D from here on
    if (literal) return problem.A.transpose() * v;
    GradientAndOuterTerms projected = gradient_and_outer_terms(problem.A, v, inner.terms);
    outer = std::move(projected.outer);
    return projected.gradient;
  };
  return run_iterations(
      problem, kind, x0, options.stop,
      [&](const Vector& x, const Point&, double, const Vector& g, IterationRecord& rec, Status&,
          std::string&) -> std::optional<Vector> {
        const Vector weights = inner.diagonal.cwiseMax(0.0);
        // Overestimates relative to the reference weights, or a refresh.
        Vector ratio;
        bool refresh = reference_weights.size() == 0 || (reference_weights.array() <= 0).any();
        if (!refresh) {
          ratio = weights.cwiseQuotient(reference_weights);
          refresh = ratio.maxCoeff() > options.refresh_ratio * ratio.minCoeff() ||
                    !(ratio.minCoeff() > 0);
        }
        if (refresh) {
          const Vector s = weights.cwiseSqrt();
          reference_scores = exact ? exact_leverage_scores(problem.A, s)
                                   : sketched_leverage_scores(problem.A, s, options.sketch);
          reference_weights = weights;
          ratio = Vector::Ones(n);
        }
        const Vector over = ratio.cwiseProduct(reference_scores) / ratio.minCoeff();
        const double mass = over.sum();
        const Index draws = approximate_newton_sample_size(
            options.epsilon1, options.delta, options.stop.max_iterations, d, mass,
            options.sample_constant);
        Matrix H;
        if (draws >= n || !(mass > 0)) {
          H = weighted_gram(problem.A, inner.diagonal);
          rec.sampled_rows = n;
        } else {
          const RowSample sample =
              sample_rows(over / mass, draws, options.seed, kSampleStream + Index(step_count));
          const Index k = Index(sample.rows.size());
          Matrix rows(k, d);
          Vector sampled(k);
          for (Index j = 0; j < k; ++j) {
            rows.row(j) = problem.A.row(sample.rows[j]);
            sampled[j] = inner.diagonal[sample.rows[j]] * sample.weights[j];
          }
          H = weighted_gram(rows, sampled);
          rec.sampled_rows = k;
        }
        if (options.check_spectral) {
          const auto [lo, hi] = relative_spectrum(weighted_gram(problem.A, inner.diagonal), H);
          rec.spectral_min = lo;
          rec.spectral_max = hi;
        }
        if (!literal) H += outer;
        ++step_count;
        rec.step_size = 1;
        const Vector p = newton_direction(H, g);
        return Vector(options.printed_sign ? Vector(x - p) : Vector(x + p));
      },
      fused);
}

}  // namespace subevict::softmax_regression
