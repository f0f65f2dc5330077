#include "proofs_checks/offline_gap.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "core/tolerance.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"
#include "greedy/eviction/optimum/offline_optimum.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/optimum/step_oracle.hpp"
#include "proofs_checks/format.hpp"

namespace subevict::proofs_checks {


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

std::vector<NamedPolicy> spec_policies(const std::vector<greedy::PolicySpec>& specs) {
  std::vector<NamedPolicy> out;
  for (const greedy::PolicySpec& spec : specs) out.push_back({spec.label(), [spec] { return greedy::make_policy(spec); }});
  return out;
}

int offline_comparison_budget(int tokens, double budget_ratio) {
  const int used = std::min(tokens, kMaxOfflineTokens);
  return std::clamp(int(std::ceil(budget_ratio * used)), 1, used);
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
  long long chain_breaks = 0;
  std::map<std::string, int> uncompressed;  // runs per policy that kept every token
  std::map<std::string, std::vector<double>> compressed;  // policy / OPT of the other runs
  std::string uncompressed_note;
  std::string first_break;
  greedy::SimulationOptions options;
  options.budget = budget;
  options.seed = seed;
  for (std::size_t h = 0; h < heads.size(); ++h) {
    const int layer = heads[h] / shape.kv_heads, kv = heads[h] % shape.kv_heads;
    const greedy::HeadGroup group = greedy::first_tokens(greedy::head_group(workload, layer, kv), max_tokens);
    const Eigen::MatrixXd gains = greedy::gain_matrix(group);
    const double opt = optimum(gains, budget);
    const double oracle = greedy::step_oracle(gains, budget).total;
    const double n_g = double(group.tokens()) * group.group_size();
    const double slack = Tol<double>::sum(std::size_t(gains.size())) * std::max(1.0, n_g);
    opt_over_oracle += opt / oracle / double(heads.size());
    oracle_over_n += oracle / n_g / double(heads.size());
    for (const NamedPolicy& p : policies) {
      const auto policy = p.make();
      const greedy::Trace trace = greedy::simulate(group, *policy, options);
      const double value = trace.total_retained_mass();
      ratios[p.name].push_back(value / opt);
      ++result.instances;
      if (trace.budget != budget) {  // kept every token (l2norm on a layer it skips): not a run at budget k
        ++uncompressed[p.name];
        continue;
      }
      compressed[p.name].push_back(value / opt);
      const double worst = std::min({opt - value, oracle - opt, n_g - oracle});
      if (worst < -slack) {
        ++chain_breaks;
        if (first_break.empty()) {
          first_break = " The chain breaks first at layer " + std::to_string(layer) + " KV head " +
                        std::to_string(kv) + ", policy " + p.name + ", k = " + std::to_string(budget) + ": policy " +
                        format_number(value) + ", OPT " + format_number(opt) + ", sum U_i " + format_number(oracle) +
                        ", n g " + format_number(n_g) + "; the ratios are then not to be trusted.";
        }
      }
    }
  }
  conclude_measurement(result);
  std::string best;
  double best_ratio = -1;
  for (const NamedPolicy& p : policies) {
    const std::vector<double>& r = ratios[p.name];
    const int skipped = uncompressed[p.name];
    const std::vector<double>& kept = compressed[p.name];  // the mean is over the compressed runs
    double mean = 0;
    for (double x : kept) mean += x / double(kept.size());
    if (skipped < int(r.size())) {
      std::string key = "ratio_" + p.name;  // a label such as "h2o:heavy=0.25" as a snake_case key
      for (char& ch : key)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      result.measurements.push_back({key, mean, "mean over heads of " + p.name + " / OPT_irreversible" +
                                                    (skipped > 0 ? " (compressed runs only)" : "")});
    }
    if (skipped > 0) uncompressed_note += " " + p.name + " kept every token on " + std::to_string(skipped) + " of " +
                                          std::to_string(r.size()) + " heads (not compared).";
    Series s{"gap_to_optimum", p.name, "(layer, KV head) group", "retained mass, policy / OPT_irreversible (ratio)",
             {}, r, SeriesStyle::categorical, {}, "Policies against the offline optimum, per (layer, KV head) group"};
    for (std::size_t h = 0; h < r.size(); ++h) {
      s.x.push_back(double(h));
      s.x_names.push_back("L" + std::to_string(heads[h] / shape.kv_heads) + " H" + std::to_string(heads[h] % shape.kv_heads));
    }
    result.series.push_back(std::move(s));
    if (!kept.empty() && mean > best_ratio) {
      best_ratio = mean;
      best = p.name;
    }
  }
  result.measurements.push_back({"opt_over_oracle", opt_over_oracle, "mean OPT_irreversible / sum_i U_i"});
  result.measurements.push_back({"oracle_over_n", oracle_over_n, "mean sum_i U_i / (n g)"});
  result.measurements.push_back({"chain_breaks", double(chain_breaks),
                                 "(head, policy) pairs where policy <= OPT <= sum U_i <= n g breaks beyond rounding"});
  long long skipped_runs = 0;
  for (const auto& [name, count] : uncompressed) skipped_runs += count;
  result.measurements.push_back({"uncompressed_runs", double(skipped_runs),
                                 "(head, policy) pairs where the policy kept every token (not compared)"});
  result.key_number = "best " + best + " at " + format_number(best_ratio) + " of OPT; OPT = " +
                      format_number(opt_over_oracle) + " of sum U_i";
  result.notes = std::to_string(heads.size()) + " (layer, KV head) pairs" +
                 (max_tokens > 0 && max_tokens < shape.tokens ? ", first " + std::to_string(max_tokens) + " tokens" : "") +
                 ", budget k = " + std::to_string(budget) +
                 ", no prefill. The default l2norm policy compresses every layer here (its registry default skips layers 0 and 1). A "
                 "measurement: OPT_irreversible maximises over every schedule a causal policy can produce and "
                 "sum_i U_i drops the irreversibility, so the chain cannot fail; the ratios are the result." +
                 uncompressed_note + first_break;
  return result;
}

}  // namespace subevict::proofs_checks
