// The CPU block emulator itself (it must expose the bugs it exists to find) and the launch
// choices of kernels/detail/block_pipeline.hpp that the per-backend tests do not reach: the simulation's
// cache in global memory and the statistics' fallback outside the kernels' limits.
#include "block_emulator.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <vector>

#include "core/generator.hpp"
#include "kernels/batched_simulation.hpp"
#include "kernels/detail/kernel_runner.hpp"

namespace subevict::kernels::emulation {
namespace {

/// Thread 0 sums the values every thread stored in shared memory, with or without the barrier
/// that makes the stores visible first.
std::vector<int> block_sums(int threads, bool reverse, bool with_barrier) {
  std::vector<int> out(2, 0);
  const detail::LaunchShape shape{2, 1, threads, std::size_t(threads) * sizeof(int)};
  run_grid(shape, reverse, [&](const EmulatedBlock& b) {
    int* values = reinterpret_cast<int*>(b.shared());
    values[b.thread()] = b.thread() + 1;
    if (with_barrier) b.sync();
    if (b.thread() == 0) {
      int sum = 0;
      for (int t = 0; t < b.threads(); ++t) sum += values[t];
      out[std::size_t(b.block_x())] = sum;
    }
  });
  return out;
}

TEST(BlockEmulator, AMissingBarrierGivesAResultThatDependsOnTheThreadOrder) {
  const std::vector<int> expected(2, 1 + 2 + 3 + 4);
  EXPECT_EQ(block_sums(4, false, true), expected);
  EXPECT_EQ(block_sums(4, true, true), expected);
  // Without the barrier, thread 0 runs first in forward order and reads the 0xff poison of the
  // other slots; in reverse order it runs last and happens to see every store.
  EXPECT_NE(block_sums(4, false, false), expected);
  EXPECT_EQ(block_sums(4, true, false), expected);
}

TEST(BlockEmulator, EveryBlockSeesItsOwnCoordinatesAndFreshSharedMemory) {
  std::vector<int> seen(6, -1);
  run_grid(detail::LaunchShape{3, 2, 2, sizeof(int)}, false, [&](const EmulatedBlock& b) {
    int* flag = reinterpret_cast<int*>(b.shared());
    if (b.thread() == 0) {
      EXPECT_EQ(*flag, -1) << "shared memory is poisoned at every block start";
      *flag = b.block_y() * 3 + b.block_x();
    }
    b.sync();
    if (b.thread() == 1) seen[std::size_t(*flag)] = b.block_y() * 3 + b.block_x();
  });
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

TEST(BlockEmulatorDeathTest, ABarrierUnderADivergentBranchAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(run_grid(detail::LaunchShape{1, 1, 4, 0}, false,
                        [](const EmulatedBlock& b) {
                          if (b.thread() < 2) b.sync();
                        }),
               "divergent branch");
}

TEST(BlockEmulator, RejectsLaunchesADeviceWouldRefuse) {
  EXPECT_THROW(run_grid(detail::LaunchShape{1, 1, 3, 0}, false, [](const EmulatedBlock&) {}), std::invalid_argument);
  EXPECT_THROW(run_grid(detail::LaunchShape{0, 1, 4, 0}, false, [](const EmulatedBlock&) {}), std::invalid_argument);
  BlockEmulator exec(EmulatorOptions{4, false, 64});
  EXPECT_THROW(exec.launch(detail::LaunchShape{1, 1, 4, 65}, [](const EmulatedBlock&) {}), std::invalid_argument);
}

BatchedSimulation emulated_h2o(const Workload& w, const EmulatorOptions& options) {
  BatchedOptions batched;
  batched.budget = 7;
  BlockEmulator exec(options);
  return detail::simulate_batched_with(w, batched, [&exec](const detail::SimInput& in, detail::SimOutput& out) {
    detail::run_block_simulation(exec, in, out);
  });
}

TEST(BlockKernels, TheCacheInGlobalMemoryGivesTheSameSimulationBitForBit) {
  const Workload w = subevict::generate_workload(spec_from_preset("tiny-gqa", 30, 1, 3), 1);
  const int threads = 4, capacity = 8, g = w.shape().group_size();
  ASSERT_GT(detail::sim_shared_bytes(threads, capacity, g, true), detail::sim_shared_bytes(threads, capacity, g, false));
  const BatchedSimulation shared = emulated_h2o(w, EmulatorOptions{threads, false});
  // A shared-memory limit that holds the reduction arrays but not the cache.
  const BatchedSimulation global =
      emulated_h2o(w, EmulatorOptions{threads, false, detail::sim_shared_bytes(threads, capacity, g, false)});
  EXPECT_EQ(global.evicted, shared.evicted);
  ASSERT_EQ(global.retained_mass.size(), shared.retained_mass.size());
  EXPECT_EQ(std::memcmp(global.retained_mass.data(), shared.retained_mass.data(), shared.retained_mass.size() * sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(global.output_error.data(), shared.output_error.data(), shared.output_error.size() * sizeof(double)), 0);
  EXPECT_NE(std::count(shared.evicted.begin(), shared.evicted.end(), -1), std::ptrdiff_t(shared.evicted.size()));
}

TEST(BlockKernels, StatisticsLeaveShapesOutsideTheKernelsLimitsToTheCaller) {
  const Workload w = subevict::generate_workload(spec_from_preset("tiny", 40, 1, 3), 1);
  detail::StatsInput in{detail::to_dims(w.shape()), w.score_scale(), w.q_data().data(), w.k_data().data(), 0.01, 4};
  detail::StatsOutput out;
  BlockEmulator small(EmulatorOptions{4, false, detail::oracle_shared_bytes(4, 1, 40, w.shape().head_dim) - 1});
  EXPECT_FALSE(detail::run_block_stats(small, in, out));
  EXPECT_EQ(small.launches(), 0);
  EXPECT_TRUE(out.log_normalizer.empty());
  in.shape.head_dim = detail::kMaxTiledDim + 2;  // only the dims are read before the decision
  BlockEmulator wide(EmulatorOptions{4, false});
  EXPECT_FALSE(detail::run_block_stats(wide, in, out));
  EXPECT_EQ(wide.launches(), 0);
}

}  // namespace
}  // namespace subevict::kernels::emulation
