// Tests greedy/optimizers/noisy_greedy.hpp: Corollary D.18 (f(S) ≥ (1 − 1/e) OPT − k (2 − 1/e) ε) against
// the exhaustive optimum for every submodular family; ε = 0 is naive greedy; bad input.
#include "greedy/optimizers/noisy_greedy.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <stdexcept>

#include "core/tolerance.hpp"
#include "greedy/exact/exhaustive.hpp"
#include "greedy/functions/modular.hpp"
#include "greedy/optimizers/naive_greedy.hpp"
#include "tests/greedy/random_instances.hpp"

namespace subevict::greedy {
namespace {

RC_GTEST_PROP(NoisyGreedy, MeetsCorollaryD18, ()) {
  const auto f = testing::random_submodular(9);
  const auto k = *rc::gen::inRange<std::size_t>(1, std::min<std::size_t>(f->ground_size(), 4) + 1);
  const double epsilon = *rc::gen::inRange(0, 33) / 8.0;  // up to 4, the scale of the weights
  const Selection noisy = noisy_greedy(*f, {k, epsilon, *rc::gen::arbitrary<std::uint64_t>()});
  const double opt = exhaustive_optimum(*f, {k}).value;
  const double e = std::exp(1.0);
  RC_ASSERT(noisy.value >= (1 - 1 / e) * opt - double(k) * (2 - 1 / e) * epsilon -
                               Tol<double>::sum(f->ground_size()) * std::max(1.0, opt));
  RC_ASSERT(near(noisy.value, f->evaluate(noisy.set), Tol<double>::kValue));
}

RC_GTEST_PROP(NoisyGreedy, WithoutNoiseIsNaiveGreedy, ()) {
  const auto f = testing::random_submodular(10);
  const auto k = *rc::gen::inRange<std::size_t>(0, f->ground_size() + 1);
  const Selection noisy = noisy_greedy(*f, {k, 0.0, 7});
  const Selection naive = naive_greedy(*f, {k});
  RC_ASSERT(noisy.set == naive.set);
  RC_ASSERT(noisy.upper_bound == naive.upper_bound);
}

TEST(NoisyGreedy, LargeNoiseChangesTheChoiceReproducibly) {
  const Modular f({1.0, 1.5, 0.0, 0.5});
  const Selection a = noisy_greedy(f, {2, 10.0, 3});
  EXPECT_EQ(a.set, noisy_greedy(f, {2, 10.0, 3}).set);
  bool differs = false;
  for (std::uint64_t seed = 0; seed < 20 && !differs; ++seed) {
    differs = noisy_greedy(f, {2, 10.0, seed}).set != naive_greedy(f, {2}).set;
  }
  EXPECT_TRUE(differs);
}

TEST(NoisyGreedy, RejectsNegativeEpsilon) {
  EXPECT_THROW((void)noisy_greedy(Modular({1.0}), {1, -0.1, 0}), std::invalid_argument);
}

}  // namespace
}  // namespace subevict::greedy
