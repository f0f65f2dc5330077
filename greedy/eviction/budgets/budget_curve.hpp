#pragma once
/// \file
/// The budget curve of one (layer, KV head): the exact offline optimum OPT(k) for every budget
/// k = 1..K by successive shortest paths (shortest_path_curve.hpp), or, with a relative gap, a
/// certified interval per budget from one implicit_flow_optima call (implicit_flow.hpp: one
/// simplex raised budget by budget). OPT(k) is nondecreasing and concave in k (min-cost flow in
/// the amount of flow), which is what the curve shows.

#include <functional>
#include <string>
#include <vector>

#include "core/workload.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"

namespace subevict::greedy {

/// One budget of the curve, on the group's summed attention (the scale of HeadEvaluation::optimum).
struct BudgetCurvePoint {
  int budget = 0;
  double value = 0.0;        ///< OPT(k) (kOptimal) or the value of a feasible schedule (kFeasible)
  double upper_bound = 0.0;  ///< certified: value ≤ OPT(k) ≤ upper_bound
  ScheduleStatus status = ScheduleStatus::kOptimal;
};

struct BudgetCurve {
  int layer = 0, kv_head = 0, heads = 1, tokens = 0;
  std::string head_sha256;               ///< head_group_sha256 of the group the curve is of
  std::vector<BudgetCurvePoint> points;  ///< budgets 1..K in order
  double seconds = 0.0;                  ///< gains and solves together
};

/// OPT(k) for k = 1..max_budget of (layer, kv_head) of `workload`, the gains stored as
/// evaluate_head_budgets stores them (double up to kDoubleGainsTokens tokens, float beyond).
/// relative_gap = 0: exact (status kOptimal at every budget); > 0: each budget stops at that gap.
/// `on_points` (may be empty) is called after each budget with the number of budgets done (with
/// threads > 1, from the curve's threads, one call at a time). `threads`: the exact curve's runs of
/// budgets (ShortestPathCurveOptions::threads; a gap > 0 runs on one).
/// Throws InputError for max_budget outside [1, tokens], more than kStoredGainsTokens tokens, a
/// gap that is negative or not finite, or threads < 1;
/// std::out_of_range for a layer or head outside the workload.
[[nodiscard]] BudgetCurve optimum_budget_curve(const Workload& workload, int layer, int kv_head, int max_budget,
                                               double relative_gap = 0.0,
                                               const std::function<void(int)>& on_points = {}, int threads = 1);

}  // namespace subevict::greedy
