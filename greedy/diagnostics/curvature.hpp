#pragma once
/// \file
/// Total curvature (Conforti and Cornuéjols 1984; theory.md §4): greedy on a monotone submodular
/// function of curvature c reaches ≥ (1 − e^{−c}) / c of OPT_k.

#include <cstdint>

#include "greedy/functions/set_function.hpp"

namespace subevict::greedy {

/// c = 1 − min_j Δ(j | V \ {j}) / Δ(j | ∅) over the elements with Δ(j | ∅) > 0 (Δ(j | ∅) = f({j})
/// when f(∅) = 0); c ∈ [0, 1] for monotone submodular f, 0 iff f is modular on those elements
/// (a negative c reveals supermodularity). `argmin` is the minimizing j (lowest index on ties);
/// with no element of positive singleton gain, c = 0 and argmin = n.
struct Curvature {
  double curvature = 0.0;
  Element argmin = 0;
  std::uint64_t oracle_calls = 0;
};

/// At most 2n gains and 3n state updates (one state holding V; each j removed, queried, re-added).
[[nodiscard]] Curvature total_curvature(const SetFunction& f);

}  // namespace subevict::greedy
