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

}  // namespace

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
  const Index n = problem.n(), d = problem.d();
  const bool exact = options.leverage == LeverageMethod::kExact ||
                     (options.leverage == LeverageMethod::kAuto &&
                      n <= options.exact_leverage_max_rows);
  Vector reference_weights, reference_scores;
  int step_count = 0;
  return run_iterations(
      problem, kind, x0, options.stop,
      [&](const Vector& x, const Point& pt, double, const Vector& g, IterationRecord& rec, Status&,
          std::string&) -> std::optional<Vector> {
        const InnerHessian inner = inner_hessian(problem, kind, pt);
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
        if (options.exact_low_rank) add_outer_terms(problem.A, inner.terms, H);
        ++step_count;
        rec.step_size = 1;
        const Vector p = newton_direction(H, g);
        return Vector(options.printed_sign ? Vector(x - p) : Vector(x + p));
      });
}

}  // namespace subevict::softmax_regression
