#include "softmax_regression/lemma_checks.hpp"

#include <cmath>
#include <limits>

#include "core/counter_rng.hpp"

namespace subevict::softmax_regression {
namespace {

constexpr std::uint64_t kBallStream = 0x5352000200000000ull;

double spectral_norm_symmetric(const Matrix& M) {
  Eigen::SelfAdjointEigenSolver<Matrix> eig(M, Eigen::EigenvaluesOnly);
  return eig.eigenvalues().cwiseAbs().maxCoeff();
}

}  // namespace

Vector ball_point(Index d, double R, std::uint64_t seed, std::uint64_t k) {
  if (k == 0) return Vector::Zero(d);
  const std::uint64_t stream = kBallStream + k;
  Vector x(d);
  for (Index j = 0; j < d; ++j) x[j] = normal(seed, stream, std::uint64_t(j));
  const double radius = R * std::pow(uniform(seed, stream, std::uint64_t(d) + 1), 1.0 / double(d));
  return x * (radius / x.norm());
}

LemmaD47Result measure_lemma_d47(const Problem& problem, const TheoremParameters& t, int samples,
                                 std::uint64_t seed) {
  LemmaD47Result r;
  r.l = t.l;
  r.samples = samples;
  for (const HypothesisCheck& h : check_hypotheses(problem, Vector::Zero(problem.d()), t)) {
    if (h.id == "w_condition") r.w_condition_holds = h.holds;
  }
  r.min_eigenvalue = std::numeric_limits<double>::infinity();
  for (int k = 0; k < samples; ++k) {
    const Vector x = ball_point(problem.d(), t.R, seed, std::uint64_t(k));
    Eigen::SelfAdjointEigenSolver<Matrix> eig(hessian(problem, LossKind::kFull, x),
                                              Eigen::EigenvaluesOnly);
    const double lo = eig.eigenvalues().minCoeff();
    if (lo < r.min_eigenvalue) {
      r.min_eigenvalue = lo;
      r.worst_x = x;
    }
  }
  r.margin = r.min_eigenvalue - t.l;
  r.conclusion_holds = r.margin >= 0;
  return r;
}

LemmaD48Result measure_lemma_d48(const Problem& problem, const TheoremParameters& t, int pairs,
                                 std::uint64_t seed) {
  LemmaD48Result r;
  r.pairs = pairs;
  r.log_bound = 2 * std::log(double(problem.n())) + 40 * t.R * t.R;
  const Index d = problem.d();
  for (int k = 0; k < pairs; ++k) {
    const Vector x = ball_point(d, t.R, seed, 2 * std::uint64_t(k) + 1);
    Vector y = ball_point(d, t.R, seed, 2 * std::uint64_t(k) + 2);
    if (k % 2 == 1) {
      y = x + 1e-3 * t.R * (y - x).normalized();
      if (y.norm() > t.R) y *= t.R / y.norm();
    }
    const double dist = (x - y).norm();
    if (!(dist > 0)) continue;
    const Matrix diff = hessian(problem, LossKind::kFull, x) - hessian(problem, LossKind::kFull, y);
    r.max_ratio = std::fmax(r.max_ratio, spectral_norm_symmetric(diff) / dist);
  }
  r.log_looseness = r.log_bound - std::log(r.max_ratio);
  r.conclusion_holds = std::log(r.max_ratio) <= r.log_bound;
  return r;
}

}  // namespace subevict::softmax_regression
