#include "greedy/eviction/budgets/adakv_share.hpp"

#include <cmath>
#include <memory>
#include <string>

#include "core/number_text.hpp"
#include "greedy/eviction/evaluation/shared_simulator.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"

namespace subevict::greedy {

int adakv_floor(const ShareRule& rule, int k) { return int(std::floor(rule.alpha_safeguard * k)); }

ShareRuleRun adakv_run(const ShareRule& rule, const PolicySpec& scorer, const ShareStudy& study,
                       const std::vector<HeadGroup>& groups, const std::vector<std::vector<ExactRows>>& exact,
                       const ShareStudyOptions& options, Progress& progress) {
  const auto& units = study.shares.units;
  const std::size_t count = study.shares.heads.size();
  const int floor = adakv_floor(rule, study.budget);
  ShareRuleRun run{rule.label(), scorer.label(), std::vector<double>(count), std::vector<double>(count),
                   std::vector<long long>(units.size(), 0), "floor " + std::to_string(floor) + " per head"};
  for (std::size_t u = 0; u < units.size(); ++u) {
    std::vector<HeadGroup> unit_groups;
    std::vector<const std::vector<ExactRows>*> unit_exact;  // the rows computed once, not copied
    std::vector<std::unique_ptr<EvictionPolicy>> owned;
    std::vector<EvictionPolicy*> policies;
    for (int x : units[u]) {
      unit_groups.push_back(groups[std::size_t(x)]);
      unit_exact.push_back(&exact[std::size_t(x)]);
      owned.push_back(make_policy(scorer));
      policies.push_back(owned.back().get());
    }
    SharedSimulationOptions shared_options;
    shared_options.budget = study.budget;
    shared_options.floor = floor;
    shared_options.seed = options.seed;
    shared_options.threads = options.threads;
    const SharedRun shared = simulate_shared(unit_groups, policies, shared_options, unit_exact);
    for (std::size_t e = 0; e < units[u].size(); ++e) {
      run.mass[std::size_t(units[u][e])] = shared.traces[e].total_retained_mass();
      run.mean_slots[std::size_t(units[u][e])] = shared.occupancy.col(int(e)).cast<double>().mean();
    }
    run.peak[u] = shared.occupancy.rowwise().sum().maxCoeff();
    progress.advance(1, "(" + run.rule + " with " + run.scorer + ", unit " + std::to_string(u) + ", " +
                            significant_digits(shared.seconds, 3) + " s)");
  }
  return run;
}

}  // namespace subevict::greedy
