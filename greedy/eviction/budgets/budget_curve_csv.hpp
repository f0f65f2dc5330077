#pragma once
/// \file
/// budget_curve.csv, the file `simulate --budget-curve K` writes and `allocate` and
/// `simulate --share --curves` read: a header
///   layer,kv_head,budget_size,optimum_lower_bound,optimum_upper_bound,status,curve_seconds,tokens,head_sha256
/// then one row per (head, budget k = 1..K), heads in the order given, the optimum per query head
/// of the group (the group's value divided by its query heads) in 17 significant digits (exact),
/// status "optimal" (lower = upper = OPT(k)) or "feasible" (a certified interval), and the
/// workload the curve belongs to: its tokens n and the head's head_group_sha256 (the same on every
/// row of a head). A curve holds only for the tensors it was computed on; check_curve_workload
/// refuses it for any other head.

#include <string>
#include <vector>

#include "greedy/eviction/budgets/budget_curve.hpp"
#include "greedy/eviction/process/head_group.hpp"

namespace subevict::greedy {

/// The CSV text of `curves`.
[[nodiscard]] std::string budget_curve_csv(const std::vector<BudgetCurve>& curves);

/// One head's curve as read back: OPT(k) per query head for k = 1..K (the lower bounds), whether
/// every point was exact, the workload it was computed on, and where its rows are.
struct ReadBudgetCurve {
  int layer = 0, kv_head = 0;
  std::vector<double> lower, upper;  ///< [k − 1]
  bool exact = true;                 ///< every point's status "optimal"
  int tokens = 0;                    ///< n of the workload
  std::string head_sha256;           ///< head_group_sha256 of the group
  std::vector<int> lines;            ///< [k − 1]: the file's line (1-based) of budget k
};

/// The curves of the budget_curve.csv at `path`, heads in file order. Throws InputError naming
/// the file (and the line) when it cannot be read, its header differs (the header of a file
/// written before the tokens and head_sha256 columns is refused with the advice to regenerate it),
/// a row has the wrong number of fields, a field does not parse or is not finite, a status is
/// unknown, a head's budgets are not 1, 2, ..., K in consecutive rows or exceed its tokens, a
/// head's rows appear twice, its tokens or head_sha256 change within its rows, its tokens differ
/// from the first head's (curves of several workloads in one file), or an exact
/// head's OPT(k) decreases (first_decrease, naming the row).
[[nodiscard]] std::vector<ReadBudgetCurve> read_budget_curve_csv(const std::string& path);

/// Throws InputError naming `path`, the curve's first row, its head and both values unless
/// `curve` was computed on `group`: the same tokens and head_group_sha256 (curves of another
/// workload, or of another head, give a wrong optimum without any other sign).
void check_curve_workload(const ReadBudgetCurve& curve, const HeadGroup& group, const std::string& path);

}  // namespace subevict::greedy
