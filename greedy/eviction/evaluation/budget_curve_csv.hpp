#pragma once
/// \file
/// budget_curve.csv, the file `simulate --budget-curve K` writes and `allocate` reads: a header
///   layer,kv_head,budget_size,optimum_lower_bound,optimum_upper_bound,status,curve_seconds
/// then one row per (head, budget k = 1..K), heads in the order given, the optimum per query head
/// of the group (the group's value divided by its query heads) in 17 significant digits (exact),
/// status "optimal" (lower = upper = OPT(k)) or "feasible" (a certified interval).

#include <string>
#include <vector>

#include "greedy/eviction/evaluation/budget_curve.hpp"

namespace subevict::greedy {

/// The CSV text of `curves`.
[[nodiscard]] std::string budget_curve_csv(const std::vector<BudgetCurve>& curves);

/// One head's curve as read back: OPT(k) per query head for k = 1..K (the lower bounds), and
/// whether every point was exact.
struct ReadBudgetCurve {
  int layer = 0, kv_head = 0;
  std::vector<double> lower, upper;  ///< [k − 1]
  bool exact = true;                 ///< every point's status "optimal"
};

/// The curves of the budget_curve.csv at `path`, heads in file order. Throws InputError naming
/// the file (and the line) when it cannot be read, its header differs, a row has the wrong number
/// of fields, a field does not parse or is not finite, a status is unknown, or a head's budgets are
/// not 1, 2, ..., K in consecutive rows.
[[nodiscard]] std::vector<ReadBudgetCurve> read_budget_curve_csv(const std::string& path);

}  // namespace subevict::greedy
