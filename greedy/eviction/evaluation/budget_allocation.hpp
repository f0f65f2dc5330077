#pragma once
/// \file
/// The static optimal allocation of a total cache budget across heads (theory.md §5): given each
/// head's budget curve OPT_h(k) (budget_curve.hpp; nondecreasing and concave in k, since OPT_h is a
/// min-cost flow in the amount of flow) and a total T, the budgets k_h ≥ 1 with Σ_h k_h = T that
/// maximize Σ_h OPT_h(k_h). Because every curve is concave, the marginal rule is exact: start from
/// k_h = 1 and give each further slot to the head whose next increment OPT_h(k_h + 1) − OPT_h(k_h)
/// is largest (ties to the lowest head index). Each head keeps its budget fixed over time (a
/// static allocation); a cache shared over time by the heads can only do better.

#include <string>
#include <vector>

namespace subevict::greedy {

/// The allocation of a total budget.
struct BudgetAllocation {
  std::vector<int> budgets;  ///< k_h per head, ≥ 1, Σ_h k_h = total
  double value = 0.0;        ///< Σ_h OPT_h(k_h)
};

/// How far an increment may exceed the one before it and still count as concave: rounding of the
/// optimum's values (double sums of at most n² attention weights) relative to the curve's scale.
[[nodiscard]] double concavity_slack(const std::vector<double>& curve);

/// The optimal static allocation of `total` slots over the heads of `curves`, curves[h][k − 1] =
/// OPT_h(k) for k = 1..K_h (K_h = curves[h].size(), the largest budget head h may get). Throws
/// InputError (source `source`) when there is no head, a curve is empty or not finite, total is
/// outside [H, Σ_h K_h], or a curve is not nondecreasing and concave within concavity_slack (naming
/// the head and the budget): the marginal rule is exact only for concave curves. Time
/// O(T log H), memory O(H).
[[nodiscard]] BudgetAllocation allocate_budget(const std::vector<std::vector<double>>& curves, long long total,
                                               const std::string& source = "allocation");

}  // namespace subevict::greedy
