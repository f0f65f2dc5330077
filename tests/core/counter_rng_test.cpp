// Tests core/counter_rng.hpp and core/portable_math.hpp.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/counter_rng.hpp"
#include "core/portable_math.hpp"
#include "core/statistics.hpp"

namespace subevict {
namespace {

// Known-answer vectors published with Random123 (kat_vectors: counter[4] key[2] -> output[4]).
TEST(Philox, MatchesRandom123KnownAnswers) {
  auto zero = philox_block(0, 0, 0);
  EXPECT_EQ(zero.v[0], 0x6627e8d5u);
  EXPECT_EQ(zero.v[1], 0xe169c58du);
  EXPECT_EQ(zero.v[2], 0xbc57ac4cu);
  EXPECT_EQ(zero.v[3], 0x9b00dbd8u);
  // counter = {243f6a88 85a308d3 13198a2e 03707344}, key = {a4093822 299f31d0}: block holds the
  // first two counter words, tensor the last two, seed the key (low word first).
  auto pi = philox_block(0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull);
  EXPECT_EQ(pi.v[0], 0xd16cfe09u);
  EXPECT_EQ(pi.v[1], 0x94fdccebu);
  EXPECT_EQ(pi.v[2], 0x5001e420u);
  EXPECT_EQ(pi.v[3], 0x24126ea1u);
}

// Relative error of the portable functions against the C library (both well below 1e-15).
constexpr double kPortableRelTol = 4e-16 * 4;

RC_GTEST_PROP(PortableMath, LogMatchesLibm, ()) {
  const double u = *rc::gen::inRange<std::uint64_t>(1, (std::uint64_t{1} << 53)) * 0x1p-53;
  const double x = std::ldexp(u, *rc::gen::inRange(-960, 1000));  // normal doubles only
  const double expected = std::log(x);
  RC_ASSERT(std::abs(portable::log(x) - expected) <= kPortableRelTol * std::max(1.0, std::abs(expected)));
}

RC_GTEST_PROP(PortableMath, SinCosMatchLibm, ()) {
  const double u = double(*rc::gen::inRange<std::uint64_t>(0, std::uint64_t{1} << 53)) * 0x1p-53;
  double s, c;
  portable::sincos_2pi(u, &s, &c);
  const double angle = 2.0 * M_PI * u;
  // The reference angle itself carries ~2 ulp of error at 2*pi: compare absolutely.
  RC_ASSERT(std::abs(s - std::sin(angle)) <= 8e-16);
  RC_ASSERT(std::abs(c - std::cos(angle)) <= 8e-16);
}

TEST(CounterRng, IsAPureFunctionOfSeedTensorElement) {
  // Evaluating in any order gives the same value.
  std::vector<double> forward, backward(64);
  for (int e = 0; e < 64; ++e) forward.push_back(normal(3, 11, e));
  for (int e = 63; e >= 0; --e) backward[e] = normal(3, 11, e);
  EXPECT_EQ(forward, backward);
  EXPECT_NE(normal(3, 11, 0), normal(4, 11, 0));
  EXPECT_NE(normal(3, 11, 0), normal(3, 12, 0));
  double z0, z1;
  normal_pair(3, 11, 5, &z0, &z1);
  EXPECT_EQ(z0, normal(3, 11, 10));
  EXPECT_EQ(z1, normal(3, 11, 11));
}

TEST(CounterRng, StreamIdsDoNotCollide) {
  EXPECT_NE(stream_id(Stream::kKeyContent, 1, 0), stream_id(Stream::kKeyContent, 0, 1));
  EXPECT_NE(stream_id(Stream::kKeyContent, 0, 0), stream_id(Stream::kQueryContent, 0, 0));
}

// Moments and a Kolmogorov-Smirnov statistic of 2^16 draws: for N(0, 1) the sample mean has
// standard error 1/256, the variance 1/181; the KS critical value at alpha = 1e-3 is 1.95/sqrt(n).
TEST(CounterRng, NormalsAreStandardNormal) {
  const int n = 1 << 16;
  std::vector<double> z(n);
  for (int e = 0; e < n; ++e) z[e] = normal(42, 7, e);
  const Summary s = summarize(z);
  EXPECT_LT(std::abs(s.mean), 5.0 / 256.0);
  EXPECT_LT(std::abs(s.stddev * s.stddev - 1.0), 5.0 / 181.0);
  std::sort(z.begin(), z.end());
  double ks = 0;
  for (int i = 0; i < n; ++i) {
    const double cdf = 0.5 * std::erfc(-z[i] / std::sqrt(2.0));
    ks = std::max({ks, std::abs(cdf - double(i) / n), std::abs(cdf - double(i + 1) / n)});
  }
  EXPECT_LT(ks, 1.95 / std::sqrt(double(n)));
}

TEST(CounterRng, UniformsAreInsideTheOpenInterval) {
  EXPECT_GT(uniform52(0, 0), 0.0);
  EXPECT_LT(uniform52(0xffffffffu, 0xffffffffu), 1.0);
  double mean = 0;
  for (int e = 0; e < 4096; ++e) mean += uniform(1, 2, e) / 4096.0;
  EXPECT_NEAR(mean, 0.5, 5 * std::sqrt(1.0 / 12.0 / 4096.0));
}

}  // namespace
}  // namespace subevict
