// Tests greedy/diagnostics/tight_family.hpp (theory.md §6): greedy on the tight family reaches exactly
// k^{k+1} − k (k−1)^k (ties towards the columns) or OPT = k^{k+1} (ties towards the rows); the
// tie-free variant gives M (k^{k+1} − k (k−1)^k) + k whatever the order. Values are compared as
// integers; OPT is confirmed by exhaustive search for every k.
#include "greedy/diagnostics/tight_family.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "greedy/exact/exhaustive.hpp"
#include "greedy/optimizers/lazy_greedy.hpp"
#include "greedy/optimizers/naive_greedy.hpp"
#include "greedy/functions/weighted_coverage.hpp"

namespace subevict::greedy {
namespace {

/// The value as an exact integer; fails the test when it is not integral.
std::int64_t exact(double value) {
  EXPECT_EQ(value, std::round(value)) << "value " << value << " is not integral";
  return std::int64_t(std::llround(value));
}

/// base^exponent in integers (independent of the library's closed forms).
std::int64_t power(std::int64_t base, std::size_t exponent) {
  std::int64_t result = 1;
  for (std::size_t i = 0; i < exponent; ++i) result *= base;
  return result;
}

std::vector<Element> sorted(std::vector<Element> set) {
  std::sort(set.begin(), set.end());
  return set;
}

/// Greedy (naive and lazy, which must agree) on the instance: the value as an integer, the set.
struct GreedyRun {
  std::int64_t value;
  std::vector<Element> set;
};

GreedyRun run_greedy(const TightFamily& family) {
  const WeightedCoverage f(family.weights, family.sets);
  const Selection naive = naive_greedy(f, {family.k});
  const Selection lazy = lazy_greedy(f, {family.k});
  EXPECT_EQ(lazy.set, naive.set);
  EXPECT_EQ(lazy.value, naive.value);
  return {exact(naive.value), sorted(naive.set)};
}

TEST(TightFamily, PrintedRatiosForSmallK) {
  // theory.md §6: 6/8, 57/81, 700/1024, 10505/15625 for k = 2..5.
  const std::int64_t greedy[] = {6, 57, 700, 10505};
  const std::int64_t opt[] = {8, 81, 1024, 15625};
  for (std::size_t k = 2; k <= 5; ++k) {
    const TightFamily family = tight_family(k, TieTowards::kColumns);
    EXPECT_EQ(run_greedy(family).value, greedy[k - 2]) << "k = " << k;
    EXPECT_EQ(tight_family_optimum(family), opt[k - 2]) << "k = " << k;
  }
}

TEST(TightFamily, TiesTowardsColumnsReachExactlyTheNwfFraction) {
  for (std::size_t k = 2; k <= 8; ++k) {
    const TightFamily family = tight_family(k, TieTowards::kColumns);
    const auto ki = std::int64_t(k);
    const std::int64_t k_pow = power(ki, k), km1_pow = power(ki - 1, k);
    const GreedyRun run = run_greedy(family);
    EXPECT_EQ(run.set, family.columns) << "k = " << k;
    EXPECT_EQ(run.value, k_pow * ki - ki * km1_pow) << "k = " << k;
    EXPECT_EQ(run.value, tight_family_columns_value(family));
    // value / OPT = 1 − (1 − 1/k)^k exactly: k^{k+1} − k (k−1)^k = k^{k+1} (1 − ((k−1)/k)^k).
    EXPECT_EQ(run.value * k_pow, (k_pow - km1_pow) * (k_pow * ki)) << "k = " << k;
  }
}

TEST(TightFamily, TiesTowardsRowsFindTheOptimum) {
  for (std::size_t k = 2; k <= 8; ++k) {
    const TightFamily family = tight_family(k, TieTowards::kRows);
    const GreedyRun run = run_greedy(family);
    EXPECT_EQ(run.set, family.rows) << "k = " << k;
    EXPECT_EQ(run.value, tight_family_optimum(family)) << "k = " << k;
  }
}

TEST(TightFamily, TieFreeVariantTakesTheColumnsWhateverTheOrder) {
  for (std::size_t k = 2; k <= 8; ++k) {
    for (TieTowards ties : {TieTowards::kColumns, TieTowards::kRows}) {
      const std::int64_t m = std::int64_t(k) + 1;
      const TightFamily family = tie_free_tight_family(k, m, ties);
      const auto ki = std::int64_t(k);
      const std::int64_t k_pow = power(ki, k), km1_pow = power(ki - 1, k);
      const GreedyRun run = run_greedy(family);
      EXPECT_EQ(run.set, family.columns) << "k = " << k;
      EXPECT_EQ(run.value, m * (k_pow * ki - ki * km1_pow) + ki) << "k = " << k;
      EXPECT_EQ(tight_family_optimum(family), m * k_pow * ki);
    }
  }
}

TEST(TightFamily, ExhaustiveSearchConfirmsTheOptimum) {
  for (std::size_t k = 2; k <= 8; ++k) {
    for (bool tie_free : {false, true}) {
      const TightFamily family =
          tie_free ? tie_free_tight_family(k, std::int64_t(k) + 1, TieTowards::kColumns)
                   : tight_family(k, TieTowards::kColumns);
      const WeightedCoverage f(family.weights, family.sets);
      const Selection opt = exhaustive_optimum(f, {k});
      EXPECT_EQ(exact(opt.value), tight_family_optimum(family)) << "k = " << k;
      EXPECT_EQ(opt.set, sorted(family.rows)) << "k = " << k;
    }
  }
}

TEST(TightFamily, RejectsOutOfRangeParameters) {
  EXPECT_THROW((void)tight_family(1, TieTowards::kRows), std::invalid_argument);
  EXPECT_THROW((void)tight_family(9, TieTowards::kRows), std::invalid_argument);
  EXPECT_THROW((void)tie_free_tight_family(4, 4, TieTowards::kRows), std::invalid_argument);
}

}  // namespace
}  // namespace subevict::greedy
