#include "block_emulator.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <semaphore>
#include <stdexcept>
#include <string>
#include <thread>

namespace subevict::kernels::emulation {

/// Token passing between the emulated threads of a grid: thread order[p] runs until it reaches a
/// barrier or its block's end, then releases order[p + 1] (order[0] after the last, which opens
/// the next phase) and waits for its own turn.
class BlockScheduler {
 public:
  BlockScheduler(int threads, bool reverse) : position_(std::size_t(threads)) {
    for (int t = 0; t < threads; ++t) {
      order_.push_back(reverse ? threads - 1 - t : t);
      turn_.push_back(std::make_unique<std::binary_semaphore>(0));
    }
    for (int p = 0; p < threads; ++p) position_[std::size_t(order_[std::size_t(p)])] = p;
  }

  enum class Stop { kBarrier, kBlockEnd };

  /// Thread t reached `stop`; returns when it is t's turn again (not after the grid's last stop).
  void hand_over(int t, Stop stop, bool last) {
    const int p = position_[std::size_t(t)];
    if (p == 0) {
      phase_stop_ = stop;
    } else if (stop != phase_stop_) {
      std::fprintf(stderr, "block emulator: thread %d reached %s while thread %d reached %s in the same phase "
                   "(a barrier under a divergent branch)\n", t, name(stop), order_[0], name(phase_stop_));
      std::abort();
    }
    const int next = order_[std::size_t((p + 1) % int(order_.size()))];
    turn_[std::size_t(next)]->release();
    if (!last) wait(t);
  }
  void wait(int t) { turn_[std::size_t(t)]->acquire(); }
  void start() { turn_[std::size_t(order_[0])]->release(); }
  bool first_in_phase(int t) const { return position_[std::size_t(t)] == 0; }

 private:
  static const char* name(Stop stop) { return stop == Stop::kBarrier ? "a barrier" : "its block's end"; }
  std::vector<int> order_, position_;
  std::vector<std::unique_ptr<std::binary_semaphore>> turn_;
  Stop phase_stop_ = Stop::kBarrier;
};

void EmulatedBlock::sync() const { scheduler_->hand_over(thread_, BlockScheduler::Stop::kBarrier, false); }

void run_grid(const detail::LaunchShape& shape, bool reverse, const std::function<void(const EmulatedBlock&)>& body) {
  const int threads = shape.threads;
  if (threads < 1 || (threads & (threads - 1)) != 0) {
    throw std::invalid_argument("block emulator: threads per block must be a power of 2, got " + std::to_string(threads));
  }
  if (shape.grid_x < 1 || shape.grid_y < 1) {
    throw std::invalid_argument("block emulator: empty grid " + std::to_string(shape.grid_x) + " x " +
                                std::to_string(shape.grid_y));
  }
  const std::unique_ptr<unsigned char[]> shared(new unsigned char[shape.shared_bytes + 1]);  // + 1: never null
  BlockScheduler scheduler(threads, reverse);
  const int blocks = shape.grid_x * shape.grid_y;
  auto run_thread = [&](int t) {
    scheduler.wait(t);
    for (int b = 0; b < blocks; ++b) {
      if (scheduler.first_in_phase(t)) std::memset(shared.get(), 0xff, shape.shared_bytes);
      body(EmulatedBlock(&scheduler, t, threads, b % shape.grid_x, b / shape.grid_x, shared.get()));
      scheduler.hand_over(t, BlockScheduler::Stop::kBlockEnd, b + 1 == blocks);
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(std::size_t(threads));
  for (int t = 0; t < threads; ++t) pool.emplace_back(run_thread, t);
  scheduler.start();
  for (std::thread& thread : pool) thread.join();
}

void BlockEmulator::check_launch(const detail::LaunchShape& shape) const {
  if (shape.shared_bytes > options_.max_shared_bytes) {
    throw std::invalid_argument("block emulator: launch asks for " + std::to_string(shape.shared_bytes) +
                                " shared bytes per block, the limit is " + std::to_string(options_.max_shared_bytes));
  }
}

}  // namespace subevict::kernels::emulation
