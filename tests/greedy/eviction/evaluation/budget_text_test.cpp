// Budgets as users write them (head_evaluation.hpp parse_budget_value / parse_budget_list): the one
// parser behind `simulate --budget(s)` and the Python package's parse_budgets (the closed loop's
// --budgets).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/input_error.hpp"
#include "greedy/eviction/evaluation/head_evaluation.hpp"

namespace subevict::greedy {
namespace {

TEST(BudgetText, ReadsRatiosAndSizesAsBudgetFromValueTakesThem) {
  EXPECT_EQ(parse_budget_value("0.2", "t"), 0.2);
  EXPECT_EQ(parse_budget_value(" 64 ", "t"), 64.0);
  EXPECT_EQ(parse_budget_value("1e2", "t"), 100.0);
  EXPECT_EQ(parse_budget_value("2147483647", "t"), 2147483647.0);
  EXPECT_EQ(parse_budget_list("0.05,0.1, 64", "t"), (std::vector<double>{0.05, 0.1, 64.0}));
  EXPECT_EQ(parse_budget_list("0.5,,8,", "t"), (std::vector<double>{0.5, 8.0}));  // empty items skipped
  EXPECT_TRUE(parse_budget_list("", "t").empty());
  EXPECT_TRUE(parse_budget_list(" , ", "t").empty());
}

TEST(BudgetText, RefusesEachBadItemNamingItAndTheField) {
  // Non-finite (the closed loop's script once crashed on "inf"), beyond double's range, zero,
  // negative, a non-integer size, beyond INT_MAX, text, trailing text.
  for (const std::string bad : {"inf", "-inf", "nan", "1e400", "0", "-0.5", "2.5", "3e9", "ten", "0.1x", "1,2"}) {
    try {
      (void)parse_budget_value(bad, "closed_loop", "--budgets");
      ADD_FAILURE() << bad << " accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), "closed_loop: --budgets: expected " + std::string(kBudgetExpectation) +
                                           ", got " + bad);
    }
  }
  try {
    (void)parse_budget_list("0.1,inf,0.2", "simulate");
    ADD_FAILURE() << "inf accepted in a list";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "simulate: budget: expected " + std::string(kBudgetExpectation) + ", got inf");
  }
}

}  // namespace
}  // namespace subevict::greedy
