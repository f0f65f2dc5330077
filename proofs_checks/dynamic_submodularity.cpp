#include "proofs_checks/dynamic_submodularity.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/tolerance.hpp"
#include "greedy/exhaustive.hpp"
#include "greedy/noisy_greedy.hpp"
#include "greedy/submodularity_violations.hpp"
#include "greedy/weight_sum_state.hpp"
#include "proofs_checks/format.hpp"

namespace subevict::proofs_checks {
namespace {

constexpr double kOneMinusInvE = 1.0 - 0.36787944117144233;  // 1 − 1/e

/// z ↦ h(z) − h(0).
struct Shifted {
  Transform h;
  double h0;
  double operator()(double z) const { return h(z) - h0; }
};

/// The family of step i on the ground set {0..i}.
TransformOverModular step_function(const DynamicFamily& f, int i, const TrajectorySetup& setup) {
  const Eigen::VectorXd acc = f.accumulated(i);
  return TransformOverModular(std::vector<double>(acc.data(), acc.data() + i + 1), setup.h,
                              "h2o-family(" + setup.h_name + ")");
}

}  // namespace

TransformOverModular::TransformOverModular(std::vector<double> weights, Transform h, std::string name)
    : weights_(std::move(weights)), h_(std::move(h)), name_(std::move(name)) {
  greedy::check_weights(weights_, true, "TransformOverModular");
}

double TransformOverModular::evaluate(std::span<const greedy::Element> set) const {
  return h_(greedy::weight_sum(weights_, set)) - h_(0.0);
}

std::unique_ptr<greedy::SetState> TransformOverModular::empty_state() const {
  return std::make_unique<greedy::WeightSumState<Shifted>>(weights_, Shifted{h_, h_(0.0)});
}

CheckResult check_def41_submodularity(const TrajectorySetup& setup, int steps_per_head, int trials_per_step) {
  CheckResult result;
  std::uint64_t trials = 0, violations = 0;
  for (std::size_t c = 0; c < setup.heads.size(); ++c) {
    const SmallHead& head = setup.heads[c];
    const DynamicFamily f(head, policy_caches(head, setup.policy, setup.budget, setup.seed + c), setup.h,
                          Knowledge::kTracked);
    const int n = head.tokens(), first = std::min(setup.budget, n - 1);
    for (int s = 0; s < steps_per_head; ++s) {
      const int i = first + int((long long)s * (n - 1 - first) / std::max(1, steps_per_head - 1));
      const TransformOverModular fn = step_function(f, i, setup);
      greedy::ViolationSearchOptions options;
      options.trials = std::uint64_t(trials_per_step);
      options.seed = setup.seed + c * 7919 + std::uint64_t(s);
      const greedy::ViolationReport report = greedy::find_submodularity_violations(fn, options);
      trials += report.trials;
      violations += report.violations;
      if (report.minimal && !result.counterexample) {
        const greedy::SubmodularityViolation& v = *report.minimal;
        result.counterexample = Counterexample{
            head.label + ", 0-based step " + std::to_string(i) + ": X = " + set_text(v.x_set) + " is a subset of Y = " +
                set_text(v.y_set) + ", x = " + std::to_string(v.element) + ", gain(x|X) = " +
                format_number(v.gain_small) + " < gain(x|Y) = " + format_number(v.gain_large),
            {{"gain_small", v.gain_small, "f(X + x) - f(X)"}, {"gain_large", v.gain_large, "f(Y + x) - f(Y)"}}};
      }
    }
  }
  result.instances = result.hypotheses_held = (long long)trials;
  result.violations = (long long)violations;
  conclude(result);
  result.measurements = {
      {"trials", double(trials), "random triples (X subset of Y, x not in Y) tested"},
      {"violations", double(violations), "triples with gain(x|X) < gain(x|Y)"},
      {"violation_rate_upper", result.violation_rate.upper, "Clopper-Pearson 95% upper bound on the violation rate"}};
  result.key_number = std::to_string(violations) + " of " + std::to_string(trials) + " triples violate (rate <= " +
                      format_number(result.violation_rate.upper) + ")";
  result.notes = std::to_string(setup.heads.size()) + " heads, budget k = " + std::to_string(setup.budget) +
                 ", h(z) = " + setup.h_name + ", " + std::to_string(steps_per_head) + " steps per head after the cache fills.";
  return result;
}

NoisyGreedy default_noisy_greedy() {
  return [](const greedy::SetFunction& f, std::size_t k, double noise, std::uint64_t seed) {
    greedy::NoisyGreedyOptions options;
    options.k = k;
    options.epsilon = noise;
    options.seed = seed;
    return greedy::noisy_greedy(f, options);
  };
}

CheckResult check_lemma_d19(const TrajectorySetup& setup, const NoisyGreedy& greedy_under_test, double epsilon) {
  CheckResult result;
  double max_loss_vs_greedy = -std::numeric_limits<double>::infinity();
  const NoisyGreedy exact_greedy = default_noisy_greedy();
  for (std::size_t c = 0; c < setup.heads.size(); ++c) {
    const SmallHead& head = setup.heads[c];
    const DynamicFamily f(head, policy_caches(head, setup.policy, setup.budget, setup.seed + c), setup.h,
                          Knowledge::kTracked);
    const int n = head.tokens();
    const double noise = epsilon / (2.0 * n);
    for (int i = setup.budget; i < n; ++i) {
      const TransformOverModular fn = step_function(f, i, setup);
      const std::size_t k = std::size_t(setup.budget);
      greedy::ExhaustiveOptions exhaustive;
      exhaustive.k = k;
      const double opt = greedy::exhaustive_optimum(fn, exhaustive).value;
      greedy::Selection s = greedy_under_test(fn, k, noise, setup.seed + c * 1009 + std::uint64_t(i));
      std::sort(s.set.begin(), s.set.end());
      const bool valid = s.set.size() <= k && std::adjacent_find(s.set.begin(), s.set.end()) == s.set.end() &&
                         (s.set.empty() || s.set.back() < fn.ground_size());
      const double value = valid ? fn.evaluate(s.set) : -std::numeric_limits<double>::infinity();
      const double rhs = kOneMinusInvE * opt - epsilon;
      const double plain = exact_greedy(fn, k, 0.0, 0).value;
      max_loss_vs_greedy = std::max(max_loss_vs_greedy, plain - value);
      ++result.instances;
      ++result.hypotheses_held;
      result.worst_slack = std::min(result.worst_slack, value - rhs);
      if (value < rhs - Tol<double>::sum(std::size_t(n)) * std::max(1.0, std::abs(rhs))) {
        ++result.violations;
        if (!result.counterexample) {
          result.counterexample = Counterexample{
              head.label + ", 0-based step " + std::to_string(i) + ", k = " + std::to_string(k) + ": f(S~) = " +
                  format_number(value) + " < (1-1/e) OPT_k - eps = " + format_number(rhs) + " (OPT_k = " +
                  format_number(opt) + ", eps = " + format_number(epsilon) + ", gain noise eps/(2n) = " +
                  format_number(noise) + "), S~ = " + set_text(s.set),
              {{"value", value, "f(S~), greedy on perturbed gains"}, {"rhs", rhs, "(1-1/e) OPT_k - eps"}, {"opt", opt, "OPT_k"}}};
        }
      }
    }
  }
  conclude(result);
  result.measurements = {
      {"min_slack", result.worst_slack, "smallest f(S~) - ((1-1/e) OPT_k - eps)"},
      {"epsilon", epsilon, "eps; gains perturbed by at most eps/(2n)"},
      {"max_loss_vs_noiseless_greedy", max_loss_vs_greedy, "largest f(S_greedy) - f(S~) (informational)"}};
  result.key_number = std::to_string(result.violations) + " of " + std::to_string(result.instances) +
                      " steps violate, min slack " + format_number(result.worst_slack);
  result.notes = "Reading: Lemma D.19 as Corollary D.18 with oracle error eps/(2n): f(S~) >= (1-1/e) OPT_k - eps. " +
                 std::to_string(setup.heads.size()) + " heads, budget k = " + std::to_string(setup.budget) +
                 ", h(z) = " + setup.h_name + ".";
  return result;
}

}  // namespace subevict::proofs_checks
