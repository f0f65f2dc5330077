#include "proofs_checks/softmax_regression_checks.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/tolerance.hpp"
#include "proofs_checks/format.hpp"
#include "proofs_checks/function_check.hpp"
#include "softmax_regression/approximate_newton.hpp"
#include "softmax_regression/errata.hpp"
#include "softmax_regression/finite_difference.hpp"
#include "softmax_regression/hypotheses.hpp"
#include "softmax_regression/lemma_checks.hpp"
#include "softmax_regression/loss.hpp"
#include "softmax_regression/newton.hpp"

namespace subevict::proofs_checks {
namespace {

using sr::Matrix;
using sr::Vector;
using sr::Index;

constexpr double kInf = std::numeric_limits<double>::infinity();

/// `count` instances of the given size, |A| and R, seeds seed, seed + 1, ...
std::vector<sr::Instance> instances_from(Index n, Index d, double norm_A, double R, sr::Violation violation,
                                         int count, std::uint64_t seed) {
  sr::InstanceSpec spec;
  spec.n = n;
  spec.d = d;
  spec.norm_A = norm_A;
  spec.parameters.R = R;
  spec.violation = violation;
  std::vector<sr::Instance> out;
  for (int i = 0; i < count; ++i) {
    spec.seed = seed + std::uint64_t(i);
    out.push_back(sr::make_instance(spec));
  }
  return out;
}

bool hypothesis_holds(const std::vector<sr::HypothesisCheck>& checks, const std::string& id) {
  for (const sr::HypothesisCheck& h : checks)
    if (h.id == id) return h.holds;
  return false;
}

/// Eigenvalues of a symmetric matrix, ascending.
Vector eigenvalues(const Matrix& M) {
  return Eigen::SelfAdjointEigenSolver<Matrix>(M, Eigen::EigenvaluesOnly).eigenvalues();
}

/// The smallest min_i w_i^2 at which Lemma D.47's sandwich 0.9 (B + W^2) <= W^2 <= 1.1 (B + W^2)
/// holds at x by the sufficient condition 0.1 min w^2 >= max(0.9 lambda_max(B), -1.1 lambda_min(B))
/// on the symmetric part of B(x) (0 when B's eigenvalues ask for nothing).
double sandwich_w2_needed(const sr::Problem& problem, const Vector& x) {
  const sr::Point point = sr::evaluate_point(problem, x);
  const Matrix B = sr::b_matrix(point.f, problem.b).full;
  const Vector ev = eigenvalues(0.5 * (B + B.transpose()));
  return std::max({0.0, 9.0 * ev[ev.size() - 1], -11.0 * ev[0]});
}

std::string shape_text(const sr::Instance& inst) {
  return "n = " + std::to_string(inst.problem.n()) + ", d = " + std::to_string(inst.problem.d()) +
         ", R = " + format_number(inst.parameters.R);
}

}  // namespace

std::vector<sr::Instance> lemma_instances(int count, std::uint64_t seed) {
  return instances_from(40, 5, 1, 10, sr::Violation::kNone, count, seed);
}

sr::Instance lemma_d47_threshold_instance(double l_factor) {
  constexpr Index n = 40, d = 5;
  constexpr double sigma = 0.01;
  sr::Instance inst = instances_from(n, d, 1, 10, sr::Violation::kNone, 1, 0).front();
  const Eigen::HouseholderQR<Matrix> qr(inst.problem.A);
  inst.problem.A = sigma * (qr.householderQ() * Matrix::Identity(n, d));
  // 1e-9 above the threshold, so that rounding in the measured sigma_min(A) cannot put it below.
  const double w2 = (20 + l_factor * inst.parameters.l / (sigma * sigma)) * (1 + 1e-9);
  inst.problem.w = Vector::Constant(n, std::sqrt(w2));
  return inst;
}

sr::Instance lemma_d47_constant_instance(double c) {
  constexpr double sigma = 10, shift = 30;
  sr::Instance inst;
  inst.parameters.R = 10;
  inst.problem.A = sigma * Matrix::Identity(2, 2);
  inst.problem.b = Vector::Unit(2, 1);
  inst.problem.w = Vector::Constant(2, std::sqrt(c + inst.parameters.l / (sigma * sigma)));
  // z = A x0 = ln f - shift: f = (0.86436, 0.13564), u <= e^-30.
  inst.x0 = (Eigen::Array2d(0.8643567806, 0.1356432194).log() - shift).matrix() / sigma;
  return inst;
}

sr::Instance lemma_d48_tight_instance(Index n, double R) {
  sr::Instance inst;
  inst.parameters.R = R;
  inst.problem.A = Matrix::Constant(n, 1, R / std::sqrt(double(n)));
  inst.problem.b = Vector::Constant(n, 0.5 / double(n));
  inst.problem.w = Vector::Ones(n);
  inst.x0 = Vector::Zero(1);
  return inst;
}

std::vector<sr::Instance> newton_instances(int count, std::uint64_t seed) {
  return instances_from(2000, 6, 1, 10, sr::Violation::kNone, count, seed);
}

std::vector<sr::Instance> gradient_instances(int count, std::uint64_t seed) {
  return instances_from(10, 4, 3, 3, sr::Violation::kNone, count, seed);
}

std::vector<sr::Instance> update_instances(int count, std::uint64_t seed) {
  return instances_from(400, 6, 3, 1, sr::Violation::kFarStart, count, seed);
}

CheckResult check_lemma_d47(const std::vector<sr::Instance>& instances, int samples, std::uint64_t seed,
                            const HessianFunction& hessian) {
  CheckResult r;
  double min_eigenvalue = kInf, outside_margin = kInf, sandwich_looseness = kInf;
  for (const sr::Instance& inst : instances) {
    ++r.instances;
    const bool w_holds = hypothesis_holds(
        sr::check_hypotheses(inst.problem, inst.x0, inst.parameters), "w_condition");
    double lowest = kInf, scale = 1, sandwich_need = 0;
    Vector worst;
    const bool x0_inside = inst.x0.norm() <= inst.parameters.R;
    for (int k = 0; k < samples + (x0_inside ? 1 : 0); ++k) {
      const Vector x = k < samples ? sr::ball_point(inst.problem.d(), inst.parameters.R, seed, std::uint64_t(k)) : inst.x0;
      sandwich_need = std::max(sandwich_need, sandwich_w2_needed(inst.problem, x));
      const Vector ev = eigenvalues(hessian(inst.problem, x));
      scale = std::max({scale, std::fabs(ev[0]), std::fabs(ev[ev.size() - 1])});
      if (ev[0] < lowest) {
        lowest = ev[0];
        worst = x;
      }
    }
    const double margin = lowest - inst.parameters.l;
    // The sandwich's hypothesis asks w_i^2 >= 200 exp(R^2) + l / sigma_min(A)^2; its conclusion
    // needs only min w^2 >= sandwich_need at the points sampled: the e-folds between the two.
    const double sigma = sr::singular_value_range(inst.problem.A).min;
    const double log_required = std::log(200.0) + inst.parameters.R * inst.parameters.R +
                                std::log1p(inst.parameters.l / (sigma * sigma) / (200.0 * std::exp(std::min(700.0, inst.parameters.R * inst.parameters.R))));
    if (sandwich_need > 0) sandwich_looseness = std::min(sandwich_looseness, log_required - std::log(sandwich_need));
    if (!w_holds) {
      outside_margin = std::min(outside_margin, margin);
      continue;
    }
    ++r.hypotheses_held;
    min_eigenvalue = std::min(min_eigenvalue, lowest);
    r.worst_slack = std::min(r.worst_slack, margin);
    if (margin >= -Tol<double>::sum(std::size_t(inst.problem.d())) * scale) continue;
    ++r.violations;
    if (!r.counterexample) {
      r.counterexample = Counterexample{
          "instance " + shape_text(inst) + " satisfies the w condition but lambda_min(Hessian) = " +
              format_number(lowest) + " < l = " + format_number(inst.parameters.l) + " at |x| = " +
              format_number(worst.norm()),
          {{"lambda_min", lowest, "smallest eigenvalue of the Hessian"},
           {"l", inst.parameters.l, "the lemma's level"},
           {"x_norm", worst.norm(), "|x| where it was attained"}}};
    }
  }
  conclude(r);
  r.measurements = {{"instances", double(r.instances), "problems, each at " + std::to_string(samples) + " ball points"},
                    {"min_eigenvalue", min_eigenvalue, "smallest lambda_min(Hessian) where the w condition holds"},
                    {"min_margin", r.worst_slack, "smallest lambda_min - l where the w condition holds"}};
  if (r.hypotheses_held < r.instances) {
    r.measurements.push_back({"outside_hypotheses_min_margin", outside_margin,
                              "smallest lambda_min - l on instances violating the w condition"});
  }
  r.measurements.push_back({"sandwich_looseness", sandwich_looseness,
                            "smallest ln(200 exp(R^2) + l / sigma_min^2) - ln(w^2 the sandwich needs) over the "
                            "instances, e-folds (the second conclusion's hypothesis against its need)"});
  r.key_number = "min lambda_min - l " + format_number(r.worst_slack) + " (" + std::to_string(r.hypotheses_held) +
                 " of " + std::to_string(r.instances) + " instances meet the w condition)";
  r.notes = "The verdict is the first conclusion of Lemma D.47 (Hessian >= l I). The second, 0.9 (B + W^2) <= W^2 "
            "<= 1.1 (B + W^2) under w_i^2 >= 200 exp(R^2) + l / sigma_min^2, is vacuous: it holds as soon as min w^2 >= "
            "max(9 lambda_max(B), -11 lambda_min(B)) (B's symmetric part), and its hypothesis exceeds that need by "
            "sandwich_looseness e-folds at every point sampled, so no instance meeting it could fail it. "
            "What a wrong constant can change: with A = sigma Q (all singular values sigma) and w^2 = c + l/sigma^2, "
            "lambda_min = l + sigma^2 (c + lambda_min(B + diag(u))) on range(A), so the l / sigma^2 term and the level l "
            "are tight as sigma -> 0 (the threshold instance: margin ~ 20 sigma^2 = 0.002), and a weaker l term or a "
            "higher level turns the check red. The constant 20 is not tight: inf lambda_min(B) over the simplex and "
            "|b|_1 <= 1 is -0.2404 (n = 2 attains it), so the lemma holds with any constant >= 0.2404 in place of 20; "
            "the constant instance (sigma = R = 10, u ~ e^-30, f and b at the minimiser) fails the bound at c = 0.2 "
            "and meets it at c = 0.25, so replacing 20 by a constant < 0.2404 is caught, and no change to a constant "
            ">= 0.2404 can be (the statement stays true).";
  return r;
}

CheckResult check_lemma_d48(const std::vector<sr::Instance>& instances, int pairs, std::uint64_t seed,
                            const HessianFunction& hessian) {
  CheckResult r;
  Series looseness{"lemma_d48_looseness", "ln(bound) - ln(max ratio)", "R (radius, |A|_2 <= R)",
                   "ln(bound) - ln(max observed ratio) (e-folds)", {}, {}, SeriesStyle::line, {},
                   "Lemma D.48: looseness of the Hessian's Lipschitz bound by R"};
  double max_ratio_all = 0;
  for (const sr::Instance& inst : instances) {
    ++r.instances;
    const double R = inst.parameters.R;
    const Index d = inst.problem.d();
    if (sr::singular_value_range(inst.problem.A).max > R * (1 + Tol<double>::kValue)) continue;
    ++r.hypotheses_held;
    const double log_bound = 2 * std::log(double(inst.problem.n())) + 40 * R * R;
    double max_ratio = 0;
    for (int k = 0; k < pairs; ++k) {
      const Vector x = sr::ball_point(d, R, seed, 2 * std::uint64_t(k) + 1);
      Vector y = sr::ball_point(d, R, seed, 2 * std::uint64_t(k) + 2);
      if (k % 2 == 1) {  // a close neighbour, clipped to the ball
        y = x + 1e-3 * R * (y - x).normalized();
        if (y.norm() > R) y *= R / y.norm();
      }
      const double distance = (x - y).norm();
      if (!(distance > 0)) continue;
      max_ratio = std::max(max_ratio, eigenvalues(hessian(inst.problem, x) - hessian(inst.problem, y)).cwiseAbs().maxCoeff() / distance);
    }
    const double slack = log_bound - std::log(max_ratio);
    max_ratio_all = std::max(max_ratio_all, max_ratio);
    r.worst_slack = std::min(r.worst_slack, slack);
    // One point per R (the smallest looseness at that R).
    const auto same_R = std::find(looseness.x.begin(), looseness.x.end(), R);
    if (same_R == looseness.x.end()) {
      looseness.x.push_back(R);
      looseness.y.push_back(slack);
    } else {
      double& y = looseness.y[std::size_t(same_R - looseness.x.begin())];
      y = std::min(y, slack);
    }
    if (slack >= 0) continue;
    ++r.violations;
    if (!r.counterexample) {
      r.counterexample = Counterexample{
          "instance " + shape_text(inst) + ": |H(x) - H(y)| / |x - y| reached " + format_number(max_ratio) +
              " > n^2 exp(40 R^2) = exp(" + format_number(log_bound) + ")",
          {{"max_ratio", max_ratio, "largest measured Lipschitz ratio"},
           {"log_bound", log_bound, "ln(n^2 exp(40 R^2))"}}};
    }
  }
  conclude(r);
  r.measurements = {{"instances", double(r.instances), "problems, each with " + std::to_string(pairs) + " pairs"},
                    {"max_ratio", max_ratio_all, "largest |H(x) - H(y)|_2 / |x - y|"},
                    {"min_looseness_efolds", r.worst_slack, "smallest ln(bound) - ln(ratio), e-folds"}};
  r.series = {looseness};
  r.key_number = "bound loose by >= " + format_number(r.worst_slack) + " e-folds (max ratio " +
                 format_number(max_ratio_all) + ")";
  r.notes = "The bound is loose on every instance: on d = 1 with n equal rows R / sqrt(n) the Hessian is "
            "R^2 exp(R x / sqrt(n)) + const, whose Lipschitz constant on |x| <= R is R^3 exp(R^2 / sqrt(n)) / sqrt(n); "
            "at n = 1 the looseness 39 R^2 - 3 ln R is smallest at R = 0.196 (6.4 e-folds, a factor ~600). So no "
            "constant wrong by less than that factor can turn the outcome; a bound wrong by more (e.g. exp(R^2) for "
            "exp(40 R^2) at R >= 1) can. The tests pin the measured ratio and the looseness on the tight instances to "
            "the closed form instead, which catches a changed exponent (40) or a dropped n^2.";
  return r;
}

namespace {

/// The instances of the registered Theorem D.49 checks: Gaussian problems and one with a weak w.
std::vector<sr::Instance> theorem_d49_instances(const CheckContext& c) {
  std::vector<sr::Instance> instances = newton_instances(scaled_count(4, c.effort), c.seed);
  instances.push_back(instances_from(2000, 6, 1, 10, sr::Violation::kWeakW, 1, c.seed).front());
  return instances;
}

}  // namespace

SolverFunction library_algorithm4(sr::Algorithm4Form form) {
  return [form](const sr::Problem& problem, const Vector& x0, const Vector& x_star) {
    sr::ApproximateNewtonOptions options;
    options.form = form;
    options.stop.x_star = x_star;
    options.stop.max_iterations = 60;
    return sr::approximate_newton(problem, sr::LossKind::kFull, x0, options);
  };
}

namespace {

/// How one solver run approached x*: the largest per-step ratio |x_{t+1} - x*| / |x_t - x*| while
/// |x_t - x*| > 1e-11 scale (+inf when the trace has no distances or leaves the finite numbers),
/// and |x_T - x*| (+inf when not finite).
struct Approach {
  double worst_ratio = 0;
  double final_distance = 0;
  int iterations = 0;
  bool converged = false;  ///< |x_T - x*| <= 1e-8 scale
};

Approach approach(const sr::Summary& s, const Vector& x_star) {
  const double scale = std::max(1.0, x_star.norm());
  Approach a;
  for (std::size_t t = 0; t + 1 < s.trace.size(); ++t) {
    const double now = s.trace[t].distance_to_x_star, next = s.trace[t + 1].distance_to_x_star;
    if (!std::isfinite(now) || !std::isfinite(next)) a.worst_ratio = kInf;  // cannot show contraction
    if (now > 1e-11 * scale) a.worst_ratio = std::max(a.worst_ratio, next / now);
  }
  a.final_distance = (s.x - x_star).norm();
  if (!std::isfinite(a.final_distance)) a.final_distance = kInf;
  a.iterations = s.iterations();
  a.converged = a.final_distance <= 1e-8 * scale;
  return a;
}

void add_distance_series(std::vector<Series>& series, const std::string& label, const sr::Summary& s) {
  Series line{"newton_convergence", label, "iteration t", "log10 |x_t - x*|_2 (decades)", {}, {}, SeriesStyle::line, {},
              series.empty() ? "Theorem D.49: distance to x* of Algorithm 4 (literal, variant) and exact Newton" : ""};
  for (const sr::IterationRecord& rec : s.trace) {
    if (!(rec.distance_to_x_star > 0) || !std::isfinite(rec.distance_to_x_star)) continue;
    line.x.push_back(rec.iteration);
    line.y.push_back(std::log10(rec.distance_to_x_star));
  }
  series.push_back(std::move(line));
}

}  // namespace

CheckResult check_theorem_d49(const std::vector<sr::Instance>& instances, const SolverFunction& literal,
                              const SolverFunction& variant, int lipschitz_pairs, std::uint64_t seed,
                              StartConstant start_constant) {
  const bool printed = start_constant == StartConstant::printed;
  CheckResult r;
  double max_contraction = 0, max_final = 0, min_gap = kInf, max_start_ratio = 0;
  double variant_contraction = 0, variant_final = 0, outside_contraction = 0;
  int max_iterations = 0, variant_failures = 0;
  for (const sr::Instance& inst : instances) {
    ++r.instances;
    const sr::Summary exact = sr::newton(inst.problem, sr::LossKind::kFull, inst.x0);
    if (exact.status != sr::Status::kConverged) continue;  // no reference x*
    const Vector& x_star = exact.x;
    bool hypotheses = true;
    for (const sr::HypothesisCheck& h : sr::check_hypotheses(inst.problem, inst.x0, inst.parameters, x_star)) {
      if (h.id == "start_neighbourhood") {
        min_gap = std::min(min_gap, h.measured - h.required);
        hypotheses = hypotheses && (!printed || h.holds);
      } else {
        hypotheses = hypotheses && h.holds;
      }
    }
    // The start condition with the measured Lipschitz ratio M^ of the Hessian on the radius-R
    // ball in place of n^2 exp(40 R^2): M^ |x0 - x*| <= 0.1 l.
    const double lipschitz =
        sr::measure_lemma_d48(inst.problem, inst.parameters, lipschitz_pairs, seed).max_ratio;
    const double start_ratio = lipschitz * (inst.x0 - x_star).norm() / (0.1 * inst.parameters.l);
    hypotheses = hypotheses && (printed || start_ratio <= 1);
    const sr::Summary run = literal(inst.problem, inst.x0, x_star);
    const Approach a = approach(run, x_star);
    if (!hypotheses) {
      outside_contraction = std::max(outside_contraction, a.worst_ratio);
      continue;
    }
    ++r.hypotheses_held;
    max_start_ratio = std::max(max_start_ratio, start_ratio);
    max_contraction = std::max(max_contraction, a.worst_ratio);
    max_final = std::max(max_final, a.final_distance);
    max_iterations = std::max(max_iterations, a.iterations);
    r.worst_slack = std::min(r.worst_slack, std::min(1.0 - a.worst_ratio, a.converged ? 1.0 : -1.0));
    const bool first = r.series.empty();
    if (first) add_distance_series(r.series, "Algorithm 4, literal", run);
    if (variant) {
      const sr::Summary v = variant(inst.problem, inst.x0, x_star);
      const Approach b = approach(v, x_star);
      variant_contraction = std::max(variant_contraction, b.worst_ratio);
      variant_final = std::max(variant_final, b.final_distance);
      if (!(b.worst_ratio < 1 && b.converged)) ++variant_failures;
      if (first) add_distance_series(r.series, "Algorithm 4, variant (diag(u) folded, exact low rank)", v);
    }
    if (first) {
      sr::NewtonOptions exact_options;
      exact_options.stop.x_star = x_star;
      add_distance_series(r.series, "exact Newton", sr::newton(inst.problem, sr::LossKind::kFull, inst.x0, exact_options));
    }
    if (a.worst_ratio < 1 && a.converged) continue;
    ++r.violations;
    if (!r.counterexample) {
      r.counterexample = Counterexample{
          "instance " + shape_text(inst) + ": the literal Algorithm 4, after " + std::to_string(a.iterations) +
              " iterations, |x - x*| = " + format_number(a.final_distance) +
              ", worst step ratio |x_{t+1} - x*| / |x_t - x*| = " + format_number(a.worst_ratio),
          {{"final_distance", a.final_distance, "|x_T - x*|"},
           {"worst_ratio", a.worst_ratio, "largest per-step contraction ratio"}}};
    }
  }
  conclude(r);
  r.measurements = {{"instances", double(r.instances), "problems"},
                    {"max_contraction", max_contraction,
                     "literal Algorithm 4: largest |x_{t+1} - x*| / |x_t - x*| over the steps"},
                    {"max_final_distance", max_final, "literal Algorithm 4: largest |x_T - x*|"},
                    {"max_iterations", double(max_iterations), "literal Algorithm 4: most iterations to stop"},
                    {"max_start_ratio", max_start_ratio,
                     "largest M^ |x0 - x*| / (0.1 l), M^ the measured Lipschitz ratio of the Hessian (<= 1: start "
                     "in the measured neighbourhood)"},
                    {"start_neighbourhood_gap", min_gap,
                     "ln|x0 - x*| - (ln(0.1 l) - ln M): e-folds by which the printed start condition is missed"}};
  if (variant) {
    r.measurements.push_back({"variant_max_contraction", variant_contraction,
                              "variant (diag(u) folded into D, exact low rank): largest per-step ratio"});
    r.measurements.push_back({"variant_max_final_distance", variant_final, "variant: largest |x_T - x*|"});
    r.measurements.push_back({"variant_failures", double(variant_failures),
                              "instances where the variant did not contract at every step and converge"});
  }
  if (r.hypotheses_held < r.instances) {
    r.measurements.push_back({"outside_hypotheses_max_contraction", outside_contraction,
                              "literal Algorithm 4: largest per-step ratio on instances violating a hypothesis"});
  }
  r.key_number = printed ? "printed start condition missed by >= " + format_number(min_gap) + " e-folds (" +
                               std::to_string(r.hypotheses_held) + " of " + std::to_string(r.instances) +
                               " instances meet the hypotheses)"
                         : "literal: max contraction " + format_number(max_contraction) + ", max |x_T - x*| " +
                               format_number(max_final) +
                               (variant ? "; variant: max contraction " + format_number(variant_contraction)
                                        : std::string());
  r.notes = printed
                ? "The verdict is the literal Algorithm 4 (D = B_diag + W^2, H~ = A^T D~ A, corrected sign) under the "
                  "printed hypotheses. The printed start condition M |x0 - x*| <= 0.1 l with M = n^2 exp(40 R^2) "
                  "asks for |x0 - x*| below e^-4000, which no double meets (start_neighbourhood_gap, in e-folds): "
                  "the theorem's hypotheses are not met on any instance. The same runs with M replaced by the "
                  "measured Lipschitz ratio are h2o.theorem_d49_measured_m, a measurement."
                : "The literal Algorithm 4 (D = B_diag + W^2, H~ = A^T D~ A, corrected sign) with the start "
                  "condition's M replaced by the Lipschitz ratio measured on the radius-R ball (a lower estimate of "
                  "the true constant), which x0 = 0 meets; the printed M (start_neighbourhood_gap) cannot be met. "
                  "The variant is measured on the same starts and does not enter the verdict.";
  return r;
}

CheckResult check_erratum_d44_gradient(const std::vector<sr::Instance>& instances, int points, std::uint64_t seed,
                                       const GradientFunction& printed, const GradientFunction& corrected) {
  CheckResult r;
  const double tol = Tol<double>::grad();
  double corrected_worst = 0, printed_best = kInf;
  for (const sr::Instance& inst : instances) {
    const sr::Problem& p = inst.problem;
    const auto L = [&](const Vector& x) { return sr::loss(p, sr::LossKind::kExp, x); };
    for (int k = 1; k <= points; ++k) {
      ++r.instances;
      const Vector x = sr::ball_point(p.d(), inst.parameters.R, seed, std::uint64_t(k));
      const sr::Point pt = sr::evaluate_point(p, x);
      const double gap = 2 * std::fabs(pt.c.dot(pt.f)) * (p.A.transpose() * pt.f).cwiseAbs().maxCoeff();
      if (!(gap > 1e3 * tol)) continue;
      ++r.hypotheses_held;
      const sr::DerivativeCheck good = sr::check_gradient(L, corrected(p, x), x, tol);
      const sr::DerivativeCheck bad = sr::check_gradient(L, printed(p, x), x, tol);
      const double good_ratio = good.max_abs_error / (good.tolerance * good.scale);
      const double bad_ratio = bad.max_abs_error / (bad.tolerance * bad.scale);
      corrected_worst = std::max(corrected_worst, good_ratio);
      printed_best = std::min(printed_best, bad_ratio);
      r.worst_slack = std::min({r.worst_slack, 1 - good_ratio, bad_ratio - 1});
      if (good.passed && !bad.passed) continue;
      ++r.violations;
      if (!r.counterexample) {
        r.counterexample = Counterexample{
            "at a point of instance " + shape_text(inst) + " the corrected gradient's finite-difference error is " +
                format_number(good_ratio) + " x tolerance (must be <= 1) and the printed one's " +
                format_number(bad_ratio) + " x tolerance (must be > 1)",
            {{"corrected_error_ratio", good_ratio, "corrected form: error / (tolerance x scale)"},
             {"printed_error_ratio", bad_ratio, "printed form: error / (tolerance x scale)"}}};
      }
    }
  }
  conclude(r);
  r.measurements = {{"points", double(r.instances), "points evaluated"},
                    {"resolvable_points", double(r.hypotheses_held), "points where the two forms differ measurably"},
                    {"corrected_max_error_ratio", corrected_worst, "corrected form: largest error / (tolerance x scale)"},
                    {"printed_min_error_ratio", printed_best, "printed form: smallest error / (tolerance x scale)"}};
  r.key_number = "printed error >= " + format_number(printed_best) + " x tol, corrected <= " +
                 format_number(corrected_worst) + " x tol";
  return r;
}

CheckResult check_erratum_alg4_sign(const std::vector<sr::Instance>& instances, const UpdateFunction& printed,
                                    const UpdateFunction& corrected) {
  constexpr int kMaxSteps = 50;
  constexpr sr::LossKind kFull = sr::LossKind::kFull;
  CheckResult r;
  double min_increase = kInf, max_first_change = -kInf;
  int most_steps = 0;
  for (const sr::Instance& inst : instances) {
    const sr::Problem& p = inst.problem;
    ++r.instances;
    ++r.hypotheses_held;
    const Vector g0 = sr::gradient(p, kFull, inst.x0);
    const Matrix H0 = sr::hessian(p, kFull, inst.x0);
    const double L0 = sr::loss(p, kFull, inst.x0);
    const double increase = sr::loss(p, kFull, printed(inst.x0, H0, g0)) - L0;
    min_increase = std::min(min_increase, std::isnan(increase) ? -kInf : increase);
    Series corrected_series{"algorithm4_sign", "corrected x - H^-1 g", "iteration t", "loss L(x_t)", {0}, {L0},
                            SeriesStyle::line, {}, "Algorithm 4's update sign: loss under the printed and the corrected step"};
    Vector x = inst.x0;
    double first_change = 0;
    int steps = 0;
    bool converged = false;
    const double target = 1e-8 * std::max(1.0, g0.norm());
    for (; steps <= kMaxSteps; ++steps) {
      const Vector g = sr::gradient(p, kFull, x);
      if (g.norm() <= target) {
        converged = true;
        break;
      }
      if (steps == kMaxSteps || !g.allFinite()) break;
      x = corrected(x, sr::hessian(p, kFull, x), g);
      const double L = sr::loss(p, kFull, x);
      if (steps == 0) first_change = L - L0;
      corrected_series.x.push_back(steps + 1);
      corrected_series.y.push_back(L);
    }
    most_steps = std::max(most_steps, steps);
    max_first_change = std::max(max_first_change, first_change);
    r.worst_slack = std::min({r.worst_slack, std::isnan(increase) ? -kInf : increase, -first_change});
    if (r.series.empty()) {
      Series printed_series{"algorithm4_sign", "printed x + H^-1 g", "iteration t", "loss L(x_t)", {0}, {L0}};
      Vector y = inst.x0;
      for (int t = 1; t <= 3; ++t) {
        y = printed(y, sr::hessian(p, kFull, y), sr::gradient(p, kFull, y));
        const double L = sr::loss(p, kFull, y);
        if (!std::isfinite(L)) break;
        printed_series.x.push_back(t);
        printed_series.y.push_back(L);
      }
      r.series = {corrected_series, printed_series};
    }
    if (increase > 0 && first_change < 0 && converged) continue;
    ++r.violations;
    if (!r.counterexample) {
      r.counterexample = Counterexample{
          "instance " + shape_text(inst) + ": the printed step changed L by " + format_number(increase) +
              " (must increase), the corrected first step by " + format_number(first_change) +
              " (must decrease), corrected " + (converged ? "converged" : "did not converge") + " in " +
              std::to_string(steps) + " steps",
          {{"printed_change", increase, "L(x0 + H^-1 g) - L(x0)"},
           {"corrected_change", first_change, "L(x0 - H^-1 g) - L(x0)"},
           {"steps", double(steps), "corrected steps taken"}}};
    }
  }
  conclude(r);
  r.measurements = {{"instances", double(r.instances), "problems started far from x*"},
                    {"printed_min_loss_increase", min_increase, "smallest L(x0 + H^-1 g) - L(x0) (printed; > 0 shows it ascends)"},
                    {"corrected_max_first_change", max_first_change, "largest L(x1) - L(x0) of the corrected rule (< 0)"},
                    {"corrected_max_steps", double(most_steps), "most corrected steps to |grad L| <= 1e-8 |grad L(x0)|"}};
  r.key_number = "printed step raises L by >= " + format_number(min_increase) + "; corrected converges in <= " +
                 std::to_string(most_steps) + " steps";
  return r;
}

std::vector<std::unique_ptr<Check>> softmax_regression_checks() {
  const auto library_hessian = [](const sr::Problem& p, const Vector& x) {
    return sr::hessian(p, sr::LossKind::kFull, x);
  };
  const std::string source = "proofs_checks/softmax_regression_checks.cpp";
  std::vector<std::unique_ptr<Check>> checks;
  checks.push_back(make_check(
      {"h2o.lemma_d47", "H2O, Lemma D.47",
       "the Hessian of the sparse softmax regression loss is at least l I when the regularisation weights are large enough",
       "min_i w_i^2 >= 20 + l / sigma_min(A)^2; |x| <= R",
       "lambda_min(grad^2 L(x)) >= l at every sampled x and at x0", {"random small (Gaussian A, n = 40, d = 5, R = 10)", "adversarial (weak w)",
       "tight (A = 0.01 Q, w^2 at the threshold)", "adversarial (n = d = 2, the minimiser of lambda_min(B), w^2 = 0.2 + l / sigma^2)"},
       source},
      [library_hessian](const CheckContext& c) {
        std::vector<sr::Instance> instances = lemma_instances(scaled_count(8, c.effort), c.seed);
        instances.push_back(instances_from(40, 5, 1, 10, sr::Violation::kWeakW, 1, c.seed).front());
        instances.push_back(lemma_d47_threshold_instance(1));
        instances.push_back(lemma_d47_constant_instance(0.2));
        return check_lemma_d47(instances, scaled_count(40, c.effort), c.seed, library_hessian);
      }));
  checks.push_back(make_check(
      {"h2o.lemma_d48", "H2O, Lemma D.48",
       "how loose the Lipschitz constant n^2 exp(40 R^2) of the loss's Hessian is: the largest ratio "
       "|grad^2 L(x) - grad^2 L(y)| / |x - y| observed against it. The ratio is at most about |A|^3 exp(|A| R) plus a "
       "constant, e-folds below the printed bound for every n and R, so the bound cannot fail: a measurement of its "
       "looseness, not a verdict",
       "|A|, |x|, |y| <= R", "ln(bound) - ln(largest observed ratio) per instance (e-folds), and the pairs where "
       "the ratio exceeded the bound (a Hessian implementation error)",
       {"random small (n = 40, d = 5, R = |A| in {0.5, 1, 2, 3})", "tight (d = 1, n in {1, 2}, R = 0.2)"}, source,
       Kind::measurement},
      [library_hessian](const CheckContext& c) {
        std::vector<sr::Instance> instances;
        for (const double R : {0.5, 1.0, 2.0, 3.0}) {
          instances.push_back(instances_from(40, 5, R, R, sr::Violation::kNone, 1, c.seed).front());
        }
        instances.push_back(lemma_d48_tight_instance(1, 0.2));
        instances.push_back(lemma_d48_tight_instance(2, 0.2));
        return verdict_as_measurement(check_lemma_d48(instances, scaled_count(40, c.effort), c.seed, library_hessian));
      }));
  checks.push_back(make_check(
      {"h2o.theorem_d49", "H2O, Theorem D.49 and Algorithm 4",
       "the literal Algorithm 4 (D = B_diag + W^2, H~ = A^T D~ A with D~ a leverage-score row sample, "
       "x_{t+1} = x_t - H~^-1 grad L) converges linearly to the minimiser",
       "|A| <= R, R >= 10, b >= 0, |b|_1 <= 1, w condition, |x*| <= R, M |x0 - x*| <= 0.1 l with the printed "
       "M = n^2 exp(40 R^2) (|x0 - x*| below e^-4000: no double start meets it)",
       "|x_{t+1} - x*| < |x_t - x*| at every step and |x_T - x*| <= 1e-8 max(1, |x*|), x* by exact Newton",
       {"random (Gaussian A, n = 2000, d = 6)", "adversarial (weak w)"}, source},
      [](const CheckContext& c) {
        return check_theorem_d49(theorem_d49_instances(c), library_algorithm4(sr::Algorithm4Form::kLiteral), nullptr,
                                 scaled_count(20, c.effort), c.seed, StartConstant::printed);
      }));
  checks.push_back(make_check(
      {"h2o.theorem_d49_measured_m", "H2O, Theorem D.49 and Algorithm 4 (start constant measured)",
       "how the literal Algorithm 4 converges from starts inside the neighbourhood that the measured Lipschitz "
       "ratio M^ of the Hessian gives in place of the printed M: M^ is fitted on the run, so the statement is "
       "a measurement, not the theorem",
       "|A| <= R, R >= 10, b >= 0, |b|_1 <= 1, w condition, |x*| <= R, M^ |x0 - x*| <= 0.1 l",
       "the literal solver's largest per-step contraction and final distance, the instances inside the measured "
       "neighbourhood and those where it did not contract or converge; the variant (diag(u) folded into D, exact "
       "low rank) alongside",
       {"random (Gaussian A, n = 2000, d = 6)", "adversarial (weak w)"}, source, Kind::measurement},
      [](const CheckContext& c) {
        return verdict_as_measurement(check_theorem_d49(
            theorem_d49_instances(c), library_algorithm4(sr::Algorithm4Form::kLiteral),
            library_algorithm4(sr::Algorithm4Form::kFoldedDiagonalExactLowRank), scaled_count(20, c.effort), c.seed,
            StartConstant::measured));
      }));
  checks.push_back(make_check(
      {"h2o.erratum_d44_gradient", "H2O, Lemma D.44 part 5 (theory.md §9 item 1)",
       "the printed gradient of L_exp has a wrong sign on its first term; the corrected A^T (diag(f) - f f^T)(f - b) is right",
       "points where the two forms differ by more than finite differences resolve",
       "corrected form passes the finite-difference check, printed form fails it",
       {"random small (n = 10, d = 4, |A| = 3)"}, source, Kind::erratum},
      [](const CheckContext& c) {
        return check_erratum_d44_gradient(
            gradient_instances(scaled_count(6, c.effort), c.seed), 10, c.seed, sr::printed_lemma_d44_gradient,
            [](const sr::Problem& p, const Vector& x) { return sr::gradient(p, sr::LossKind::kExp, x); });
      }));
  checks.push_back(make_check(
      {"h2o.erratum_alg4_sign", "H2O, Algorithm 4 (theory.md §9 item 2)",
       "the printed update x + H^-1 g ascends; the Newton step is x - H^-1 g",
       "full loss, positive definite Hessian, start far from x*",
       "printed step increases L; corrected steps decrease L and converge",
       {"random (n = 400, d = 6, |A| = 3, x0 on the radius-R sphere)"}, source, Kind::erratum},
      [](const CheckContext& c) {
        return check_erratum_alg4_sign(update_instances(scaled_count(4, c.effort), c.seed),
                                       sr::printed_algorithm4_update, sr::corrected_algorithm4_update);
      }));
  return checks;
}

}  // namespace subevict::proofs_checks
