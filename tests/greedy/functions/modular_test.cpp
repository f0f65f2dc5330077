// Tests greedy/functions/modular.hpp: closed-form values, incremental updates, bad weights.
#include "greedy/functions/modular.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/tolerance.hpp"
#include "tests/greedy/random_instances.hpp"

namespace subevict::greedy {
namespace {

TEST(Modular, SumsTheWeightsOfTheSet) {
  const Modular f({0.5, -2.0, 3.0});
  const std::vector<Element> set{2, 0};
  EXPECT_EQ(f.evaluate(set), 3.5);
  EXPECT_EQ(f.evaluate({}), 0.0);
  EXPECT_FALSE(f.monotone_submodular());  // a negative weight
  EXPECT_TRUE(Modular({0.0, 1.0}).monotone_submodular());
  auto state = f.empty_state();
  state->add(1);
  EXPECT_EQ(state->gain(2), 3.0);
  state->remove(1);
  EXPECT_EQ(state->value(), 0.0);
}

TEST(Modular, RejectsNonFiniteWeights) {
  EXPECT_THROW(Modular({1.0, std::numeric_limits<double>::quiet_NaN()}), std::invalid_argument);
  EXPECT_THROW(Modular({std::numeric_limits<double>::infinity()}), std::invalid_argument);
}

RC_GTEST_PROP(Modular, IncrementalGainsMatchScratch, ()) {
  const auto n = *rc::gen::inRange<std::size_t>(1, 10);
  const auto f = testing::random_instance(testing::Family::kModular, n);
  testing::check_incremental_gains(*f, Tol<double>::kValue);
}

}  // namespace
}  // namespace subevict::greedy
