#pragma once
/// \file
/// A deterministic CPU emulator of CUDA thread blocks for the block kernels
/// (kernels/detail/block_kernels.hpp), and the executor that runs kernels/detail/block_pipeline.hpp on it, so
/// the CUDA backend's kernels and launches are tested where no GPU is.
///
/// Each emulated thread is an OS thread, but exactly one runs at a time: a thread runs until its
/// next sync() (or the end of its block) and hands over to the next thread in a fixed order, so a
/// barrier phase executes the threads one after another. In that schedule a read of shared data
/// that another thread writes in the same phase (a missing barrier) sees a state that depends on
/// the order: running every test in forward and in reverse thread order exposes it as a wrong
/// result. Blocks run one after another; each block's shared memory starts filled with 0xff bytes
/// (NaN doubles), so a read before a write shows. Threads of one block that disagree on the number
/// of barriers (a sync() under a divergent branch) abort the process with a message.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/detail/block_pipeline.hpp"

namespace subevict::kernels::emulation {

class BlockScheduler;

/// The Block of kernels/detail/block_kernels.hpp for one emulated thread.
class EmulatedBlock {
 public:
  EmulatedBlock(BlockScheduler* scheduler, int thread, int threads, int block_x, int block_y, unsigned char* shared)
      : scheduler_(scheduler), thread_(thread), threads_(threads), block_x_(block_x), block_y_(block_y),
        shared_(shared) {}
  int thread() const { return thread_; }
  int threads() const { return threads_; }
  int block_x() const { return block_x_; }
  int block_y() const { return block_y_; }
  /// Hands over to the next thread of the phase; returns when the whole block reached the barrier.
  void sync() const;
  unsigned char* shared() const { return shared_; }
  /// One thread runs at a time, so a plain add is atomic here.
  void atomic_add(unsigned long long* p, unsigned long long v) const { *p += v; }

 private:
  BlockScheduler* scheduler_;
  int thread_, threads_, block_x_, block_y_;
  unsigned char* shared_;
};

/// Runs `body` on every block of `shape` (x fastest), shape.threads emulated threads per block in
/// `reverse` or index order, with shape.shared_bytes of dynamic shared memory per block. Throws
/// std::invalid_argument for a thread count that is not a power of 2 or an empty grid.
void run_grid(const detail::LaunchShape& shape, bool reverse, const std::function<void(const EmulatedBlock&)>& body);

/// Settings of the emulated device.
struct EmulatorOptions {
  int threads = 4;        ///< threads of the oracle and simulation blocks; a power of 2
  bool reverse = false;   ///< run each barrier phase in reverse thread order
  std::size_t max_shared_bytes = 227 * 1024;  ///< per block, as an H100/H200 with the opt-in limit
  int tile_side = 2;      ///< the tiled passes run tile_side x tile_side threads
};

/// The executor of kernels/detail/block_pipeline.hpp on the emulator: host vectors as device memory.
class BlockEmulator {
 public:
  explicit BlockEmulator(const EmulatorOptions& options) : options_(options) {}
  template <class T>
  using Buffer = std::vector<T>;
  template <class T>
  Buffer<T> upload(const T* host, std::size_t count) { return Buffer<T>(host, host + count); }
  template <class T>
  Buffer<T> zeros(std::size_t count) { return Buffer<T>(count, T(0)); }
  template <class T>
  static T* raw(Buffer<T>& buffer) { return buffer.data(); }
  template <class T>
  void download(const Buffer<T>& buffer, std::vector<T>& host) { host = buffer; }
  template <class Fn>
  void for_each(const char*, std::int64_t count, Fn fn) {
    for (std::int64_t i = 0; i < count; ++i) fn(i);
  }
  /// Throws std::invalid_argument where a device would refuse the launch (shared bytes above the
  /// limit, a bad block size).
  template <class Kernel>
  void launch(const detail::LaunchShape& shape, const Kernel& kernel) {
    check_launch(shape);
    run_grid(shape, options_.reverse, [&kernel](const EmulatedBlock& block) { kernel(block); });
    ++launches_;
  }
  void finish(const char*) {}
  int tile_side() const { return options_.tile_side; }
  int block_threads() const { return options_.threads; }
  std::size_t max_shared_bytes() const { return options_.max_shared_bytes; }
  /// Kernel launches so far (tests assert the kernels ran rather than a fallback).
  int launches() const { return launches_; }

 private:
  void check_launch(const detail::LaunchShape& shape) const;
  EmulatorOptions options_;
  int launches_ = 0;
};

}  // namespace subevict::kernels::emulation
