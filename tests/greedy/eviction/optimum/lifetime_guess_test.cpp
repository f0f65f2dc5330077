// The starting-arc guess of the column generations (column_generation.hpp LifetimeGuess): its
// batched steps on the portable and the AVX2 path against step() one at a time, bit for bit.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <vector>

#include "core/cpu_path.hpp"
#include "greedy/eviction/optimum/column_generation.hpp"

namespace subevict::greedy::column_generation {
namespace {

/// Draws in eighths, zeros included, so that objectives tie exactly and the strict comparison
/// decides (a >= in place of > changes the chosen steps).
std::vector<double> draws(int count) {
  std::vector<double> out(static_cast<std::size_t>(count));
  for (double& x : out) x = *rc::gen::inRange(0, 9) / 8.0;
  return out;
}

void expect_same_arcs(const LifetimeGuess& got, const LifetimeGuess& want, int j) {
  RC_ASSERT(got.earned() == want.earned());
  const std::vector<TokenArc> a = got.arcs(j, 100.0), b = want.arcs(j, 100.0);
  RC_ASSERT(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    RC_ASSERT(a[i].e == b[i].e);
    RC_ASSERT(a[i].earned == b[i].earned);
    RC_ASSERT(a[i].cost == b[i].cost);
  }
}

void batched_equals_stepwise(CpuPath path) {
  const int j = *rc::gen::inRange(0, 50), count = *rc::gen::inRange(1, 400);
  const std::vector<double> earned = draws(count), price = draws(count);
  LifetimeGuess one_by_one, batched;
  for (int r = 0; r < count; ++r) one_by_one.step(j + 1 + r, earned[r], price[r]);
  // In runs of random lengths, as the tiles and chunks of the callers hand them out.
  for (int r = 0; r < count;) {
    const int run = std::min(count - r, *rc::gen::inRange(1, 80));
    batched.steps(j + 1 + r, earned.data() + r, price.data() + r, run, path);
    r += run;
  }
  expect_same_arcs(batched, one_by_one, j);
}

RC_GTEST_PROP(LifetimeGuess, BatchedStepsArePortableStepsBitForBit, ()) { batched_equals_stepwise(CpuPath::kPortable); }

RC_GTEST_PROP(LifetimeGuess, BatchedStepsOnAvx2AreStepsBitForBit, ()) {
  if (!cpu_supports_avx2_fma()) RC_DISCARD("no AVX2 and FMA on this CPU");
  batched_equals_stepwise(CpuPath::kAvx2Fma);
}

TEST(LifetimeGuess, KeepsTheFirstBestLifetimeOfEachScale) {
  // Earnings 1, 0, 1 at no price: the largest total (2) first at step 3; at scale 0 the guess is
  // that step, and a tie later (another 0 earned) does not move it.
  for (CpuPath path : {CpuPath::kPortable, CpuPath::kAvx2Fma}) {
    if (path == CpuPath::kAvx2Fma && !cpu_supports_avx2_fma()) continue;
    LifetimeGuess guess;
    const std::vector<double> earned{1.0, 0.0, 1.0, 0.0}, price{0.0, 0.0, 0.0, 0.0};
    guess.steps(1, earned.data(), price.data(), 4, path);
    const std::vector<TokenArc> arcs = guess.arcs(0, 2.0);
    ASSERT_EQ(arcs.size(), 2u);  // never cached, and step 3 for every scale (no price)
    EXPECT_EQ(arcs[0].e, 0);
    EXPECT_EQ(arcs[1].e, 3);
    EXPECT_EQ(arcs[1].earned, 2.0);
    EXPECT_EQ(arcs[1].cost, 0.0);
  }
}

}  // namespace
}  // namespace subevict::greedy::column_generation
