// Tests greedy/optimizers/stochastic_greedy.hpp: the sample size formula, reproducibility from the seed,
// equality with naive greedy when the sample covers every candidate, bad input.
#include "greedy/optimizers/stochastic_greedy.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <stdexcept>

#include "greedy/functions/modular.hpp"
#include "greedy/optimizers/naive_greedy.hpp"
#include "tests/greedy/random_instances.hpp"

namespace subevict::greedy {
namespace {

TEST(StochasticGreedy, SampleSizeIsCeilNOverKLogOneOverEpsilon) {
  EXPECT_EQ(stochastic_sample_size(1000, 10, 0.01), std::size_t(std::ceil(100 * std::log(100.0))));
  EXPECT_EQ(stochastic_sample_size(10, 10, std::exp(-1.0)), 1u);
  EXPECT_THROW((void)stochastic_sample_size(10, 2, 0.0), std::invalid_argument);
  EXPECT_THROW((void)stochastic_sample_size(10, 2, 1.0), std::invalid_argument);
}

RC_GTEST_PROP(StochasticGreedy, IsReproducibleFromTheSeed, ()) {
  const auto f = testing::random_submodular(12);
  const auto k = *rc::gen::inRange<std::size_t>(1, f->ground_size() + 1);
  const StochasticGreedyOptions options{k, 0.3, *rc::gen::arbitrary<std::uint64_t>()};
  const Selection a = stochastic_greedy(*f, options);
  const Selection b = stochastic_greedy(*f, options);
  RC_ASSERT(a.set == b.set);
  RC_ASSERT(a.set.size() == k);
  RC_ASSERT(a.value == b.value);
}

RC_GTEST_PROP(StochasticGreedy, EqualsNaiveGreedyWhenTheSampleCoversEverything, ()) {
  const auto f = testing::random_submodular(10);
  const auto k = *rc::gen::inRange<std::size_t>(1, 4);
  RC_PRE(k <= f->ground_size());
  // ln(1/ε) ≥ k makes (n/k) ln(1/ε) ≥ n: every remaining candidate is evaluated.
  const StochasticGreedyOptions options{k, std::exp(-double(k)) * 0.5,
                                        *rc::gen::arbitrary<std::uint64_t>()};
  const Selection stochastic = stochastic_greedy(*f, options);
  const Selection naive = naive_greedy(*f, {k});
  RC_ASSERT(stochastic.set == naive.set);
  RC_ASSERT(stochastic.value == naive.value);
}

TEST(StochasticGreedy, DifferentSeedsExploreDifferentSamples) {
  std::vector<double> weights(200);
  for (std::size_t j = 0; j < weights.size(); ++j) weights[j] = double(j % 17);
  const Modular f(weights);
  const Selection a = stochastic_greedy(f, {5, 0.5, 1});
  const Selection b = stochastic_greedy(f, {5, 0.5, 2});
  EXPECT_NE(a.set, b.set);
  EXPECT_EQ(a.oracle_calls, 5 * stochastic_sample_size(200, 5, 0.5));
}

TEST(StochasticGreedy, RejectsKAboveN) {
  EXPECT_THROW((void)stochastic_greedy(Modular({1.0}), {2, 0.1, 0}), std::invalid_argument);
}

}  // namespace
}  // namespace subevict::greedy
