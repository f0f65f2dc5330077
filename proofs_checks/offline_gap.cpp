#include "proofs_checks/offline_gap.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/tolerance.hpp"
#include "greedy/cache_schedule.hpp"
#include "greedy/offline_optimum.hpp"
#include "greedy/policy_registry.hpp"
#include "greedy/step_oracle.hpp"
#include "proofs_checks/format.hpp"

namespace subevict::proofs_checks {

namespace {

/// The group restricted to its first `tokens` tokens (views of the same storage; row-major, so a
/// prefix of rows is contiguous); the group itself when tokens ≤ 0 or ≥ n.
greedy::HeadGroup prefix(const greedy::HeadGroup& group, int tokens) {
  if (tokens <= 0 || tokens >= group.tokens()) return group;
  const auto rows = [tokens](const ConstHeadMap& m) { return ConstHeadMap(m.data(), tokens, m.cols()); };
  std::vector<ConstHeadMap> q;
  for (const ConstHeadMap& m : group.q) q.push_back(rows(m));
  return greedy::HeadGroup{std::move(q), rows(group.k), rows(group.v), group.scale, group.layer, group.kv_head};
}

}  // namespace

std::vector<NamedPolicy> comparison_policies(int budget) {
  greedy::PolicyParams params;
  params.sinks = std::max(0, std::min(4, budget - 1));
  params.skipped_layers = {};
  std::vector<NamedPolicy> out;
  for (const char* name : {"h2o", "local", "streamingllm", "tova", "l2norm", "random"}) {
    out.push_back({name, [name = std::string(name), params] { return greedy::make_policy(name, params); }});
  }
  return out;
}

OptimumSolver flow_optimum() {
  return [](const Eigen::MatrixXd& gains, int budget) { return greedy::offline_optimum(gains, budget).value; };
}

CheckResult check_greedy_vs_offline(const Workload& workload, const std::vector<int>& heads, int budget,
                                    const std::vector<NamedPolicy>& policies, const OptimumSolver& optimum,
                                    std::uint64_t seed, int max_tokens) {
  CheckResult result;
  const Shape& shape = workload.shape();
  std::map<std::string, std::vector<double>> ratios;
  double opt_over_oracle = 0, oracle_over_n = 0;
  greedy::SimulationOptions options;
  options.budget = budget;
  options.seed = seed;
  for (std::size_t h = 0; h < heads.size(); ++h) {
    const int layer = heads[h] / shape.kv_heads, kv = heads[h] % shape.kv_heads;
    const greedy::HeadGroup group = prefix(greedy::head_group(workload, layer, kv), max_tokens);
    const Eigen::MatrixXd gains = greedy::gain_matrix(group);
    const double opt = optimum(gains, budget);
    const double oracle = greedy::step_oracle(gains, budget).total;
    const double n_g = double(group.tokens()) * group.group_size();
    const double slack = Tol<double>::sum(std::size_t(gains.size())) * std::max(1.0, n_g);
    opt_over_oracle += opt / oracle / double(heads.size());
    oracle_over_n += oracle / n_g / double(heads.size());
    for (const NamedPolicy& p : policies) {
      const auto policy = p.make();
      const double value = greedy::simulate(group, *policy, options).total_retained_mass();
      ratios[p.name].push_back(value / opt);
      ++result.instances;
      ++result.hypotheses_held;
      const double worst = std::min({opt - value, oracle - opt, n_g - oracle});
      result.worst_slack = std::min(result.worst_slack, worst);
      if (worst < -slack) {
        ++result.violations;
        if (!result.counterexample) {
          result.counterexample = Counterexample{
              "layer " + std::to_string(layer) + " KV head " + std::to_string(kv) + ", policy " + p.name +
                  ", k = " + std::to_string(budget) + ": policy " + format_number(value) + ", OPT " +
                  format_number(opt) + ", sum U_i " + format_number(oracle) + ", n g " + format_number(n_g) +
                  " (policy <= OPT <= sum U_i <= n g broken)",
              {{"policy", value, "sum_i r_i of the policy"},
               {"opt", opt, "OPT_irreversible"},
               {"oracle", oracle, "sum_i U_i"},
               {"n_g", n_g, "tokens times query heads"}}};
        }
      }
    }
  }
  conclude(result);
  std::string best;
  double best_ratio = -1;
  for (const NamedPolicy& p : policies) {
    const std::vector<double>& r = ratios[p.name];
    double mean = 0;
    for (double x : r) mean += x / double(r.size());
    result.measurements.push_back({"ratio_" + p.name, mean, "mean over heads of " + p.name + " / OPT_irreversible"});
    Series s{"gap_to_optimum", p.name, "head", "policy / OPT_irreversible", {}, r};
    for (std::size_t h = 0; h < r.size(); ++h) s.x.push_back(double(h));
    result.series.push_back(std::move(s));
    if (mean > best_ratio) {
      best_ratio = mean;
      best = p.name;
    }
  }
  result.measurements.push_back({"opt_over_oracle", opt_over_oracle, "mean OPT_irreversible / sum_i U_i"});
  result.measurements.push_back({"oracle_over_n", oracle_over_n, "mean sum_i U_i / (n g)"});
  result.key_number = "best " + best + " at " + format_number(best_ratio) + " of OPT; OPT = " +
                      format_number(opt_over_oracle) + " of sum U_i";
  result.notes = std::to_string(heads.size()) + " (layer, KV head) pairs" +
                 (max_tokens > 0 && max_tokens < shape.tokens ? ", first " + std::to_string(max_tokens) + " tokens" : "") +
                 ", budget k = " + std::to_string(budget) +
                 ", no prefill. The l2norm policy compresses every layer here (its default skips layers 0 and 1).";
  return result;
}

}  // namespace subevict::proofs_checks
