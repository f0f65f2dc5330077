#include "softmax_regression/hypotheses.hpp"

#include <cmath>
#include <sstream>

namespace subevict::softmax_regression {
namespace {

HypothesisCheck make(std::string id, std::string statement, double measured, double required,
                     std::string relation) {
  HypothesisCheck c{std::move(id), std::move(statement), measured, required, std::move(relation),
                    false};
  c.holds = c.relation == "<=" ? measured <= required : measured >= required;
  return c;
}

}  // namespace

SingularValueRange singular_value_range(const Matrix& A) {
  Eigen::SelfAdjointEigenSolver<Matrix> eig(weighted_gram(A, Vector::Ones(A.rows())),
                                            Eigen::EigenvaluesOnly);
  const Vector ev = eig.eigenvalues().cwiseMax(0.0);
  return {std::sqrt(ev.minCoeff()), std::sqrt(ev.maxCoeff())};
}

std::vector<HypothesisCheck> check_hypotheses(const Problem& p, const Vector& x0,
                                              const TheoremParameters& t,
                                              const std::optional<Vector>& x_star) {
  const SingularValueRange sv = singular_value_range(p.A);
  std::vector<HypothesisCheck> out;
  out.push_back(make("norm_A", "|A|_2 <= R", sv.max, t.R, "<="));
  out.push_back(make("R_at_least_10", "R >= 10", t.R, 10, ">="));
  out.push_back(make("b_nonnegative", "min_i b_i >= 0", p.b.minCoeff(), 0, ">="));
  out.push_back(make("b_mass", "|b|_1 <= 1", p.b.lpNorm<1>(), 1, "<="));
  out.push_back(make("w_condition", "min_i w_i^2 >= 20 + l / sigma_min(A)^2",
                     p.w.array().square().minCoeff(), 20 + t.l / (sv.min * sv.min), ">="));
  if (x_star) {
    out.push_back(make("norm_x_star", "|x*| <= R", x_star->norm(), t.R, "<="));
    const double log_m = 2 * std::log(double(p.n())) + 40 * t.R * t.R;
    out.push_back(make("start_neighbourhood",
                       "ln|x0 - x*| <= ln(0.1 l) - ln M, M = n^2 exp(40 R^2)",
                       std::log((x0 - *x_star).norm()), std::log(0.1 * t.l) - log_m, "<="));
  }
  return out;
}

std::string describe(const HypothesisCheck& c) {
  std::ostringstream s;
  s << "hypothesis " << c.id << " (" << c.statement << ") " << (c.holds ? "holds" : "violated")
    << ": measured " << c.measured << ", required " << c.relation << " " << c.required;
  return s.str();
}

}  // namespace subevict::softmax_regression
