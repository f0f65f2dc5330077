// Tests core/parallel_units.hpp: every unit runs once, progress counts every unit from one
// thread at a time, and a unit's exception is returned without stopping the others.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "core/parallel_units.hpp"

namespace subevict {
namespace {

TEST(ParallelUnits, RunsEveryUnitOnceAndReportsEachForAnyThreadCount) {
  for (int threads : {1, 2, 4}) {
    std::vector<std::atomic<int>> runs(97);
    std::vector<int> reported;
    const std::string error = parallel_units(
        97, threads, [&](long long u) { ++runs[std::size_t(u)]; },
        [&](int done, int total) {
          EXPECT_EQ(total, 97);
          reported.push_back(done);  // one thread at a time: no lock needed here
        });
    EXPECT_EQ(error, "");
    for (const auto& r : runs) EXPECT_EQ(r.load(), 1);
    ASSERT_EQ(reported.size(), 97u);
    for (int k = 0; k < 97; ++k) EXPECT_EQ(reported[std::size_t(k)], k + 1);
  }
}

TEST(ParallelUnits, ReturnsAUnitsErrorAndRunsTheOthers) {
  std::atomic<int> ran{0};
  const std::string error = parallel_units(10, 2, [&](long long u) {
    ++ran;
    if (u == 7) throw std::invalid_argument("unit 7 failed");
  });
  EXPECT_EQ(error, "unit 7 failed");
  EXPECT_EQ(ran.load(), 10);
  EXPECT_EQ(parallel_units(0, 2, [](long long) { FAIL(); }), "");
}

}  // namespace
}  // namespace subevict
