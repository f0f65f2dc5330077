#pragma once
/// \file
/// `subevict simulate`'s means over head groups: the mean retained mass per step of every series
/// (each policy, OPT, its certified bounds, sum U) at every budget, from the cells or from the
/// budget curves of --budget-curve.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/simulate_cells.hpp"
#include "greedy/eviction/budgets/budget_curve.hpp"

namespace subevict::cli {

/// Mean retained mass per (series, budget value): the sum over head groups and their count.
using Aggregate = std::map<std::pair<std::string, double>, std::pair<double, int>>;

/// The means of the cells, and per (policy, budget value) the heads the policy did not compress.
struct CellMeans {
  /// Per (series, budget value): every trace's policy, "OPT" where the optimum is exact, "sum_U"
  /// where the oracle ran and, when `certified`, "OPT_lower" and "OPT_upper" from the intervals;
  /// each term a cell's total divided by the group size and the tokens.
  Aggregate mean;
  std::map<std::pair<std::string, double>, int> uncompressed;
};

/// The means of `cells` (summed in the order of `cells`); `certified`: --optimum certified.
CellMeans cell_means(const std::vector<Cell>& cells, bool certified);

/// Per (series, k) of --budget-curve: the mean over heads of OPT(k) / n (series "OPT" where every
/// head's point is exact, else "OPT_lower" and "OPT_upper" from the certified intervals); empty
/// for no curves.
Aggregate budget_curve_means(const std::vector<greedy::BudgetCurve>& curves);

/// The "aggregate" list of results.json: per (series, budget) in key order, {policy, budget,
/// mean_retained_mass, heads, uncompressed_heads}.
nlohmann::json means_json(const CellMeans& means);

}  // namespace subevict::cli
