#pragma once
// What the plain benchmark programs report about their own process: CPU seconds and peak resident
// memory (Linux getrusage), header-only.
#include <sys/resource.h>

#include <chrono>
#include <ctime>
#include <utility>

namespace subevict::bench {

/// CPU seconds of the process so far (all threads).
inline double cpu_seconds() { return double(std::clock()) / CLOCKS_PER_SEC; }

/// The process's peak resident set so far, in MB.
inline double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) / 1024.0;  // KB on Linux
}

/// Wall and CPU seconds of f().
template <class F>
std::pair<double, double> timed(F&& f) {
  const auto wall0 = std::chrono::steady_clock::now();
  const double cpu0 = cpu_seconds();
  f();
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count(), cpu_seconds() - cpu0};
}

}  // namespace subevict::bench
