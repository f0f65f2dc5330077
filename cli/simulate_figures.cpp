// `subevict simulate`: its figures (cli/simulate_figures.hpp).

#include "cli/simulate_figures.hpp"

#include <algorithm>
#include <cstddef>
#include <map>

#include "sweep/report.hpp"

namespace subevict::cli {
namespace {

/// "0.2 n" for a ratio, "k = 64" for a size.
std::string budget_text(double b) { return b < 1.0 ? simulate_number(b) + " n" : "k = " + simulate_number(b); }

/// Per series (each trace's policy, and OPT where exact), its retained mass per step summed over
/// the cells at `budget`; `groups` counts those cells.
std::map<std::string, std::vector<double>> per_step_sums(const std::vector<Cell>& cells, double budget, int& groups) {
  std::map<std::string, std::vector<double>> per_step;
  groups = 0;
  for (const Cell& c : cells) {
    if (c.budget_value != budget) continue;
    ++groups;
    auto add = [&](const std::string& name, int i, double v) {
      auto& vec = per_step[name];
      vec.resize(std::size_t(c.tokens), 0.0);
      vec[std::size_t(i)] += v;
    };
    for (const greedy::Trace& t : c.traces)
      for (const auto& s : t.steps) add(t.policy, s.step, s.retained_mass);
    for (int i = 0; c.has_optimum && i < c.tokens; ++i) add("OPT", i, c.optimum.step_mass[i] / c.heads);
  }
  return per_step;
}

/// "retained_per_step": the series of `names`, then OPT, each a centred running mean over
/// `window` steps of `per_step` divided by `groups`.
plot::Figure steps_figure(const std::map<std::string, std::vector<double>>& per_step, int groups,
                          const std::vector<std::string>& names, double main_budget, int window,
                          const std::string& scope) {
  plot::Figure steps{"retained_per_step",
                     "Retained attention mass per step at budget " + budget_text(main_budget) + " (" + scope +
                         (window > 1 ? ", running mean over " + std::to_string(window) + " steps)" : ")"),
                     "decoding step i (token position)", "retained attention mass (fraction per step)",
                     plot::XAxis::linear, false, {}, "step", {}};
  std::vector<std::string> order = names;
  order.push_back("OPT");
  for (const std::string& name : order) {
    const auto it = per_step.find(name);
    if (it == per_step.end()) continue;
    const std::vector<double>& sum = it->second;
    plot::Series s{name == "OPT" ? "OPT (offline optimum)" : name, {}, {},
                   name == "OPT" ? plot::Mark::bound : plot::Mark::lines, name};
    for (std::size_t i = 0; i < sum.size(); ++i) {
      const std::size_t lo = i >= std::size_t(window / 2) ? i - std::size_t(window / 2) : 0;
      const std::size_t hi = std::min(sum.size(), lo + std::size_t(window));
      double mean = 0.0;
      for (std::size_t j = lo; j < hi; ++j) mean += sum[j];
      s.x.push_back(double(i));
      s.y.push_back(mean / double(hi - lo) / double(std::max(1, groups)));
    }
    steps.series.push_back(std::move(s));
  }
  return steps;
}

/// "retained_vs_budget": every series of `aggregate` at budget / n (a size equal to a ratio: the
/// ratio's point), with the budget curve's points.
plot::Figure budget_figure(const Aggregate& aggregate, const Aggregate& curve_points,
                           const std::vector<std::string>& names, int tokens, const std::string& scope) {
  std::map<std::string, std::map<double, double>> curves;
  for (const auto& [key, value] : aggregate) {
    const double x = key.second < 1.0 ? key.second : key.second / double(tokens);
    curves[key.first].emplace(x, value.first / value.second);  // a size equal to a ratio: the first
  }
  for (const auto& [key, value] : curve_points) {  // --budget-curve: OPT at every k = 1..K
    curves[key.first].emplace(key.second / double(tokens), value.first / value.second);
  }
  return sweep::budget_curve_figure(curves, names, scope);
}

/// "gap_to_optimum": OPT minus each policy of `names` at `main_budget`, given `opt`, OPT's mean there.
plot::Figure gap_figure(const Aggregate& aggregate, const std::pair<double, int>& opt,
                        const std::vector<std::string>& names, double main_budget, const std::string& scope) {
  plot::Figure gap{"gap_to_optimum",
                   "Gap to the offline optimum at budget " + budget_text(main_budget) + " (" + scope + ")",
                   "policy", "OPT - policy (retained mass, fraction per step)", plot::XAxis::categorical,
                   false, {}, "policy", {}};
  plot::Series bars{"OPT - policy", {}, {}, plot::Mark::bars, "gap_to_optimum"};
  for (const std::string& name : names) {
    const auto it = aggregate.find({name, main_budget});
    if (it == aggregate.end()) continue;
    bars.x.push_back(double(gap.categories.size()));
    bars.y.push_back(opt.first / opt.second - it->second.first / it->second.second);
    gap.categories.push_back(name);
  }
  gap.series.push_back(std::move(bars));
  return gap;
}

}  // namespace

std::vector<plot::Figure> simulate_figures(const std::vector<Cell>& cells, const std::vector<std::string>& names,
                                           double main_budget, int tokens, const Aggregate& aggregate,
                                           const Aggregate& curve_points) {
  int groups = 0;
  const std::map<std::string, std::vector<double>> per_step = per_step_sums(cells, main_budget, groups);
  const std::string scope = "mean over " + std::to_string(std::max(1, groups)) + " (layer, KV head) group" +
                            (groups == 1 ? "" : "s");
  std::vector<plot::Figure> out;
  plot::Figure steps = steps_figure(per_step, groups, names, main_budget, std::max(1, tokens / 32), scope);
  if (!steps.series.empty()) out.push_back(std::move(steps));
  out.push_back(budget_figure(aggregate, curve_points, names, tokens, scope));
  const auto opt = aggregate.find({"OPT", main_budget});
  if (opt != aggregate.end()) {
    plot::Figure gap = gap_figure(aggregate, opt->second, names, main_budget, scope);
    if (!gap.categories.empty()) out.push_back(std::move(gap));
  }
  return out;
}

}  // namespace subevict::cli
