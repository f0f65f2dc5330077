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

/// How far an increment may exceed the smallest one before it (or a value fall below the one
/// before it) and still count as concave (nondecreasing): rounding of the optimum's values (double
/// sums of at most n² attention weights) relative to the curve's scale.
[[nodiscard]] double concavity_slack(const std::vector<double>& curve);

/// The first budget k ≥ 2 at which curve[k − 1] falls below curve[k − 2] by more than
/// concavity_slack(curve), or 0 when there is none: an optimum's curve OPT(k) never decreases
/// (a larger cache can keep what a smaller one keeps).
[[nodiscard]] int first_decrease(const std::vector<double>& curve);

/// The largest budget one of `heads` heads (≥ 1) of n tokens can get in a static split of `total`
/// slots (≥ heads): n, and T − (H − 1), the others keeping one slot each. How long the curves an
/// allocation reads must be.
[[nodiscard]] constexpr int largest_static_budget(int n, long long total, long long heads) {
  return int(total - (heads - 1) < n ? total - (heads - 1) : n);
}

/// The optimal static allocation of `total` slots over the heads of `curves`, curves[h][k − 1] =
/// OPT_h(k) for k = 1..K_h (K_h = curves[h].size(), the largest budget head h may get). Throws
/// InputError (source `source`) when there is no head, a curve is empty or not finite, total is
/// outside [H, Σ_h K_h], or a curve is not nondecreasing and concave within concavity_slack (naming
/// the head and the budget): the marginal rule is exact only for concave curves. Concave means
/// every increment at most the smallest one before it plus one slack (not merely the previous one
/// plus a slack, which increments growing by just under the slack at every step would pass). Time
/// O(T log H), memory O(H).
[[nodiscard]] BudgetAllocation allocate_budget(const std::vector<std::vector<double>>& curves, long long total,
                                               const std::string& source = "allocation");

/// The optimal allocation of `total` slots when every head of a layer keeps the same budget
/// (PyramidKV's question: how much each layer gets): head h belongs to layer group[h] (groups
/// numbered 0..G−1, every one non-empty and of the same size S, every curve of the same length K),
/// layer g's curve is Σ_{h in g} OPT_h(k), concave as a sum of concave curves, and a unit of a
/// layer's budget costs S slots, so allocate_budget over the layer curves with total / S units is
/// exact. Returns the per-head budgets (each head its layer's). Throws InputError as
/// allocate_budget, and for groups that are out of range, empty or of different sizes, curves of
/// different lengths, or a total that is not a multiple of S.
[[nodiscard]] BudgetAllocation allocate_layer_budgets(const std::vector<std::vector<double>>& curves,
                                                      const std::vector<int>& group, long long total,
                                                      const std::string& source = "allocation");

/// The optimal split of the heads into two classes (DuoAttention's question): a head keeps either
/// `low` slots (a streaming head) or the curves' largest budget K (a full head), and at most
/// `total` slots are used. With m full heads, m = ⌊(total − H·low) / (K − low)⌋ at most, the value
/// Σ OPT_h(low) + Σ_{full} (OPT_h(K) − OPT_h(low)) is largest for the m heads with the largest
/// gains OPT_h(K) − OPT_h(low) (ties to the lower head), so taking the largest m is exact. Slots
/// left over (total − H·low − m(K − low)) stay unused. The rule fills m heads whatever their gain,
/// so it is exact for nondecreasing curves only (no concavity needed). Throws InputError for curves
/// of different lengths, not finite or decreasing (first_decrease, naming the head and the
/// budget), low outside [1, K − 1], or total outside [H·low, H·K].
[[nodiscard]] BudgetAllocation allocate_two_classes(const std::vector<std::vector<double>>& curves, int low,
                                                    long long total, const std::string& source = "allocation");

}  // namespace subevict::greedy
