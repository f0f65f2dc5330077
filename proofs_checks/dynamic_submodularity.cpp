#include "proofs_checks/dynamic_submodularity.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/tolerance.hpp"
#include "greedy/diagnostics/submodularity_violations.hpp"
#include "greedy/functions/weight_sum_state.hpp"
#include "proofs_checks/format.hpp"

namespace subevict::proofs_checks {
namespace {

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
  std::string first_violation;
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
      if (report.minimal && first_violation.empty()) {
        const greedy::SubmodularityViolation& v = *report.minimal;
        first_violation = " Smallest violating triple: " + head.label + ", 0-based step " + std::to_string(i) +
                          ": X = " + set_text(v.x_set) + " is a subset of Y = " + set_text(v.y_set) + ", x = " +
                          std::to_string(v.element) + ", gain(x|X) = " + format_number(v.gain_small) +
                          " < gain(x|Y) = " + format_number(v.gain_large) + ".";
      }
    }
  }
  result.instances = (long long)trials;
  conclude_measurement(result);
  const double rate_upper = trials > 0 ? clopper_pearson((long long)violations, (long long)trials).upper : 1.0;
  result.measurements = {
      {"trials", double(trials), "random triples (X subset of Y, x not in Y) tested"},
      {"violating_triples", double(violations), "triples with gain(x|X) < gain(x|Y) beyond rounding"},
      {"violation_rate_upper", rate_upper, "Clopper-Pearson 95% upper bound on the rate of violating triples"}};
  result.key_number = std::to_string(violations) + " violating triples of " + std::to_string(trials) +
                      " (rate <= " + format_number(rate_upper) + ")";
  result.notes = std::to_string(setup.heads.size()) + " heads, budget k = " + std::to_string(setup.budget) +
                 ", h(z) = " + setup.h_name + ", " + std::to_string(steps_per_head) +
                 " steps per head after the cache fills. A measurement: h concave and non-decreasing of a "
                 "non-negative modular function is submodular, so only rounding or a wrong h could give a "
                 "violating triple." +
                 first_violation;
  return result;
}

}  // namespace subevict::proofs_checks
