#pragma once
/// \file
/// Internal: the public operations with their backend given as an implementation function. The
/// public attention_stats / simulate_batched pass the portable or cuda entry points; the tests
/// pass the block kernels under the CPU block emulator (tests/kernels/block_emulator.hpp), so the
/// CUDA kernels are checked on CPU threads through the same validation and conversions. Not
/// installed (kernels/detail/).

#include <functional>

#include "kernels/attention_stats.hpp"
#include "kernels/detail/backend_detail.hpp"
#include "kernels/batched_simulation.hpp"

namespace subevict::kernels::detail {

/// Fills a StatsOutput (StatsInput layouts) for a validated StatsInput.
using StatsRunner = std::function<void(const StatsInput&, StatsOutput&)>;
/// Fills a SimOutput for a validated SimInput.
using SimulationRunner = std::function<void(const SimInput&, SimOutput&)>;

/// attention_stats with `runner` in place of a backend: the same InputErrors for bad options.
[[nodiscard]] AttentionStats attention_stats_with(const Workload& workload, const AttentionStatsOptions& options,
                                                  const StatsRunner& runner);

/// simulate_batched with `runner` in place of a backend: the same InputErrors for bad options.
[[nodiscard]] BatchedSimulation simulate_batched_with(const Workload& workload, const BatchedOptions& options,
                                                      const SimulationRunner& runner);

}  // namespace subevict::kernels::detail
