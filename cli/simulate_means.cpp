// `subevict simulate`: means over head groups (cli/simulate_means.hpp).

#include "cli/simulate_means.hpp"

#include <algorithm>

namespace subevict::cli {
namespace {

/// Adds `value` to the mean of `key`.
void add(Aggregate& aggregate, const std::pair<std::string, double>& key, double value) {
  auto& a = aggregate[key];
  a.first += value;
  a.second += 1;
}

}  // namespace

CellMeans cell_means(const std::vector<Cell>& cells, bool certified) {
  CellMeans out;
  for (const Cell& c : cells) {
    const double g = c.heads, n = c.tokens;
    for (const greedy::Trace& t : c.traces) {
      add(out.mean, {t.policy, c.budget_value}, t.total_retained_mass() / g / n);
      if (t.budget != c.budget) ++out.uncompressed[{t.policy, c.budget_value}];
    }
    if (c.has_optimum) add(out.mean, {"OPT", c.budget_value}, c.optimum.value / g / n);
    if (c.has_oracle) add(out.mean, {"sum_U", c.budget_value}, c.oracle.total / g / n);
    if (certified && c.has_interval) {
      add(out.mean, {"OPT_lower", c.budget_value}, c.optimum.value / g / n);
      add(out.mean, {"OPT_upper", c.budget_value}, c.optimum.upper_bound / g / n);
    }
  }
  return out;
}

Aggregate budget_curve_means(const std::vector<greedy::BudgetCurve>& curves) {
  Aggregate mean;
  std::map<int, bool> exact;  // k -> every head optimal
  for (const greedy::BudgetCurve& c : curves) {
    const double g = c.heads, n = c.tokens;
    for (const greedy::BudgetCurvePoint& p : c.points) {
      add(mean, {"OPT_lower", double(p.budget)}, p.value / g / n);
      add(mean, {"OPT_upper", double(p.budget)}, p.upper_bound / g / n);
      const auto [it, fresh] = exact.emplace(p.budget, true);
      it->second = it->second && p.status == greedy::ScheduleStatus::kOptimal;
    }
  }
  if (!curves.empty() && std::all_of(exact.begin(), exact.end(), [](const auto& e) { return e.second; })) {
    Aggregate opt;
    for (const auto& [key, value] : mean) {
      if (key.first == "OPT_lower") opt[{"OPT", key.second}] = value;
    }
    mean = std::move(opt);
  }
  return mean;
}

nlohmann::json means_json(const CellMeans& means) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [key, value] : means.mean) {
    out.push_back({{"policy", key.first},
                   {"budget", key.second},
                   {"mean_retained_mass", value.first / value.second},
                   {"heads", value.second},
                   {"uncompressed_heads", means.uncompressed.count(key) ? means.uncompressed.at(key) : 0}});
  }
  return out;
}

}  // namespace subevict::cli
