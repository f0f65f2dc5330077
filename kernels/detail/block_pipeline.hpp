#pragma once
/// \file
/// Internal: the host side of the block kernels (kernels/detail/block_kernels.hpp): buffers, launch
/// shapes, shared-memory budgets and fallbacks, written once against an executor so that the CUDA
/// backend (kernels/cuda_backend.cu) and the tests' block emulator (tests/kernels/
/// block_emulator.hpp) run the very same launches.
///
/// An Exec provides:
///   template <class T> using Buffer = ...;                 memory the kernels can address
///   template <class T> Buffer<T> upload(const T*, std::size_t count)
///   template <class T> Buffer<T> zeros(std::size_t count)
///   template <class T> static T* raw(Buffer<T>&)
///   template <class T> void download(const Buffer<T>&, std::vector<T>&)
///   template <class Fn> void for_each(const char* name, std::int64_t count, Fn fn)
///                                              fn(index) for each index (a named launch)
///   template <class Kernel> void launch(LaunchShape, const Kernel&) kernel(block) on every block
///   void finish(const char* what)              waits for the launches; throws on a device error
///   int tile_side() const        the tiled passes run side x side threads (side * kMicro tiles)
///   int block_threads() const    threads of the oracle and simulation blocks (a power of 2)
///   std::size_t max_shared_bytes() const       the dynamic shared memory one block may use

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/detail/backend_detail.hpp"
#include "kernels/detail/block_kernels.hpp"

namespace subevict::kernels::detail {

/// A launch: grid (x, y), threads per block, dynamic shared bytes per block.
struct LaunchShape {
  int grid_x = 1, grid_y = 1, threads = 1;
  std::size_t shared_bytes = 0;
};

/// The statistics by the three passes of block_kernels.hpp. Returns false, touching nothing, when
/// the shape is outside the kernels' limits (head_dim > kMaxTiledDim, or a row's scores or the
/// tiles exceed the shared memory): the caller falls back to the portable source.
template <class Exec>
bool run_block_stats(Exec& exec, const StatsInput& in, StatsOutput& out) {
  const Dims& s = in.shape;
  const int n = s.tokens, d = s.head_dim, heads = s.layers * s.q_heads;
  const int side = exec.tile_side(), tile = side * kMicro, threads = exec.block_threads();
  const LaunchShape tiles{(n + tile - 1) / tile, heads, side * side, tile_shared_bytes(side, d)};
  // As many oracle rows per block (kOracleRows, halved down to 1) as the shared memory holds.
  int oracle_rows = kOracleRows;
  while (oracle_rows > 1 && oracle_shared_bytes(threads, oracle_rows, n, d) > exec.max_shared_bytes()) oracle_rows /= 2;
  const LaunchShape rows{(n + oracle_rows - 1) / oracle_rows, heads, threads,
                         oracle_shared_bytes(threads, oracle_rows, n, d)};
  if (d > kMaxTiledDim || std::max(tiles.shared_bytes, rows.shared_bytes) > exec.max_shared_bytes()) return false;
  auto q = exec.upload(in.q, s.q_elements());
  auto k = exec.upload(in.k, s.kv_elements());
  const std::size_t count = std::size_t(heads) * n;
  auto log_normalizer = exec.template zeros<double>(count);
  auto column_sum = exec.template zeros<double>(count);
  auto oracle_mass = exec.template zeros<double>(count);
  auto row_max = exec.template zeros<float>(count);
  auto below = exec.template zeros<unsigned long long>(std::size_t(heads));
  const StatsView view{Exec::raw(q),           Exec::raw(k),          n, d, s.q_heads, s.group_size(),
                       in.scale,               in.tau,                in.budget,
                       Exec::raw(log_normalizer), Exec::raw(column_sum), Exec::raw(oracle_mass),
                       Exec::raw(row_max),     Exec::raw(below)};
  exec.launch(tiles, RowPass{view});
  exec.launch(tiles, ColumnPass{view});
  exec.launch(rows, OraclePass{view, oracle_rows});
  exec.finish("statistics");
  exec.download(log_normalizer, out.log_normalizer);
  exec.download(column_sum, out.column_sum);
  exec.download(oracle_mass, out.oracle_mass);
  std::vector<unsigned long long> counts;
  exec.download(below, counts);
  out.below_tau.assign(counts.begin(), counts.end());
  return true;
}

/// The batched simulation: the exact rows by ExactRowFn (one index per query row), then one
/// block per (layer, KV head) group with the cache in shared memory when it fits (else in global
/// scratch).
template <class Exec>
void run_block_simulation(Exec& exec, const SimInput& in, SimOutput& out) {
  const Dims& s = in.shape;
  const int n = s.tokens, d = s.head_dim, g = s.group_size(), groups = s.layers * s.kv_heads;
  const std::int64_t rows = std::int64_t(s.layers) * s.q_heads * n;
  auto q = exec.upload(in.q, s.q_elements());
  auto k = exec.upload(in.k, s.kv_elements());
  auto v = exec.upload(in.v, s.kv_elements());
  auto log_normalizer = exec.template zeros<double>(std::size_t(rows));
  auto exact_output = exec.template zeros<double>(std::size_t(rows) * d);
  exec.for_each("exact_rows", rows,
                ExactRowFn{Exec::raw(q), Exec::raw(k), Exec::raw(v), n, d, s.q_heads, g, in.scale,
                           Exec::raw(log_normalizer), Exec::raw(exact_output)});
  auto budget = exec.upload(in.budget.data(), in.budget.size());
  const int capacity = std::min(*std::max_element(in.budget.begin(), in.budget.end()), n) + 1;
  const int threads = exec.block_threads();
  const bool in_shared = sim_shared_bytes(threads, capacity, g, true) <= exec.max_shared_bytes();
  auto slots = exec.template zeros<std::int32_t>(in_shared ? 0 : std::size_t(groups) * capacity);
  auto weights = exec.template zeros<double>(in_shared ? 0 : std::size_t(groups) * sim_weight_stride(capacity, g));
  auto score = exec.template zeros<double>(std::size_t(groups) * n);
  auto retained = exec.template zeros<double>(std::size_t(groups) * n * g);
  auto error = exec.template zeros<double>(std::size_t(groups) * n * g);
  auto evicted = exec.template zeros<std::int32_t>(std::size_t(groups) * n);
  const SimView view{Exec::raw(q), Exec::raw(k), Exec::raw(v), Exec::raw(log_normalizer), Exec::raw(exact_output),
                     Exec::raw(budget), s.layers, s.q_heads, s.kv_heads, n, d, in.scale, in.policy,
                     in.aggregation, in.recent, in.sinks, capacity, Exec::raw(slots), Exec::raw(weights),
                     Exec::raw(score), Exec::raw(retained), Exec::raw(error), Exec::raw(evicted)};
  exec.launch(LaunchShape{groups, 1, threads, sim_shared_bytes(threads, capacity, g, in_shared)},
              SimulateGroups{view, in_shared});
  exec.finish("simulation");
  exec.download(retained, out.retained_mass);
  exec.download(error, out.output_error);
  exec.download(evicted, out.evicted);
}

}  // namespace subevict::kernels::detail
