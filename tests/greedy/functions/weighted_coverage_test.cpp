// Tests greedy/functions/weighted_coverage.hpp: the value on a hand-computed instance, duplicate items,
// incremental gains against scratch evaluations after random adds and removes, and validation.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <stdexcept>

#include "core/tolerance.hpp"
#include "greedy/functions/weighted_coverage.hpp"
#include "tests/greedy/random_instances.hpp"

namespace subevict::greedy {
namespace {

TEST(WeightedCoverage, SumsTheWeightsOfCoveredItems) {
  // Items 0..3 of weights 1, 2, 4, 8; the second set lists item 2 twice.
  const WeightedCoverage f({1, 2, 4, 8}, {{0, 1}, {1, 2, 2}, {3}, {}});
  EXPECT_EQ(f.ground_size(), 4u);
  EXPECT_EQ(f.set(1).size(), 2u);
  EXPECT_EQ(f.evaluate({}), 0.0);
  EXPECT_EQ(f.evaluate(std::vector<Element>{0, 1}), 7.0);
  EXPECT_EQ(f.evaluate(std::vector<Element>{1, 2, 3}), 14.0);
  auto state = f.empty_state();
  state->add(0);
  EXPECT_EQ(state->gain(1), 4.0);  // item 1 is already covered
  state->add(1);
  state->remove(0);  // item 1 stays covered by set 1
  EXPECT_EQ(state->value(), 6.0);
}

TEST(WeightedCoverage, CsrConstructorMatchesLists) {
  const WeightedCoverage lists({1, 2, 4}, {{0, 2}, {1}});
  const WeightedCoverage csr({1, 2, 4}, {0, 2, 3}, {2, 0, 1});
  for (const std::vector<Element>& s : {std::vector<Element>{0}, {1}, {0, 1}}) {
    EXPECT_EQ(lists.evaluate(s), csr.evaluate(s));
  }
}

RC_GTEST_PROP(WeightedCoverage, IncrementalGainsMatchScratchAfterAddsAndRemoves, ()) {
  const auto n = *rc::gen::inRange<std::size_t>(1, 9);
  const auto f = testing::random_instance(testing::Family::kCoverage, n);
  testing::check_incremental_gains(*f, Tol<double>::sum(n));
}

TEST(WeightedCoverage, RejectsBadWeightsItemsAndOffsets) {
  EXPECT_THROW(WeightedCoverage({1, -1}, {{0}}), std::invalid_argument);
  EXPECT_THROW(WeightedCoverage({1, std::nan("")}, {{0}}), std::invalid_argument);
  EXPECT_THROW(WeightedCoverage({1, 2}, {{0, 2}}), std::invalid_argument);
  EXPECT_THROW(WeightedCoverage({1, 2}, {0, 2, 1}, {0, 1}), std::invalid_argument);
  EXPECT_THROW(WeightedCoverage({1, 2}, {0, 1}, {0, 1}), std::invalid_argument);
}

}  // namespace
}  // namespace subevict::greedy
