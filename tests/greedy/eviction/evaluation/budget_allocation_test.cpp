// Tests greedy/eviction/evaluation/budget_allocation.hpp: the marginal allocation against an
// exhaustive dynamic program over heads and budgets (an independent exact reference), on random
// concave curves and on the budget curves of real optimum solves; the refusal of curves the rule
// is not exact for.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

#include "core/generator.hpp"
#include "core/input_error.hpp"
#include "greedy/eviction/evaluation/budget_allocation.hpp"
#include "greedy/eviction/evaluation/budget_curve.hpp"

namespace subevict::greedy {
namespace {

/// max Σ_h curves[h][k_h − 1] over 1 ≤ k_h ≤ K_h with Σ k_h = total, by dynamic programming over
/// heads (no concavity assumed). −inf when infeasible.
double exhaustive_best(const std::vector<std::vector<double>>& curves, int total) {
  const double none = -std::numeric_limits<double>::infinity();
  std::vector<double> best(std::size_t(total) + 1, none);
  best[0] = 0.0;
  for (const std::vector<double>& curve : curves) {
    std::vector<double> next(best.size(), none);
    for (int used = 0; used <= total; ++used) {
      if (best[std::size_t(used)] == none) continue;
      for (int k = 1; k <= int(curve.size()) && used + k <= total; ++k) {
        next[std::size_t(used + k)] = std::max(next[std::size_t(used + k)], best[std::size_t(used)] + curve[std::size_t(k - 1)]);
      }
    }
    best = std::move(next);
  }
  return best[std::size_t(total)];
}

/// A random nondecreasing concave curve of K points: positive decreasing increments.
std::vector<double> concave_curve() {
  const int k = *rc::gen::inRange(1, 12);
  std::vector<double> steps = *rc::gen::container<std::vector<double>>(
      std::size_t(k - 1), rc::gen::map(rc::gen::inRange(0, 1000), [](int x) { return x / 100.0; }));
  std::sort(steps.rbegin(), steps.rend());
  std::vector<double> curve = {double(*rc::gen::inRange(0, 50))};
  for (double s : steps) curve.push_back(curve.back() + s);
  return curve;
}

void check_allocation(const std::vector<std::vector<double>>& curves, int total) {
  const BudgetAllocation a = allocate_budget(curves, total);
  RC_ASSERT(a.budgets.size() == curves.size());
  RC_ASSERT(std::accumulate(a.budgets.begin(), a.budgets.end(), 0LL) == total);
  double value = 0.0;
  for (std::size_t h = 0; h < curves.size(); ++h) {
    RC_ASSERT(a.budgets[h] >= 1 && a.budgets[h] <= int(curves[h].size()));
    value += curves[h][std::size_t(a.budgets[h]) - 1];
  }
  RC_ASSERT(std::abs(value - a.value) <= 1e-9 * std::max(1.0, value));
  const double best = exhaustive_best(curves, total);
  RC_ASSERT(std::abs(a.value - best) <= 1e-9 * std::max(1.0, best));
}

RC_GTEST_PROP(BudgetAllocation, MarginalRuleEqualsExhaustiveSearchOnConcaveCurves, ()) {
  std::vector<std::vector<double>> curves;
  const int heads = *rc::gen::inRange(1, 6);
  int capacity = 0;
  for (int h = 0; h < heads; ++h) {
    curves.push_back(concave_curve());
    capacity += int(curves.back().size());
  }
  check_allocation(curves, *rc::gen::inRange(heads, capacity + 1));
}

TEST(BudgetAllocation, OnTheBudgetCurvesOfRealOptimaItEqualsExhaustiveSearchAndBeatsUniform) {
  WorkloadSpec spec = spec_from_preset("tiny-gqa", 48, 2, 9);
  const Workload w = generate_workload(spec);
  std::vector<std::vector<double>> curves;
  for (int layer = 0; layer < 2; ++layer) {
    for (int kv = 0; kv < w.shape().kv_heads; ++kv) {
      const BudgetCurve curve = optimum_budget_curve(w, layer, kv, 24);
      std::vector<double> values;
      for (const BudgetCurvePoint& p : curve.points) values.push_back(p.value);
      curves.push_back(values);
    }
  }
  for (int total : {4, 9, 20, 40, 96}) {
    const BudgetAllocation a = allocate_budget(curves, total);
    const double best = exhaustive_best(curves, total);
    EXPECT_NEAR(a.value, best, 1e-9 * best) << "total " << total;
    if (total % 4 == 0) {
      double uniform = 0.0;
      for (const auto& c : curves) uniform += c[std::size_t(total / 4) - 1];
      EXPECT_GE(a.value, uniform - 1e-9 * uniform) << "total " << total;
    }
  }
}

TEST(BudgetAllocation, RefusesCurvesTheMarginalRuleIsNotExactFor) {
  // Not concave: head 0 gains nothing from its 2nd slot but 10 from its 3rd. With 4 slots over
  // two heads the marginal rule gives both extra slots to head 1 (1 and 0.5 > 0): 1.5; the
  // exhaustive optimum gives head 0 three: 10. The refusal is what keeps the result exact.
  const std::vector<std::vector<double>> curves = {{0.0, 0.0, 10.0}, {0.0, 1.0, 1.5}};
  EXPECT_DOUBLE_EQ(exhaustive_best(curves, 4), 10.0);  // the marginal rule would stop at 1.5
  try {
    (void)allocate_budget(curves, 4, "test");
    FAIL() << "accepted a non-concave curve";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("curve of head 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("k = 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)allocate_budget({{1.0, 0.5}}, 2), InputError);  // decreasing
  EXPECT_THROW((void)allocate_budget({}, 1), InputError);
  EXPECT_THROW((void)allocate_budget({{}}, 1), InputError);
  EXPECT_THROW((void)allocate_budget({{1.0}, {std::numeric_limits<double>::quiet_NaN()}}, 2), InputError);
  EXPECT_THROW((void)allocate_budget({{1.0, 2.0}, {1.0}}, 1), InputError);  // fewer slots than heads
  EXPECT_THROW((void)allocate_budget({{1.0, 2.0}, {1.0}}, 4), InputError);  // more than the curves reach
  EXPECT_NO_THROW((void)allocate_budget({{1.0, 2.0}, {1.0}}, 3));
}

}  // namespace
}  // namespace subevict::greedy
