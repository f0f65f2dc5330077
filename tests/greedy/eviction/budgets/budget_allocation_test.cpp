// Tests greedy/eviction/budgets/budget_allocation.hpp: the marginal allocation against an
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
#include "greedy/eviction/budgets/budget_allocation.hpp"
#include "greedy/eviction/budgets/budget_curve.hpp"

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

/// A random nondecreasing concave curve of k points: positive decreasing increments.
std::vector<double> concave_curve(int k) {
  std::vector<double> steps = *rc::gen::container<std::vector<double>>(
      std::size_t(k - 1), rc::gen::map(rc::gen::inRange(0, 1000), [](int x) { return x / 100.0; }));
  std::sort(steps.rbegin(), steps.rend());
  std::vector<double> curve = {double(*rc::gen::inRange(0, 50))};
  for (double s : steps) curve.push_back(curve.back() + s);
  return curve;
}

/// concave_curve of a random length in [1, 11].
std::vector<double> concave_curve() { return concave_curve(*rc::gen::inRange(1, 12)); }

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

TEST(BudgetAllocation, RefusesIncrementsThatDriftUpByLessThanTheSlackAtEveryStep) {
  // Head 0 starts at 1000 and each increment exceeds the one before by 0.9e-6, just under the
  // slack (1e-9 of its scale, about 1.0004e-6), so that comparing each increment with the previous
  // one alone passes it; head 1 gains 1e-4 per slot. With 1000 slots the marginal rule gives every
  // extra slot to head 1: 1000.0998, below the uniform 500 each (1000.1617), while all to head 0
  // reaches 1000.4478. Compared with the smallest increment so far, the third is already too large.
  const int length = 1000;
  std::vector<std::vector<double>> curves(2);
  for (int k = 1; k <= length; ++k) {
    curves[0].push_back(1000.0 + 0.9e-6 * double(k - 1) * double(k - 2) / 2.0);
    curves[1].push_back(1e-4 * double(k - 1));
  }
  ASSERT_LT(0.9e-6, concavity_slack(curves[0]));  // each step alone is within the slack
  EXPECT_NEAR(exhaustive_best(curves, 1000), 1000.4478, 1e-4);
  EXPECT_NEAR(curves[0][499] + curves[1][499], 1000.1617, 1e-4);
  try {
    const BudgetAllocation a = allocate_budget(curves, 1000, "test");
    FAIL() << "accepted a curve whose increments grow: allocated " << a.value << " where the optimum is "
           << exhaustive_best(curves, 1000);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("curve of head 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("concave"), std::string::npos) << e.what();
  }
}

RC_GTEST_PROP(BudgetAllocation, WhatItAcceptsItAllocatesOptimally, ()) {
  // Concave curves at a scale of 1000 whose increments drift up by up to 1.5 slacks per step:
  // a curve is either refused or allocated within the slacks its increments may add up to.
  std::vector<std::vector<double>> curves;
  const int heads = *rc::gen::inRange(1, 4);
  int capacity = 0;
  double slack = 0.0;
  for (int h = 0; h < heads; ++h) {
    std::vector<double> curve = concave_curve(*rc::gen::inRange(1, 120));
    const double drift = *rc::gen::inRange(0, 150) / 100.0 * 1e-9 * 1000.0;
    double step = 0.0;
    for (std::size_t i = 0; i < curve.size(); ++i) curve[i] = 1000.0 + curve[i] / 1000.0;
    for (std::size_t i = 1; i < curve.size(); ++i) {
      step += drift;
      for (std::size_t j = i; j < curve.size(); ++j) curve[j] += step;
    }
    slack = std::max(slack, concavity_slack(curve));
    capacity += int(curve.size());
    curves.push_back(std::move(curve));
  }
  const int total = *rc::gen::inRange(heads, capacity + 1);
  try {
    const BudgetAllocation a = allocate_budget(curves, total);
    RC_TAG("accepted");
    RC_ASSERT(a.value >= exhaustive_best(curves, total) - 2.0 * total * slack);
  } catch (const InputError&) {
    RC_TAG("refused");
    RC_SUCCEED("refused");
  }
}

/// max over per-layer budgets 1 ≤ k_g ≤ K with Σ_g S·k_g = total of Σ_h curves[h][k_{group h} − 1],
/// by enumerating every tuple of layer budgets. −inf when infeasible.
double exhaustive_layers(const std::vector<std::vector<double>>& curves, const std::vector<int>& group,
                         int groups, int per_layer, int total) {
  const int length = int(curves.front().size());
  double best = -std::numeric_limits<double>::infinity();
  std::vector<int> k(std::size_t(groups), 1);
  while (true) {
    if (per_layer * std::accumulate(k.begin(), k.end(), 0) == total) {
      double value = 0.0;
      for (std::size_t h = 0; h < curves.size(); ++h) value += curves[h][std::size_t(k[std::size_t(group[h])]) - 1];
      best = std::max(best, value);
    }
    int g = 0;
    while (g < groups && k[std::size_t(g)] == length) k[std::size_t(g++)] = 1;
    if (g == groups) return best;
    ++k[std::size_t(g)];
  }
}

RC_GTEST_PROP(BudgetAllocation, LayerBudgetsEqualExhaustiveSearchOverLayerTuples, ()) {
  const int groups = *rc::gen::inRange(1, 4), per_layer = *rc::gen::inRange(1, 4);
  const int length = *rc::gen::inRange(2, 7);
  std::vector<std::vector<double>> curves;
  std::vector<int> group;
  for (int g = 0; g < groups; ++g) {
    for (int h = 0; h < per_layer; ++h) {
      curves.push_back(concave_curve(length));
      group.push_back(g);
    }
  }
  // Heads listed in a shuffled order: a head's layer is its group, not its position.
  const std::vector<std::size_t> order = *rc::gen::unique<std::vector<std::size_t>>(
      curves.size(), rc::gen::inRange<std::size_t>(0, curves.size()));
  std::vector<std::vector<double>> shuffled;
  std::vector<int> shuffled_group;
  for (std::size_t i : order) {
    shuffled.push_back(curves[i]);
    shuffled_group.push_back(group[i]);
  }
  const int total = per_layer * *rc::gen::inRange(groups, groups * length + 1);
  const BudgetAllocation a = allocate_layer_budgets(shuffled, shuffled_group, total);
  RC_ASSERT(std::accumulate(a.budgets.begin(), a.budgets.end(), 0LL) == total);
  double value = 0.0;
  for (std::size_t h = 0; h < shuffled.size(); ++h) {
    for (std::size_t o = 0; o < shuffled.size(); ++o) {
      if (shuffled_group[o] == shuffled_group[h]) RC_ASSERT(a.budgets[o] == a.budgets[h]);  // one budget per layer
    }
    value += shuffled[h][std::size_t(a.budgets[h]) - 1];
  }
  RC_ASSERT(std::abs(value - a.value) <= 1e-9 * std::max(1.0, value));
  const double best = exhaustive_layers(shuffled, shuffled_group, groups, per_layer, total);
  RC_ASSERT(std::abs(a.value - best) <= 1e-9 * std::max(1.0, best));
  // One budget per layer is a constraint: never above the head-by-head optimal allocation.
  RC_ASSERT(a.value <= allocate_budget(shuffled, total).value + 1e-9 * std::max(1.0, best));
}

/// max over subsets F of heads with H·low + |F|·(K − low) ≤ total of the two-class value, by
/// enumerating every subset.
double exhaustive_classes(const std::vector<std::vector<double>>& curves, int low, long long total) {
  const std::size_t heads = curves.size(), length = curves.front().size();
  double best = -std::numeric_limits<double>::infinity();
  for (unsigned mask = 0; mask < (1u << heads); ++mask) {
    long long used = 0;
    double value = 0.0;
    for (std::size_t h = 0; h < heads; ++h) {
      const bool full = (mask >> h) & 1u;
      used += full ? (long long)length : low;
      value += curves[h][full ? length - 1 : std::size_t(low) - 1];
    }
    if (used <= total) best = std::max(best, value);
  }
  return best;
}

RC_GTEST_PROP(BudgetAllocation, TwoClassesEqualExhaustiveSearchOverHeadSubsets, ()) {
  const int heads = *rc::gen::inRange(1, 8), length = *rc::gen::inRange(2, 8);
  std::vector<std::vector<double>> curves;
  for (int h = 0; h < heads; ++h) {
    curves.push_back(concave_curve(length));
  }
  const int low = *rc::gen::inRange(1, length);
  const long long total = *rc::gen::inRange<long long>((long long)heads * low, (long long)heads * length + 1);
  const BudgetAllocation a = allocate_two_classes(curves, low, total);
  long long used = 0;
  for (int k : a.budgets) {
    RC_ASSERT(k == low || k == length);
    used += k;
  }
  RC_ASSERT(used <= total);
  const double best = exhaustive_classes(curves, low, total);
  RC_ASSERT(std::abs(a.value - best) <= 1e-9 * std::max(1.0, std::abs(best)));
}

TEST(BudgetAllocation, LayerAndClassFormsRefuseInputTheyAreNotExactFor) {
  const std::vector<std::vector<double>> two = {{1.0, 2.0, 2.5}, {1.0, 1.5, 1.75}};
  EXPECT_THROW((void)allocate_layer_budgets(two, {0, 1, 1}, 4), InputError);        // one layer per head
  EXPECT_THROW((void)allocate_layer_budgets(two, {0, 2}, 4), InputError);           // layer 1 empty
  EXPECT_THROW((void)allocate_layer_budgets({{1.0, 2.0}, {1.0}}, {0, 1}, 2), InputError);  // lengths differ
  EXPECT_THROW((void)allocate_layer_budgets(two, {0, 0}, 3), InputError);           // not a multiple of 2
  EXPECT_NO_THROW((void)allocate_layer_budgets(two, {0, 0}, 4));
  EXPECT_THROW((void)allocate_two_classes(two, 0, 4), InputError);                  // low < 1
  EXPECT_THROW((void)allocate_two_classes(two, 3, 6), InputError);                  // low = K
  EXPECT_THROW((void)allocate_two_classes(two, 1, 1), InputError);                  // below every head streaming
  EXPECT_THROW((void)allocate_two_classes(two, 1, 7), InputError);                  // beyond every head full
  EXPECT_DOUBLE_EQ(allocate_two_classes(two, 1, 4).value, 3.5);  // one full head: the one gaining 1.5
}

TEST(BudgetAllocation, TwoClassesRefuseADecreasingCurve) {
  // Both heads full (total 4 = 2 x K): the rule fills the m = 2 heads it can afford whatever they
  // gain, so head 1, which loses 3 from its second slot, gets it: 6, where head 0 full and head 1
  // streaming reach 9 within the same total. An optimum never decreases: the curve is refused.
  const std::vector<std::vector<double>> curves = {{3.0, 3.0}, {6.0, 3.0}};
  EXPECT_DOUBLE_EQ(exhaustive_classes(curves, 1, 4), 9.0);
  try {
    const BudgetAllocation a = allocate_two_classes(curves, 1, 4, "test");
    FAIL() << "accepted a decreasing curve: allocated " << a.value << " where 9 is reachable";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("curve of head 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nondecreasing"), std::string::npos) << e.what();
  }
  EXPECT_EQ(first_decrease(curves[1]), 2);
  EXPECT_EQ(first_decrease(curves[0]), 0);
  EXPECT_EQ(first_decrease({1000.0, 1000.0 - 0.5e-6}), 0);  // within the slack (1e-6 at 1000)
  EXPECT_EQ(first_decrease({1000.0, 1000.0, 1000.0 - 2e-6}), 3);
}

}  // namespace
}  // namespace subevict::greedy
