// Tests greedy/functions/concave.hpp and greedy/functions/concave_over_modular.hpp: h by name, f(∅) = 0 with the
// h(0) shift, closed-form values, incremental updates, bad input.
#include "greedy/functions/concave_over_modular.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <stdexcept>

#include "core/input_error.hpp"
#include "core/tolerance.hpp"
#include "tests/greedy/random_instances.hpp"

namespace subevict::greedy {
namespace {

TEST(Concave, NamesRoundTripAndValuesMatchTheFormulas) {
  for (Concave h : {Concave::kIdentity, Concave::kSqrt, Concave::kLog}) {
    EXPECT_EQ(parse_concave(concave_name(h)), h);
  }
  EXPECT_THROW((void)parse_concave("cube"), InputError);
  EXPECT_EQ(concave_value(Concave::kIdentity, 3.0), 3.0);
  EXPECT_EQ(concave_value(Concave::kSqrt, 3.0), 2.0);
  EXPECT_TRUE(near(concave_value(Concave::kLog, std::exp(2.0) - 1.0), 2.0, Tol<double>::kValue));
}

TEST(ConcaveOverModular, SubtractsHOfZeroSoTheEmptySetIsZero) {
  const ConcaveOverModular f({3.0, 5.0}, Concave::kSqrt);
  EXPECT_EQ(f.evaluate({}), 0.0);
  const std::vector<Element> both{0, 1};
  EXPECT_EQ(f.evaluate(both), 2.0);  // sqrt(8 + 1) − sqrt(1)
  auto state = f.empty_state();
  EXPECT_EQ(state->value(), 0.0);
  EXPECT_EQ(state->gain(0), 1.0);  // sqrt(4) − 1
  EXPECT_EQ(f.name(), "concave-over-modular-sqrt");
}

TEST(ConcaveOverModular, RejectsNegativeWeights) {
  EXPECT_THROW(ConcaveOverModular({1.0, -0.5}, Concave::kLog), std::invalid_argument);
}

RC_GTEST_PROP(ConcaveOverModular, IncrementalGainsMatchScratchForEveryH, ()) {
  const auto n = *rc::gen::inRange<std::size_t>(1, 10);
  for (auto family : {testing::Family::kIdentity, testing::Family::kSqrt, testing::Family::kLog}) {
    testing::check_incremental_gains(*testing::random_instance(family, n), Tol<double>::kValue);
  }
}

}  // namespace
}  // namespace subevict::greedy
