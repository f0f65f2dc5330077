// Tests greedy/optimizers/naive_greedy.hpp: the Nemhauser–Wolsey–Fisher guarantee against the exhaustive
// optimum for every submodular family, the online bound as a certificate, ties, bad input.
#include "greedy/optimizers/naive_greedy.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <stdexcept>

#include "core/tolerance.hpp"
#include "greedy/exact/exhaustive.hpp"
#include "greedy/functions/modular.hpp"
#include "tests/greedy/random_instances.hpp"

namespace subevict::greedy {
namespace {

/// Rounding allowance for values that are sums of n dyadic terms pushed through one concave h.
double slack(const SetFunction& f, double opt) {
  return Tol<double>::sum(f.ground_size()) * std::max(1.0, std::abs(opt));
}

RC_GTEST_PROP(NaiveGreedy, ReachesTheNwfFractionOfTheExhaustiveOptimum, ()) {
  const auto f = testing::random_submodular(9);
  const auto k = *rc::gen::inRange<std::size_t>(1, std::min<std::size_t>(f->ground_size(), 4) + 1);
  const Selection greedy = naive_greedy(*f, {k});
  const Selection opt = exhaustive_optimum(*f, {k});
  const double fraction = 1.0 - std::pow(1.0 - 1.0 / double(k), double(k));
  RC_ASSERT(greedy.set.size() == k);
  RC_ASSERT(near(greedy.value, f->evaluate(greedy.set), Tol<double>::kValue));
  RC_ASSERT(greedy.value >= fraction * opt.value - slack(*f, opt.value));
  RC_ASSERT(greedy.value <= opt.value + slack(*f, opt.value));
  // The online bound certifies: OPT ≤ upper_bound.
  RC_ASSERT(greedy.upper_bound >= opt.value - slack(*f, opt.value));
}

TEST(NaiveGreedy, TiesGoToTheLowestIndexAndCallsAreCounted) {
  const Modular f({1.0, 3.0, 3.0, 2.0, 3.0});
  const Selection s = naive_greedy(f, {2});
  EXPECT_EQ(s.set, (std::vector<Element>{1, 2}));
  EXPECT_EQ(s.value, 6.0);
  EXPECT_EQ(s.upper_bound, 6.0);            // modular: the bound is tight
  EXPECT_EQ(s.oracle_calls, 5u + 4u + 3u);  // two steps plus the final bound
}

TEST(NaiveGreedy, StopsAtNonPositiveGainsOnlyWhenAsked) {
  const Modular f({2.0, -1.0, 0.0});
  EXPECT_EQ(naive_greedy(f, {3}).set.size(), 3u);
  NaiveGreedyOptions options{3, true};
  EXPECT_EQ(naive_greedy(f, options).set, (std::vector<Element>{0}));
  EXPECT_EQ(naive_greedy(f, {3}).upper_bound, std::numeric_limits<double>::infinity());
}

TEST(NaiveGreedy, RejectsKAboveN) {
  const Modular f({1.0, 2.0});
  EXPECT_THROW((void)naive_greedy(f, {3}), std::invalid_argument);
  EXPECT_TRUE(naive_greedy(f, {0}).set.empty());
}

}  // namespace
}  // namespace subevict::greedy
