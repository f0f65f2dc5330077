#pragma once
/// \file
/// The cost quantum of the eviction network's exact network simplex (offline_optimum.hpp,
/// implicit_flow.hpp): costs are rounded to multiples of 2^−s.

#include <algorithm>
#include <cmath>

namespace subevict::greedy {

/// The largest s ≤ 60 with (2n + 1) · max_cost · 2^s ≤ 2^bits (0 when max_cost ≤ 0). With
/// bits = 51 (the default) and LEMON's floating-point cost type, whose artificial cost is (max cost
/// + 1) · nodes, every potential and reduced cost is a sum of a few such terms, so all of them stay
/// integers below 2^53 (exact in double); a solver with 64-bit integer potentials and no artificial
/// arcs can use bits = 60. Precondition: n ≥ 0, max_cost finite.
inline int flow_cost_exponent(int n, double max_cost, int bits = 51) {
  if (!(max_cost > 0.0)) return 0;  // every cost is 0
  const double bound = static_cast<double>(2 * n + 1) * max_cost;
  return std::min(60, static_cast<int>(std::floor(bits - std::log2(bound))));
}

}  // namespace subevict::greedy
