// Tests greedy/functions/budget_additive.hpp: the cap, incremental updates, bad input.
#include "greedy/functions/budget_additive.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <stdexcept>

#include "core/tolerance.hpp"
#include "tests/greedy/random_instances.hpp"

namespace subevict::greedy {
namespace {

TEST(BudgetAdditive, CapsTheSumAtTheBudget) {
  const BudgetAdditive f({2.0, 3.0, 4.0}, 6.0);
  const std::vector<Element> two{0, 1};
  const std::vector<Element> all{0, 1, 2};
  EXPECT_EQ(f.evaluate(two), 5.0);
  EXPECT_EQ(f.evaluate(all), 6.0);
  auto state = f.empty_state();
  state->add(2);
  EXPECT_EQ(state->gain(1), 2.0);  // min(6, 7) − 4
  state->add(1);
  state->remove(2);
  EXPECT_EQ(state->value(), 3.0);
}

TEST(BudgetAdditive, RejectsNegativeWeightsAndBudgets) {
  EXPECT_THROW(BudgetAdditive({-1.0}, 1.0), std::invalid_argument);
  EXPECT_THROW(BudgetAdditive({1.0}, -1.0), std::invalid_argument);
}

RC_GTEST_PROP(BudgetAdditive, IncrementalGainsMatchScratch, ()) {
  const auto n = *rc::gen::inRange<std::size_t>(1, 10);
  testing::check_incremental_gains(*testing::random_instance(testing::Family::kBudgetAdditive, n),
                                   Tol<double>::kValue);
}

}  // namespace
}  // namespace subevict::greedy
