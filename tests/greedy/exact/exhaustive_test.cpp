// Tests greedy/exact/exhaustive.hpp against an independent bitmask enumeration through
// SetFunction::evaluate, the subset count against closed forms, and the refusal limit.
#include "greedy/exact/exhaustive.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <limits>
#include <stdexcept>

#include "core/tolerance.hpp"
#include "greedy/functions/attention_fidelity.hpp"
#include "greedy/functions/modular.hpp"
#include "tests/greedy/random_instances.hpp"

namespace subevict::greedy {
namespace {

/// max_{|S| ≤ k} f(S) over all bitmasks, each evaluated from scratch.
double brute_force(const SetFunction& f, std::size_t k) {
  const std::size_t n = f.ground_size();
  double best = -std::numeric_limits<double>::infinity();
  for (unsigned mask = 0; mask < (1u << n); ++mask) {
    if (std::size_t(std::popcount(mask)) > k) continue;
    std::vector<Element> set;
    for (Element e = 0; e < n; ++e) {
      if ((mask >> e) & 1u) set.push_back(e);
    }
    best = std::max(best, f.evaluate(set));
  }
  return best;
}

RC_GTEST_PROP(Exhaustive, MatchesBitmaskEnumeration, ()) {
  const auto f = testing::random_submodular(9);
  const auto k = *rc::gen::inRange<std::size_t>(0, f->ground_size() + 1);
  const Selection opt = exhaustive_optimum(*f, {k});
  RC_ASSERT(opt.optimal);
  RC_ASSERT(opt.set.size() <= k);
  RC_ASSERT(near(opt.value, brute_force(*f, k), Tol<double>::sum(f->ground_size())));
  RC_ASSERT(near(opt.value, f->evaluate(opt.set), Tol<double>::sum(f->ground_size())));
  RC_ASSERT(opt.nodes == count_subsets_up_to(f->ground_size(), k));
}

TEST(Exhaustive, HandlesNonMonotoneFunctionsOverEverySize) {
  // f(∅) = 0 is the best: every weight is negative.
  const Modular f({-1.0, -2.0, -0.5});
  const Selection opt = exhaustive_optimum(f, {2});
  EXPECT_TRUE(opt.set.empty());
  EXPECT_EQ(opt.value, 0.0);
}

TEST(Exhaustive, TiesGoToTheLexicographicallySmallestSet) {
  const Modular f({1.0, 2.0, 1.0, 2.0});
  EXPECT_EQ(exhaustive_optimum(f, {2}).set, (std::vector<Element>{1, 3}));
  EXPECT_EQ(exhaustive_optimum(f, {3}).set, (std::vector<Element>{0, 1, 3}));
}

TEST(Exhaustive, CountsSubsetsAndRefusesLargeInstances) {
  EXPECT_EQ(count_subsets_up_to(5, 5), 32u);
  EXPECT_EQ(count_subsets_up_to(10, 2), 1u + 10u + 45u);
  EXPECT_EQ(count_subsets_up_to(200, 100), std::numeric_limits<std::uint64_t>::max());
  const Modular f(std::vector<double>(40, 1.0));
  EXPECT_THROW((void)exhaustive_optimum(f, {20}), std::invalid_argument);
  EXPECT_THROW((void)exhaustive_optimum(f, {41}), std::invalid_argument);
  ExhaustiveOptions options{3, 100};
  EXPECT_THROW((void)exhaustive_optimum(f, options), std::invalid_argument);
}

}  // namespace
}  // namespace subevict::greedy
