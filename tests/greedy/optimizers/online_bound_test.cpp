// Tests greedy/optimizers/online_bound.hpp: the formula on a hand-computed case, and OPT ≤ bound at every
// set of every submodular family (OPT by exhaustive search).
#include "greedy/optimizers/online_bound.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "core/tolerance.hpp"
#include "greedy/exact/exhaustive.hpp"
#include "greedy/functions/modular.hpp"
#include "tests/greedy/random_instances.hpp"

namespace subevict::greedy {
namespace {

TEST(OnlineBound, AddsTheKLargestPositiveGains) {
  const std::vector<double> gains{1.0, -2.0, 5.0, 3.0};
  EXPECT_EQ(online_bound(10.0, gains, 2), 18.0);
  EXPECT_EQ(online_bound(10.0, gains, 4), 19.0);  // the negative gain is left out
  EXPECT_EQ(online_bound(10.0, gains, 0), 10.0);
  const Modular f({1.0, 4.0, 2.0});
  auto state = f.empty_state();
  state->add(1);
  std::uint64_t calls = 0;
  EXPECT_EQ(online_bound(*state, 1, calls), 6.0);
  EXPECT_EQ(calls, 2u);
}

RC_GTEST_PROP(OnlineBound, IsAtLeastOptAtAnySet, ()) {
  const auto f = testing::random_submodular(8);
  const auto k = *rc::gen::inRange<std::size_t>(1, std::min<std::size_t>(f->ground_size(), 4) + 1);
  const double opt = exhaustive_optimum(*f, {k}).value;
  auto state = f->empty_state();
  testing::random_walk(*state, *rc::gen::inRange<std::size_t>(0, 2 * f->ground_size() + 1));
  std::uint64_t calls = 0;
  const double bound = online_bound(*state, k, calls);
  RC_ASSERT(bound >= opt - Tol<double>::sum(f->ground_size()) * std::max(1.0, opt));
}

}  // namespace
}  // namespace subevict::greedy
