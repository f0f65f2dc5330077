// Tests core/statistics.hpp against closed forms and values computed independently.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>

#include "core/statistics.hpp"
#include "core/tolerance.hpp"

namespace subevict {
namespace {

// Reference quantiles carry 8 significant digits.
constexpr double kPrinted = 5e-8;

TEST(ClopperPearson, MatchesClosedFormsAtTheBoundaries) {
  // x = 0: upper = 1 - (alpha/2)^(1/n); x = n: lower = (alpha/2)^(1/n).
  const Interval zero = clopper_pearson(0, 10, 0.95);
  EXPECT_EQ(zero.lower, 0.0);
  EXPECT_NEAR(zero.upper, 1 - std::pow(0.025, 0.1), Tol<double>::kValue);
  const Interval all = clopper_pearson(10, 10, 0.95);
  EXPECT_NEAR(all.lower, std::pow(0.025, 0.1), Tol<double>::kValue);
  EXPECT_EQ(all.upper, 1.0);
}

TEST(ClopperPearson, MatchesRsBinomTest) {
  // R: binom.test(5, 20)$conf.int = 0.08657147 0.49104587
  const Interval ci = clopper_pearson(5, 20, 0.95);
  EXPECT_NEAR(ci.lower, 0.08657147, kPrinted);
  EXPECT_NEAR(ci.upper, 0.49104587, kPrinted);
}

RC_GTEST_PROP(ClopperPearson, ContainsThePointEstimateAndIsSymmetric, ()) {
  const long long n = *rc::gen::inRange(1, 500);
  const long long x = *rc::gen::inRange(0LL, n + 1);
  const Interval ci = clopper_pearson(x, n);
  const Interval mirror = clopper_pearson(n - x, n);
  RC_ASSERT(ci.lower <= double(x) / n);
  RC_ASSERT(ci.upper >= double(x) / n);
  RC_ASSERT(std::abs(ci.lower - (1 - mirror.upper)) <= 1e-10);
}

TEST(ClopperPearson, RejectsImpossibleCounts) {
  EXPECT_THROW(clopper_pearson(3, 2), std::invalid_argument);
  EXPECT_THROW(clopper_pearson(0, 0), std::invalid_argument);
  EXPECT_THROW(clopper_pearson(1, 2, 1.0), std::invalid_argument);
}

TEST(Summary, MatchesRsDefaultQuantiles) {
  std::vector<double> x;
  for (int i = 1; i <= 10; ++i) x.push_back(i);
  const Summary s = summarize(x);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_NEAR(s.stddev, 3.0276503540974917, Tol<double>::kValue);  // sqrt(55/6)
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_NEAR(s.p05, 1.45, Tol<double>::kValue);   // R: quantile(1:10, 0.05)
  EXPECT_NEAR(s.p95, 9.55, Tol<double>::kValue);
  EXPECT_THROW(summarize({}), std::invalid_argument);
  EXPECT_THROW(summarize({1.0, NAN}), std::invalid_argument);
}

TEST(Correlation, SpearmanUsesMidRanks) {
  // Ranks of x: 1, 2.5, 2.5, 4; of y: 4, 3, 2, 1 -> Pearson of the ranks = -0.9486833 (sqrt(0.9)).
  EXPECT_NEAR(spearman_correlation({1, 2, 2, 3}, {9, 5, 4, 1}), -std::sqrt(0.9), Tol<double>::kValue);
  EXPECT_NEAR(pearson_correlation({1, 2, 3}, {2, 4, 6}), 1.0, Tol<double>::kValue);
  EXPECT_TRUE(std::isnan(pearson_correlation({1, 1, 1}, {1, 2, 3})));
}

RC_GTEST_PROP(PowerLaw, RecoversTheExponentOfAnExactPowerLaw, ()) {
  const double exponent = *rc::gen::inRange(1, 300) / 100.0;
  const int n = *rc::gen::inRange(3, 300);
  std::vector<double> v;
  for (int r = n; r >= 1; --r) v.push_back(7.0 * std::pow(double(r), -exponent));
  const PowerLawFit fit = fit_power_law(v);
  RC_ASSERT(std::abs(fit.exponent - exponent) <= 1e-9);
  RC_ASSERT(std::abs(fit.r_squared - 1.0) <= 1e-9);
}

TEST(TopShare, TakesTheLargestValues) {
  EXPECT_DOUBLE_EQ(top_share({1, 1, 1, 7}, 0.25), 0.7);
  EXPECT_DOUBLE_EQ(top_share({1, 1, 1, 1}, 0.5), 0.5);
}

TEST(ShareOfLowest, TakesTheValuesOfTheSmallestKeysTiesToTheEarlier) {
  const std::vector<double> keys = {3, 1, 2, 1}, values = {10, 20, 30, 40};
  EXPECT_DOUBLE_EQ(share_of_lowest(keys, values, 0.25), 0.2);  // of the tied keys 1, the earlier
  EXPECT_DOUBLE_EQ(share_of_lowest(keys, values, 0.5), 0.6);   // ceil(0.5 * 4) = 2: both keys 1
  EXPECT_DOUBLE_EQ(share_of_lowest(keys, values, 0.51), 0.9);  // ceil(2.04) = 3 entries
  EXPECT_DOUBLE_EQ(share_of_lowest(keys, {0, 0, 0, 0}, 0.5), 0.0);
  EXPECT_THROW(share_of_lowest(keys, {1, 2}, 0.5), std::invalid_argument);
  EXPECT_THROW(share_of_lowest({}, {}, 0.5), std::invalid_argument);
  EXPECT_THROW(share_of_lowest(keys, values, 0.0), std::invalid_argument);
}

// The share of the k smallest keys equals the brute-force sum over the k entries whose key has
// fewer smaller keys (and, among ties, earlier position) than k.
RC_GTEST_PROP(ShareOfLowest, EqualsTheBruteForceRankSum, ()) {
  const int n = *rc::gen::inRange(1, 40);
  const auto keys = *rc::gen::container<std::vector<int>>(std::size_t(n), rc::gen::inRange(0, 6));
  const auto weights = *rc::gen::container<std::vector<int>>(std::size_t(n), rc::gen::inRange(0, 100));
  const double fraction = *rc::gen::inRange(1, 101) / 100.0;
  const long long lowest = (long long)std::ceil(fraction * n);
  double head = 0, total = 0;
  for (int i = 0; i < n; ++i) {
    int rank = 0;  // entries before i in the order (key, position)
    for (int j = 0; j < n; ++j) rank += keys[j] < keys[i] || (keys[j] == keys[i] && j < i);
    if (rank < lowest) head += weights[i];
    total += weights[i];
  }
  const std::vector<double> k(keys.begin(), keys.end()), v(weights.begin(), weights.end());
  RC_ASSERT(std::abs(share_of_lowest(k, v, fraction) - (total > 0 ? head / total : 0.0)) <= 1e-12);
}

}  // namespace
}  // namespace subevict
