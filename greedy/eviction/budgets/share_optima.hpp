#pragma once
/// \file
/// The three optima of a share study (share_study.hpp) for one total budget: each head's
/// uniform OPT_h(k) and the static allocation from the budget curves, and the optimum of one cache
/// shared over time per unit (the explicit network where it fits, else the column generation),
/// with the check of their order.

#include <string>
#include <vector>

#include "core/progress.hpp"
#include "core/workload.hpp"
#include "greedy/eviction/budgets/share_plan.hpp"
#include "greedy/eviction/budgets/share_study.hpp"
#include "greedy/eviction/process/head_group.hpp"

namespace subevict::greedy {

/// The budget curves OPT_h(k), k = 1..K, per head in the optimum's units (Σ over the query heads),
/// read from `file` and checked against the heads they are applied to: InputError naming the file
/// for a curve that is not exact, of other tensors, or shorter than k (or missing).
[[nodiscard]] std::vector<std::vector<double>> read_share_curves(const std::string& file,
                                                                 const std::vector<HeadGroup>& groups,
                                                                 const ShareHeads& shares, int k);

/// The same curves computed to `largest` on `threads` workers, one progress unit per head.
[[nodiscard]] std::vector<std::vector<double>> compute_share_curves(const Workload& w, const ShareHeads& shares,
                                                                    int largest, int threads, Progress& progress);

/// The uniform and static optima of every head from `curves`, and, per unit, the shared optimum:
/// on the explicit network where it fits greedy::kExplicitSharedNetworkLimitBytes (units in
/// parallel as far as their networks fit together), else by column generation certified to a
/// relative gap of 1e-4 or stopped at options.shared_seconds, else not computed (a note says why).
[[nodiscard]] ShareOptima share_optima(const std::vector<HeadGroup>& groups, const ShareHeads& shares,
                                       const std::vector<std::vector<double>>& curves, const ShareStudy& study,
                                       const ShareStudyOptions& options, Progress& progress);

/// Refuses optima out of their order. In every unit uniform <= static <= shared (the uniform
/// budgets are one static allocation, a static allocation is one shared schedule), and the shared
/// optimum's certified bound is at least the shared optimum: a unit whose uniform optimum exceeds
/// its static one, or whose static one exceeds the shared bound, by more than 1e-9 of the larger
/// (rounding of double sums of at most n² attention weights) has optima that cannot all be right.
/// With curves read from options.curves: InputError naming the file; else std::runtime_error.
void check_share_optima_order(const ShareStudy& study, const ShareStudyOptions& options);

}  // namespace subevict::greedy
