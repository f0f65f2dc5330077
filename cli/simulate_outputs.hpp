#pragma once
/// \file
/// The files of one `subevict simulate` run from its cells: summary.csv, heads.csv, steps.csv,
/// budget_curve.csv (--budget-curve), overlap.csv and schedule_*.npy (--schedules), the figures'
/// data and scripts, and the results.json document.
///
/// Units: every mass is the mean over the g query heads of a KV head (so a step contributes at
/// most 1 and a run at most n); the optimum and the oracle are computed on the group's summed
/// attention and divided by g.

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/simulate_args.hpp"
#include "cli/simulate_cells.hpp"
#include "core/workload.hpp"
#include "greedy/eviction/budgets/budget_curve.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"

namespace subevict::cli {

/// The files of one run, by name, and the JSON document.
struct Outputs {
  std::map<std::string, std::string> files;  ///< every file but results.json
  nlohmann::json doc;                        ///< results.json
};

/// Every output of the run that computed `cells` (in the order (head, budget), run_cells) and
/// `curves` (one per head with --budget-curve, else empty) on `w` for `specs` at `budgets`
/// (ascending; `main_budget` among them) on `layers` x `kv_heads`, as `args` asked. The document
/// checks policy <= OPT <= sum U <= n on every cell (greedy::mass_order_violations) and lists what
/// breaks it.
Outputs build_outputs(const std::vector<Cell>& cells, const std::vector<greedy::BudgetCurve>& curves,
                      const std::vector<greedy::PolicySpec>& specs, const std::vector<double>& budgets,
                      double main_budget, const Workload& w, const std::vector<int>& layers,
                      const std::vector<int>& kv_heads, const SimulateArgs& args);

}  // namespace subevict::cli
