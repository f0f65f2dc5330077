#pragma once
/// \file
/// Python's round(), half to even: the budget rules round as kvpress (Python) does.

#include <cmath>

namespace subevict::greedy {

/// x rounded to the nearest integer, a tie to the even one (round(2.5) = 2, round(3.5) = 4).
[[nodiscard]] inline double round_half_even(double x) {
  const double lower = std::floor(x), fraction = x - lower;
  if (fraction != 0.5) return std::round(x);
  return std::fmod(lower, 2.0) == 0.0 ? lower : lower + 1.0;
}

}  // namespace subevict::greedy
