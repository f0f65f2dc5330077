// Tests greedy/optimizers/lazy_greedy.hpp: the same set, order and value as naive greedy on every submodular
// family (including exact ties, which the dyadic instances produce often), fewer oracle calls,
// and a valid online bound.
#include "greedy/optimizers/lazy_greedy.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <stdexcept>

#include "core/tolerance.hpp"
#include "greedy/exact/exhaustive.hpp"
#include "greedy/functions/modular.hpp"
#include "greedy/optimizers/naive_greedy.hpp"
#include "tests/greedy/random_instances.hpp"

namespace subevict::greedy {
namespace {

RC_GTEST_PROP(LazyGreedy, EqualsNaiveGreedy, ()) {
  const auto f = testing::random_submodular(12);
  const auto k = *rc::gen::inRange<std::size_t>(0, f->ground_size() + 1);
  const Selection naive = naive_greedy(*f, {k});
  const Selection lazy = lazy_greedy(*f, {k});
  RC_ASSERT(lazy.set == naive.set);
  RC_ASSERT(lazy.value == naive.value);
  RC_ASSERT(lazy.oracle_calls <= naive.oracle_calls);
}

RC_GTEST_PROP(LazyGreedy, BoundIsAtLeastOpt, ()) {
  const auto f = testing::random_submodular(8);
  const auto k = *rc::gen::inRange<std::size_t>(1, std::min<std::size_t>(f->ground_size(), 4) + 1);
  const double opt = exhaustive_optimum(*f, {k}).value;
  RC_ASSERT(lazy_greedy(*f, {k}).upper_bound >=
            opt - Tol<double>::sum(f->ground_size()) * std::max(1.0, opt));
}

TEST(LazyGreedy, TiesGoToTheLowestIndex) {
  const Modular f({1.0, 3.0, 3.0, 2.0, 3.0});
  EXPECT_EQ(lazy_greedy(f, {3}).set, (std::vector<Element>{1, 2, 4}));
}

TEST(LazyGreedy, RejectsKAboveN) {
  EXPECT_THROW((void)lazy_greedy(Modular({1.0}), {2}), std::invalid_argument);
}

}  // namespace
}  // namespace subevict::greedy
