#include "greedy/eviction/budgets/share_study.hpp"

#include <algorithm>
#include <utility>

#include "core/input_error.hpp"
#include "core/parallel_units.hpp"
#include "core/progress.hpp"
#include "greedy/eviction/budgets/adakv_share.hpp"
#include "greedy/eviction/budgets/budget_allocation.hpp"
#include "greedy/eviction/budgets/duo_share.hpp"
#include "greedy/eviction/budgets/share_optima.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"

namespace subevict::greedy {
namespace {

/// The heads of `layers` layer-major, in units of a layer or of the whole model.
ShareHeads share_heads(const std::vector<int>& layers, int kv_heads, bool model) {
  ShareHeads shares;
  for (int l : layers) {
    if (!model || shares.units.empty()) shares.units.emplace_back();
    for (int h = 0; h < kv_heads; ++h) {
      shares.units.back().push_back(int(shares.heads.size()));
      shares.heads.emplace_back(l, h);
    }
  }
  return shares;
}

/// Every check of the request that needs no work: scorers that rank, pyramidkv only on the
/// model's scope, and every static rule's budgets accepted by every head's policy.
void check_request(const std::vector<ShareRule>& rules, const std::vector<PolicySpec>& scorers,
                   const ShareHeads& shares, const Shape& shape, const ShareStudyOptions& options) {
  for (const auto& spec : scorers) {
    if (!make_policy(spec)->ranks()) {
      throw InputError(options.source, options.policies_field,
                       "scorers that rank their members with --share (not " + spec.label() + ")", spec.label());
    }
  }
  for (const ShareRule& rule : rules) {
    if (rule.kind == ShareRule::Kind::kPyramidKv && !options.model) {
      throw InputError(options.source, options.rules_field,
                       "pyramidkv with --share model (it moves budget between layers)", rule.label());
    }
  }
  for (const ShareRule& rule : rules) {
    if (rule.kind == ShareRule::Kind::kAdaKv) continue;
    check_share_plan(static_share_plan(rule, shares, shape, options.budget, nullptr), rule, scorers, shares,
                     shape.tokens, options.source, options.rules_field, options.policies_field);
  }
}

/// The plan of a static rule; duo's streaming heads chosen by every head's streaming loss.
SharePlan rule_plan(const ShareRule& rule, const ShareStudy& study, const std::vector<HeadGroup>& groups,
                    const Shape& shape, int threads) {
  if (rule.kind != ShareRule::Kind::kDuo) return static_share_plan(rule, study.shares, shape, study.budget, nullptr);
  std::vector<double> losses(study.shares.heads.size());
  const int calibration = std::min(rule.calibration, shape.tokens);
  parallel_for((long long)losses.size(), threads, [&](long long x) {
    losses[std::size_t(x)] = streaming_loss(groups[std::size_t(x)], rule.sink_size, rule.recent_size, calibration);
  });
  return static_share_plan(rule, study.shares, shape, study.budget, &losses);
}

/// A static rule with `scorer`: every head simulated at its planned budget; one progress unit per head.
ShareRuleRun static_rule_run(const ShareRule& rule, const SharePlan& plan, const PolicySpec& scorer,
                             const ShareStudy& study, const std::vector<HeadGroup>& groups,
                             const std::vector<std::vector<ExactRows>>& exact, const ShareStudyOptions& options,
                             Progress& progress) {
  const std::size_t count = study.shares.heads.size();
  const int n = groups.front().tokens();
  ShareRuleRun run{rule.label(), scorer.label(), std::vector<double>(count), std::vector<double>(count),
                   std::vector<long long>(study.shares.units.size(), 0), plan.note};
  parallel_for((long long)count, options.threads, [&](long long x) {
    SimulationOptions simulation;
    simulation.budget = plan.budgets[std::size_t(x)];
    simulation.seed = options.seed;
    auto policy = make_policy(planned_policy(plan, std::size_t(x), rule, scorer));
    const Trace t = simulate(groups[std::size_t(x)], *policy, simulation, exact[std::size_t(x)]);
    run.mass[std::size_t(x)] = t.total_retained_mass();
    double slots = 0.0;
    // A static budget fills after k steps and stays full: the mean size over the steps.
    for (int i = 0; i < n; ++i) slots += std::min(i + 1, t.budget);
    run.mean_slots[std::size_t(x)] = slots / n;
    progress.advance(1);
  });
  for (std::size_t u = 0; u < study.shares.units.size(); ++u) {
    for (int x : study.shares.units[u]) run.peak[u] += std::min(n, plan.budgets[std::size_t(x)]);
  }
  return run;
}

/// The work the progress line counts: exact rows and curves per head, shared optima per unit, and
/// per rule and scorer a unit (adakv) or a head (the others).
long long study_work(const ShareStudy& study, const std::vector<ShareRule>& rules, std::size_t scorers,
                     bool computing_curves) {
  const long long count = (long long)study.shares.heads.size(), units = (long long)study.shares.units.size();
  long long work = count + (computing_curves ? count : 0) + (study.model ? 1 : units);
  for (const ShareRule& rule : rules) work += (long long)scorers * (rule.kind == ShareRule::Kind::kAdaKv ? units : count);
  return work;
}

}  // namespace

std::string ShareStudy::unit_name(std::size_t u) const {
  return model ? std::string("the model") : "layer " + std::to_string(shares.heads[std::size_t(shares.units[u].front())].first);
}

ShareStudy share_study(const Workload& w, const std::vector<int>& layers, const std::vector<ShareRule>& rules,
                       const std::vector<PolicySpec>& scorers, const ShareStudyOptions& options) {
  const Shape& shape = w.shape();
  ShareStudy study;
  study.budget = options.budget;
  study.model = options.model;
  study.shares = share_heads(layers, shape.kv_heads, options.model);
  check_request(rules, scorers, study.shares, shape, options);
  const auto& shares = study.shares;
  std::vector<HeadGroup> groups;
  for (const auto& [l, h] : shares.heads) groups.push_back(head_group(w, l, h));
  // The curves of a file are read and checked before any work.
  const bool computing_curves = options.curves.empty();
  std::vector<std::vector<double>> curves;
  if (!computing_curves) curves = read_share_curves(options.curves, groups, shares, options.budget);
  Progress progress(options.progress_label, study_work(study, rules, scorers.size(), computing_curves),
                    "units (heads, curves, solves, runs)", options.quiet);
  std::vector<std::vector<ExactRows>> exact(shares.heads.size());  // once per head
  parallel_for((long long)shares.heads.size(), options.threads, [&](long long x) {
    exact[std::size_t(x)] = group_exact_rows(groups[std::size_t(x)]);
    progress.advance(1, "(exact rows of layer " + std::to_string(shares.heads[std::size_t(x)].first) + ", KV head " +
                            std::to_string(shares.heads[std::size_t(x)].second) + ")");
  });
  if (computing_curves) {
    int largest = 1;  // the largest budget a head may get in its unit's static allocation
    for (const auto& unit : shares.units) {
      largest = std::max(largest, largest_static_budget(shape.tokens, (long long)unit.size() * options.budget,
                                                        (long long)unit.size()));
    }
    curves = compute_share_curves(w, shares, largest, options.threads, progress);
  }
  study.optima = share_optima(groups, shares, curves, study, options, progress);
  check_share_optima_order(study, options);
  for (const ShareRule& rule : rules) {
    const SharePlan plan =
        rule.kind == ShareRule::Kind::kAdaKv ? SharePlan{} : rule_plan(rule, study, groups, shape, options.threads);
    for (const auto& scorer : scorers) {
      study.runs.push_back(rule.kind == ShareRule::Kind::kAdaKv
                               ? adakv_run(rule, scorer, study, groups, exact, options, progress)
                               : static_rule_run(rule, plan, scorer, study, groups, exact, options, progress));
    }
  }
  return study;
}

}  // namespace subevict::greedy
