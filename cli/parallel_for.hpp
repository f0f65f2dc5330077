#pragma once
/// \file
/// The CLI's worker pool over independent units (heads, layers): fn(0), ..., fn(count − 1) on
/// `threads` threads, each taking the next unused index. The first exception stops the handing out
/// of further indices and is rethrown once every worker has stopped.

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace subevict::cli {

/// Runs fn(i) for i = 0..count − 1 on max(1, min(threads, count)) threads (the caller's among
/// them). fn must be safe to call concurrently for different i.
template <class Fn>
void parallel_for(int count, int threads, Fn&& fn) {
  std::atomic<int> next{0};
  std::exception_ptr failure;
  std::mutex mutex;
  auto worker = [&]() {
    for (int i; (i = next++) < count;) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!failure) failure = std::current_exception();
        next = count;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::min(threads, count); ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace subevict::cli
