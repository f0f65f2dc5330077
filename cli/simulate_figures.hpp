#pragma once
/// \file
/// The figures of `subevict simulate` (core/plot.hpp): retained mass per step, retained mass
/// against the budget, and the gap to the optimum per policy.

#include <string>
#include <vector>

#include "cli/simulate_cells.hpp"
#include "cli/simulate_means.hpp"
#include "core/plot.hpp"

namespace subevict::cli {

/// "retained_per_step": retained mass per step at `main_budget` of every series of `names` and of
/// OPT (a centred running mean over tokens / 32 steps of the mean over the cells' head groups);
/// "retained_vs_budget" (sweep::budget_curve_figure) from `aggregate` and the budget curve's
/// `curve_points`; and, when `aggregate` has OPT at `main_budget`, "gap_to_optimum" per policy.
/// A figure without series is left out, except retained_vs_budget.
std::vector<plot::Figure> simulate_figures(const std::vector<Cell>& cells, const std::vector<std::string>& names,
                                           double main_budget, int tokens, const Aggregate& aggregate,
                                           const Aggregate& curve_points);

}  // namespace subevict::cli
