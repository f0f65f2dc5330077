#pragma once
/// \file
/// Draws from a seeded std::mt19937_64 that do not depend on the standard library's distribution
/// implementations (whose algorithms the standard leaves open), so seeded results are the same
/// with every compiler: the randomized optimizers and diagnostics of `greedy/` all use these.

#include <cstdint>
#include <limits>
#include <random>

namespace subevict::greedy {

/// Uniform integer in [0, bound) by rejection from the raw 64-bit output (no modulo bias).
/// Precondition: bound > 0.
inline std::uint64_t uniform_below(std::mt19937_64& engine, std::uint64_t bound) {
  const std::uint64_t limit =
      std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % bound;
  std::uint64_t x = engine();
  while (x >= limit) {
    x = engine();
  }
  return x % bound;
}

/// Uniform double in [0, 1): (x >> 11) 2^−53 from one raw output x.
inline double uniform_unit(std::mt19937_64& engine) { return double(engine() >> 11) * 0x1p-53; }

}  // namespace subevict::greedy
