#include "proofs_checks/dynamic_lemmas.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "core/tolerance.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "proofs_checks/format.hpp"
#include "proofs_checks/function_check.hpp"

namespace subevict::proofs_checks {
namespace {

constexpr int kSmallTokens = 12;     // the budget is sized for this length
constexpr int kMinSmallTokens = 10;  // small heads have 10..14 tokens
constexpr int kMaxSmallTokens = 14;
constexpr int kRandomDim = 8;

/// Both families along the policy's trajectory on one head.
struct Trajectory {
  const SmallHead* head;
  DynamicFamily tracked;
  DynamicFamily exact;
};

std::vector<Trajectory> trajectories(const TrajectorySetup& setup) {
  std::vector<Trajectory> out;
  for (std::size_t c = 0; c < setup.heads.size(); ++c) {
    const SmallHead& head = setup.heads[c];
    std::vector<std::vector<int>> caches = policy_caches(head, setup.policy, setup.budget, setup.seed + c);
    out.push_back({&head, DynamicFamily(head, caches, setup.h, Knowledge::kTracked),
                   DynamicFamily(head, std::move(caches), setup.h, Knowledge::kExact)});
  }
  return out;
}

enum class Direction { kCorrected, kPrinted };

/// One step of Lemma D.29/D.30 with the constants measured up to it.
struct LemmaStep {
  int step = 0;
  bool hypotheses = false;
  double lhs = 0, rhs = 0, theta = 0, gamma = 0, epsilon0 = 0, opt_next = 0;
};

std::vector<LemmaStep> lemma_steps(const ConditionTrace& c, Direction direction, bool subtract_epsilon,
                                   const LemmaConstants& constants) {
  std::vector<LemmaStep> steps;
  const int n = int(c.opt.size());
  double theta = 0, gamma = 0, epsilon0 = 0;
  bool monotone = true;
  for (int i = 0; i + 1 < n; ++i) {
    const auto u = std::size_t(i);
    theta = std::max(theta, c.theta[u]);
    // Printed D.28 relates opt_{j} to opt_{j−1}; the conclusion reaches opt_{i+1}, so j ≤ i + 1.
    gamma = std::max(gamma, direction == Direction::kCorrected ? c.gamma[u] : c.gamma_printed[u + 1]);
    epsilon0 = std::max(epsilon0, c.epsilon0[u]);
    monotone = monotone && c.monotone[u] != 0;
    LemmaStep s;
    s.step = i;
    s.hypotheses = monotone && theta < 1.0 && gamma < 1.0;
    s.theta = theta;
    s.gamma = gamma;
    s.epsilon0 = subtract_epsilon ? epsilon0 : 0.0;
    s.opt_next = c.opt[u + 1];
    s.rhs = lemma_bound(i, theta, gamma, s.epsilon0, s.opt_next, constants);
    s.lhs = c.next_value[u];
    steps.push_back(s);
  }
  return steps;
}

bool fails(double lhs, double rhs, int n) {
  return lhs < rhs - Tol<double>::sum(std::size_t(n)) * std::max(1.0, std::abs(rhs));
}

/// Tallies of one lemma reading over all trajectories.
struct LemmaTally {
  long long steps = 0, hypotheses = 0, violations = 0;
  /// Steps whose bound is <= 0: the monotone families here have f >= 0 (f(empty) = 0), so there the
  /// conclusion could not fail.
  long long vacuous = 0;
  double worst_slack = std::numeric_limits<double>::infinity();
  double max_theta = 0, max_gamma = 0, max_epsilon0 = 0;
  double rhs_over_opt_sum = 0;  // how much of opt_{i+1} the bound asks for, averaged
  std::optional<Counterexample> counterexample;
  int counterexample_step = std::numeric_limits<int>::max();
};

Counterexample describe(const Trajectory& t, const DynamicFamily& f, const LemmaStep& s) {
  const int m = s.step + 1;  // 1-based
  std::ostringstream out;
  out << t.head->label << ", 1-based step " << m << " (0-based " << s.step << "): f_{S_" << m << "," << m
      << "}(S_" << m + 1 << ") = " << format_number(s.lhs) << " < " << format_number(s.rhs)
      << " = (1-1/e)(1-theta)^" << m + 1 << "(1-gamma)^" << m + 1 << " opt_" << m + 1;
  if (s.epsilon0 > 0) out << " - " << m + 1 << " eps0";
  out << " with theta = " << format_number(s.theta) << ", gamma = " << format_number(s.gamma)
      << ", eps0 = " << format_number(s.epsilon0) << ", opt_" << m + 1 << " = " << format_number(s.opt_next)
      << "; S_" << m << " = " << set_text(f.cache(s.step)) << ", S_" << m + 1 << " = "
      << set_text(f.cache(s.step + 1)) << " (0-based tokens)";
  return {out.str(),
          {{"lhs", s.lhs, "f_{S_i,i}(S_{i+1})"},
           {"rhs", s.rhs, "the lemma's lower bound"},
           {"theta", s.theta, "measured theta up to the step"},
           {"gamma", s.gamma, "measured gamma up to the step"},
           {"epsilon0", s.epsilon0, "measured eps0 up to the step"},
           {"opt_next", s.opt_next, "opt_{i+1} (Def D.27, exhaustive)"}}};
}

void tally(LemmaTally& tally, const Trajectory& t, const DynamicFamily& f, const std::vector<LemmaStep>& steps) {
  const int n = t.head->tokens();
  for (const LemmaStep& s : steps) {
    ++tally.steps;
    if (!s.hypotheses) continue;
    ++tally.hypotheses;
    tally.max_theta = std::max(tally.max_theta, s.theta);
    tally.max_gamma = std::max(tally.max_gamma, s.gamma);
    tally.max_epsilon0 = std::max(tally.max_epsilon0, s.epsilon0);
    tally.worst_slack = std::min(tally.worst_slack, s.lhs - s.rhs);
    if (s.opt_next > 0) tally.rhs_over_opt_sum += std::max(0.0, s.rhs) / s.opt_next;
    if (s.rhs <= 0.0 && !fails(s.lhs, s.rhs, n)) ++tally.vacuous;
    if (fails(s.lhs, s.rhs, n)) {
      ++tally.violations;
      if (s.step < tally.counterexample_step) {
        tally.counterexample_step = s.step;
        tally.counterexample = describe(t, f, s);
      }
    }
  }
}

void fill(CheckResult& result, const LemmaTally& t) {
  result.instances = t.steps;
  result.hypotheses_held = t.hypotheses;
  result.violations = t.violations;
  result.worst_slack = t.worst_slack;
  result.counterexample = t.counterexample;
  conclude(result);
}

void add_lemma_measurements(CheckResult& result, const LemmaTally& t) {
  result.measurements.push_back({"min_slack", t.worst_slack, "smallest lhs - rhs over steps whose hypotheses held"});
  result.measurements.push_back({"theta_max", t.max_theta, "largest measured theta"});
  result.measurements.push_back({"gamma_max", t.max_gamma, "largest measured gamma"});
  result.measurements.push_back({"epsilon0_max", t.max_epsilon0, "largest measured eps0 (0 in the exact case)"});
  result.measurements.push_back({"mean_bound_over_opt",
                                 t.hypotheses > 0 ? t.rhs_over_opt_sum / double(t.hypotheses) : 0.0,
                                 "mean of max(0, rhs) / opt_{i+1}: the fraction of opt the bound guarantees"});
}

std::string key_text(const CheckResult& r) {
  std::ostringstream out;
  out << r.violations << " of " << r.hypotheses_held << " steps violate, min slack " << format_number(r.worst_slack);
  return out.str();
}

std::string setup_notes(const TrajectorySetup& setup) {
  int shortest = 0, longest = 0;
  for (const SmallHead& h : setup.heads) {
    shortest = shortest == 0 ? h.tokens() : std::min(shortest, h.tokens());
    longest = std::max(longest, h.tokens());
  }
  return std::to_string(setup.heads.size()) + " heads of " + std::to_string(shortest) + "-" + std::to_string(longest) +
         " tokens, budget k = " + std::to_string(setup.budget) + ", h(z) = " + setup.h_name +
         "; 0-based steps, theory.md's 1-based step is one more. ";
}

}  // namespace

TrajectorySetup default_trajectory_setup(const CheckContext& context) {
  const int count = scaled_count(16, context.effort);
  TrajectorySetup setup;
  const std::vector<SmallHead> cut =
      heads_from_workload(context_workload(context, "dynamic checks"), kMaxSmallTokens, count, context.layers);
  for (int c = 0; c < count; ++c) {
    const SmallHead& h = cut[std::size_t(c)];
    const int n = kMinSmallTokens + c % (kMaxSmallTokens - kMinSmallTokens + 1);
    setup.heads.push_back(make_small_head(h.q.topRows(n), h.k.topRows(n), h.v.topRows(n), h.scale,
                                          h.label.substr(0, h.label.find(',')) + ", first " + std::to_string(n) + " tokens"));
    for (SmallHead& r : random_heads(n, kRandomDim, 1, context.seed + std::uint64_t(c))) setup.heads.push_back(std::move(r));
  }
  setup.budget = small_budget(context.budget_ratio, kSmallTokens);
  setup.policy = [] { return greedy::make_policy("h2o-alg2-sqrt"); };
  setup.h = transform_of(greedy::Concave::kSqrt);
  setup.h_name = "sqrt(z+1)";
  setup.seed = context.seed;
  return setup;
}

CheckResult check_universal_conditions(const TrajectorySetup& setup) {
  CheckResult result;
  double theta[2] = {0, 0}, gamma[2] = {0, 0}, gamma_full = 0, gamma_printed = 0, epsilon0 = 0, epsilon0_rel = 0;
  long long monotone_failures = 0, steps_without_constants = 0;
  std::string first_without_constants;
  for (const Trajectory& t : trajectories(setup)) {
    const ConditionTrace tracked = measure_conditions(t.tracked, nullptr, setup.budget);
    const ConditionTrace exact = measure_conditions(t.exact, &t.tracked, setup.budget);
    const int n = t.head->tokens();
    for (int i = 0; i < n; ++i) {
      const auto u = std::size_t(i);
      ++result.instances;
      const ConditionTrace* both[2] = {&tracked, &exact};
      bool ok = true;
      for (int f = 0; f < 2; ++f) {
        theta[f] = std::max(theta[f], both[f]->theta[u]);
        gamma[f] = std::max(gamma[f], both[f]->gamma[u]);
        ok = ok && both[f]->monotone[u] != 0 && both[f]->theta[u] < 1.0 && both[f]->gamma[u] < 1.0;
        if (both[f]->monotone[u] == 0) ++monotone_failures;
      }
      if (i >= setup.budget) gamma_full = std::max(gamma_full, tracked.gamma[u]);
      gamma_printed = std::max(gamma_printed, tracked.gamma_printed[u]);
      epsilon0 = std::max(epsilon0, exact.epsilon0[u]);
      if (exact.opt[u] > 0) epsilon0_rel = std::max(epsilon0_rel, exact.epsilon0[u] / exact.opt[u]);
      if (!ok) {
        ++steps_without_constants;
        if (first_without_constants.empty()) {
          first_without_constants =
              " First such step: " + t.head->label + ", 0-based step " + std::to_string(i) + " (monotone tracked/exact " +
              std::to_string(int(tracked.monotone[u])) + "/" + std::to_string(int(exact.monotone[u])) + ", theta_i " +
              format_number(tracked.theta[u]) + "/" + format_number(exact.theta[u]) + ", gamma_i " +
              format_number(tracked.gamma[u]) + "/" + format_number(exact.gamma[u]) + ").";
        }
      }
    }
  }
  conclude_measurement(result);
  result.measurements = {
      {"theta_tracked", theta[0], "max theta (D.24) of the tracked family along the trajectories"},
      {"gamma_tracked", gamma[0], "max gamma (D.28, corrected direction) of the tracked family"},
      {"gamma_tracked_after_fill", gamma_full, "max gamma over steps i >= k (cache full)"},
      {"gamma_printed_tracked", gamma_printed, "max gamma in the printed direction opt_i >= (1-gamma) opt_{i-1}"},
      {"theta_exact", theta[1], "max theta of the exact (full-knowledge) family"},
      {"gamma_exact", gamma[1], "max gamma of the exact family"},
      {"epsilon0", epsilon0, "max eps0 with f_exact >= f_tracked - eps0 on the candidate sets"},
      {"epsilon0_relative", epsilon0_rel, "max eps0_i / opt_i"},
      {"monotonicity_failures", double(monotone_failures), "steps where f_{S_i,i} decreased on adding a token"},
      {"steps_without_constants", double(steps_without_constants),
       "steps where no theta, gamma in [0, 1) exist (not monotone, theta_i >= 1 or gamma_i >= 1)"}};
  result.key_number = "theta " + format_number(theta[0]) + ", gamma " + format_number(gamma[0]) + ", eps0 " +
                      format_number(epsilon0) + " (" + std::to_string(result.instances) + " steps)";
  result.notes = setup_notes(setup) +
                 "A measurement: theta, gamma, eps0 are the smallest constants that make the conditions hold, fitted "
                 "to the same trajectories, so they cannot fail; Lemmas D.29/D.30 and Theorem D.32 test what the "
                 "constants imply. gamma is large because opt_i grows with the accumulated attention (by about one "
                 "row of mass per step), so condition 2 holds only with gamma far from 0." +
                 first_without_constants;
  return result;
}

namespace {

CheckResult lemma_check(const TrajectorySetup& setup, bool approximate, const LemmaConstants& constants) {
  LemmaTally t;
  for (const Trajectory& tr : trajectories(setup)) {
    const DynamicFamily& f = approximate ? tr.exact : tr.tracked;
    const ConditionTrace c = measure_conditions(f, approximate ? &tr.tracked : nullptr, setup.budget);
    tally(t, tr, f, lemma_steps(c, Direction::kCorrected, approximate, constants));
  }
  CheckResult result;
  fill(result, t);
  result.vacuous = t.vacuous;  // a claim's count (fill also serves the erratum, which has none)
  conclude(result);
  add_lemma_measurements(result, t);
  result.measurements.push_back({"vacuous_steps", double(t.vacuous),
                                 "steps whose bound is <= 0, where f >= 0 cannot fail it"});
  result.key_number = key_text(result) + ", gamma " + format_number(t.max_gamma);
  result.notes = setup_notes(setup) +
                 "Constants are the measured ones up to each step. The bound is weak on these trajectories: opt "
                 "grows with the accumulated attention, so gamma is large and (1-gamma)^(i+1) shrinks the bound "
                 "(mean_bound_over_opt).";
  return result;
}

}  // namespace

double lemma_bound(int step, double theta, double gamma, double epsilon0, double opt_next,
                   const LemmaConstants& constants) {
  const double power = double(step + constants.step_offset);
  return constants.factor * std::pow(1.0 - theta, power) * std::pow(1.0 - gamma, power) * opt_next - power * epsilon0;
}

CheckResult check_lemma_d29(const TrajectorySetup& setup, const LemmaConstants& constants) {
  return lemma_check(setup, false, constants);
}

CheckResult check_lemma_d30(const TrajectorySetup& setup, const LemmaConstants& constants) {
  return lemma_check(setup, true, constants);
}

CheckResult check_theorem_d32(const TrajectorySetup& setup, double factor) {
  CheckResult result;
  double alpha_realized = 0, beta_realized = 0, alpha_theorem = 0, beta_theorem = 0, theta = 0, gamma = 0, eps = 0;
  double min_ratio = std::numeric_limits<double>::infinity();
  long long heads_met = 0;
  for (const Trajectory& tr : trajectories(setup)) {
    const ConditionTrace c = measure_conditions(tr.exact, &tr.tracked, setup.budget);
    const int n = tr.head->tokens();
    double th = 0, ga = 0, ep = 0;
    bool monotone = true;
    for (int i = 0; i < n; ++i) {
      const auto u = std::size_t(i);
      th = std::max(th, c.theta[u]);
      ga = std::max(ga, c.gamma[u]);
      ep = std::max(ep, c.epsilon0[u]);
      monotone = monotone && c.monotone[u] != 0;
      alpha_realized = std::max(alpha_realized, smallest_shrink(c.own_value[u], factor * c.opt[u]));
      if (c.opt[u] > 0) min_ratio = std::min(min_ratio, c.own_value[u] / c.opt[u]);
      beta_realized = std::max(beta_realized, factor * c.opt[u] - c.own_value[u]);
    }
    theta = std::max(theta, th);
    gamma = std::max(gamma, ga);
    eps = std::max(eps, ep);
    const double alpha = 10.0 * n * std::max(th, ga), beta = 10.0 * n * ep;
    alpha_theorem = std::max(alpha_theorem, alpha);
    beta_theorem = std::max(beta_theorem, beta);
    const bool met = monotone && alpha < 1.0;
    heads_met += met ? 1 : 0;
    for (int i = 0; i < n; ++i) {
      const auto u = std::size_t(i);
      ++result.instances;
      if (!met) continue;
      ++result.hypotheses_held;
      const double rhs = factor * (1.0 - alpha) * c.opt[u] - beta;
      result.worst_slack = std::min(result.worst_slack, c.own_value[u] - rhs);
      if (fails(c.own_value[u], rhs, n)) {
        ++result.violations;
        if (!result.counterexample) {
          result.counterexample = Counterexample{
              tr.head->label + ", 0-based step " + std::to_string(i) + ": f(S~_i) = " +
                  format_number(c.own_value[u]) + " < " + format_number(rhs) + " = (1-1/e)(1-alpha) opt_i - beta with alpha = " +
                  format_number(alpha) + ", beta = " + format_number(beta) + ", opt_i = " + format_number(c.opt[u]) +
                  ", S~_i = " + set_text(tr.exact.cache(i)),
              {{"lhs", c.own_value[u], "f(S~_i), exact family"},
               {"rhs", rhs, "(1-1/e)(1-alpha) opt_i - beta"},
               {"alpha", alpha, "10 n max(theta, gamma)"},
               {"beta", beta, "10 n eps0"}}};
        }
      }
    }
  }
  conclude(result);
  result.measurements = {
      {"alpha_realized", alpha_realized, "smallest alpha (beta = 0) the trajectories satisfy"},
      {"beta_realized", std::max(0.0, beta_realized), "smallest beta (alpha = 0) the trajectories satisfy"},
      {"min_ratio_to_opt", min_ratio, "smallest f(S~_i) / opt_i over the steps"},
      {"alpha_from_theorem", alpha_theorem, "10 n max(theta, gamma) with the measured theta, gamma (largest head)"},
      {"beta_from_theorem", beta_theorem, "10 n eps0 with the measured eps0 (largest head)"},
      {"theta", theta, "max measured theta (exact family)"},
      {"gamma", gamma, "max measured gamma (exact family)"},
      {"epsilon0", eps, "max measured eps0"},
      {"heads_meeting_hypotheses", double(heads_met), "heads with alpha = 10 n max(theta, gamma) < 1"}};
  result.key_number = "realized alpha " + format_number(alpha_realized) + " / beta " +
                      format_number(std::max(0.0, beta_realized)) + "; theorem needs alpha " +
                      format_number(alpha_theorem);
  result.notes = setup_notes(setup) +
                 "The theorem's hypotheses are read with the measured constants (alpha = 10 n max(theta, gamma), "
                 "beta = 10 n eps0, per head); they are met only when alpha < 1. The realized alpha, beta are the "
                 "smallest constants the trajectories themselves satisfy.";
  return result;
}

CheckResult check_erratum_d28_direction(const TrajectorySetup& setup, const LemmaConstants& constants) {
  LemmaTally printed, corrected;
  for (const Trajectory& tr : trajectories(setup)) {
    const ConditionTrace c = measure_conditions(tr.tracked, nullptr, setup.budget);
    tally(printed, tr, tr.tracked, lemma_steps(c, Direction::kPrinted, false, constants));
    tally(corrected, tr, tr.tracked, lemma_steps(c, Direction::kCorrected, false, constants));
  }
  CheckResult result;
  fill(result, corrected);
  if (corrected.violations == 0 && corrected.hypotheses > 0) {
    result.outcome = printed.violations > 0 ? Outcome::held : Outcome::inconclusive;
    result.counterexample = printed.counterexample;  // the printed form's failure
  }
  result.measurements = {
      {"printed_failures", double(printed.violations), "steps where Lemma D.29 fails with gamma in the printed direction"},
      {"printed_steps", double(printed.hypotheses), "steps whose printed-direction hypotheses held"},
      {"gamma_printed", printed.max_gamma, "max gamma in the printed direction (opt_i >= (1-gamma) opt_{i-1})"},
      {"corrected_failures", double(corrected.violations), "steps where Lemma D.29 fails with the corrected gamma"},
      {"gamma_corrected", corrected.max_gamma, "max gamma in the corrected direction (opt_i >= (1-gamma) opt_{i+1})"},
      {"min_slack_corrected", corrected.worst_slack, "smallest lhs - rhs with the corrected gamma"}};
  result.key_number = "printed: " + std::to_string(printed.violations) + " of " + std::to_string(printed.hypotheses) +
                      " steps fail; corrected: " + std::to_string(corrected.violations) + " fail";
  result.notes = setup_notes(setup) +
                 "opt_i never decreases along these trajectories, so the printed condition holds with gamma = 0 and "
                 "cannot supply the factor the proof needs; with the corrected direction the lemma holds. The "
                 "counterexample shown is a failure of the printed reading.";
  return result;
}

}  // namespace subevict::proofs_checks
