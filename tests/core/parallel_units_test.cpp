// Tests core/parallel_units.hpp: every unit runs once, progress counts every unit from one
// thread at a time, and a unit's exception is returned without stopping the others; parallel_for
// runs every unit once and rethrows the first exception unchanged, starting no unit after it.
#include <gtest/gtest.h>

#include <omp.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "core/input_error.hpp"
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

TEST(ParallelFor, RunsEveryUnitOnceForAnyThreadCount) {
  for (int threads : {0, 1, 2, 4, 200}) {
    std::vector<std::atomic<int>> runs(61);
    parallel_for(61, threads, [&](long long u) { ++runs[std::size_t(u)]; });
    for (const auto& r : runs) EXPECT_EQ(r.load(), 1) << threads << " threads";
  }
  parallel_for(0, 2, [](long long) { FAIL(); });
}

TEST(ParallelFor, RethrowsTheFirstExceptionWithItsTypeAndStartsNoUnitAfterIt) {
  // One thread takes the units in order: units 0..3 run, unit 3 fails, 4..9 are never started.
  std::vector<int> ran;
  try {
    parallel_for(10, 1, [&](long long u) {
      ran.push_back(int(u));
      if (u == 3) throw InputError("test", "--units", "a unit that succeeds", "unit 3");
    });
    FAIL() << "no exception";
  } catch (const InputError& e) {  // the type survives: the command line exits 2 on it
    EXPECT_NE(std::string(e.what()).find("unit 3"), std::string::npos);
  }
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 3}));
  // On several threads the failure still comes out, of its own type.
  EXPECT_THROW(parallel_for(1000, 4,
                            [&](long long u) {
                              if (u == 0) throw std::out_of_range("unit 0");
                            }),
               std::out_of_range);
}

TEST(ParallelFor, NestedWorkGetsItsOwnThreads) {
  // Two units on two threads, each opening a team of two: the inner teams are real (not serialized
  // to one thread), as the callers that size nested work for the idle threads expect.
  std::vector<std::atomic<int>> inner_sizes(2);
  parallel_for(2, 2, [&](long long u) {
#pragma omp parallel num_threads(2)
    {
#pragma omp single
      inner_sizes[std::size_t(u)] = omp_get_num_threads();
    }
  });
  EXPECT_EQ(inner_sizes[0].load(), 2);
  EXPECT_EQ(inner_sizes[1].load(), 2);
}

}  // namespace
}  // namespace subevict
