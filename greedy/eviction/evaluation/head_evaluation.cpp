#include "greedy/eviction/evaluation/head_evaluation.hpp"

#include <cmath>
#include <limits>

#include "core/input_error.hpp"
#include "core/number_text.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/policies/lookahead.hpp"
#include "greedy/eviction/optimum/offline_optimum.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"

namespace subevict::greedy {

std::string to_string(OptimumMode mode) {
  switch (mode) {
    case OptimumMode::kNone: return "none";
    case OptimumMode::kOracle: return "oracle";
    case OptimumMode::kFlow: return "flow";
  }
  return "none";
}

OptimumMode parse_optimum_mode(const std::string& name, const std::string& source) {
  if (name == "none") return OptimumMode::kNone;
  if (name == "oracle") return OptimumMode::kOracle;
  if (name == "flow") return OptimumMode::kFlow;
  throw InputError(source, "optimum", "none, flow or oracle", name);
}

Budget budget_from_value(double value, const std::string& source) {
  if (!(value > 0.0) || !std::isfinite(value) || (value >= 1.0 && value != std::floor(value)) ||
      value > double(std::numeric_limits<int>::max())) {
    throw InputError(source, "budget", kBudgetExpectation, significant_digits(value, 10));
  }
  return value < 1.0 ? Budget::ratio_of_tokens(value) : Budget::absolute(int(value));
}

std::unique_ptr<EvictionPolicy> make_named_policy(const std::string& name, int horizon) {
  if (name == "lookahead") return std::make_unique<LookaheadPolicy>(horizon);
  return make_policy(name);
}

HeadEvaluation evaluate_head(const Workload& workload, int layer, int kv_head,
                             const std::vector<std::string>& policies,
                             const HeadEvaluationOptions& options) {
  std::vector<PolicySpec> specs;
  for (const std::string& name : policies) {
    PolicySpec spec;
    spec.name = name;
    spec.horizon = options.horizon;
    specs.push_back(std::move(spec));
  }
  return evaluate_head(workload, layer, kv_head, specs, options);
}

HeadEvaluation evaluate_head(const Workload& workload, int layer, int kv_head,
                             const std::vector<PolicySpec>& policies,
                             const HeadEvaluationOptions& options) {
  const HeadGroup group = head_group(workload, layer, kv_head);
  HeadEvaluation e;
  e.layer = layer;
  e.kv_head = kv_head;
  e.heads = group.group_size();
  e.tokens = workload.shape().tokens;
  e.budget = options.budget;
  SimulationOptions sim;
  sim.budget = options.budget;
  sim.seed = options.seed;
  for (const PolicySpec& spec : policies) {
    auto policy = make_policy(spec);
    e.traces.push_back(simulate(group, *policy, sim));
    e.traces.back().policy = spec.label();
  }
  if (options.optimum != OptimumMode::kNone) {
    const Eigen::MatrixXd gains = gain_matrix(group);
    e.oracle = step_oracle(gains, options.budget);
    e.has_oracle = true;
    if (options.optimum == OptimumMode::kFlow) {
      e.optimum = offline_optimum(gains, options.budget);
      e.has_optimum = e.optimum.status == ScheduleStatus::kOptimal;
    }
  }
  return e;
}

double mean_output_error(const Trace& trace) {
  double sum = 0.0;
  for (const auto& s : trace.steps) sum += s.output_error;
  return trace.steps.empty() ? 0.0 : sum / double(trace.steps.size());
}

double mean_total_variation(const Trace& trace) {
  double sum = 0.0;
  for (const auto& s : trace.steps) sum += s.total_variation;
  return trace.steps.empty() ? 0.0 : sum / double(trace.steps.size());
}

}  // namespace subevict::greedy
