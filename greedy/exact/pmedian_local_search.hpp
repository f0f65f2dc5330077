#pragma once
/// \file
/// Heuristic p-median sets for exact search to start from: greedy addition and vertex
/// substitution (Teitz and Bart 1968), the interchange local search, evaluated with nearest and
/// second-nearest medians per client (Whitaker 1983's fast interchange).

#include <span>
#include <vector>

#include "greedy/functions/pmedian.hpp"

namespace subevict::greedy {

/// Greedy addition: starting from the empty set, adds the vertex that lowers Σ_i min_{j∈S} d(i, j)
/// most (ties: lowest index) until |S| = instance.p. Returns S in the order added. O(p · n²).
[[nodiscard]] std::vector<Element> pmedian_greedy(const PMedianInstance& instance);

/// Vertex substitution from `set` (distinct vertices < n, non-empty; InputError otherwise): while
/// some swap of a median j ∈ S for a vertex c ∉ S lowers the p-median value, performs the swap that
/// lowers it most (ties: lowest c, then lowest j). Ends at a set no single swap improves (a local
/// optimum), returned ascending in `set`; returns its p-median value. Each pass costs
/// O(n · (n + |S|)) for the swap values plus O(n · |S|) to update the nearest medians.
double vertex_substitution(const PMedianInstance& instance, std::vector<Element>& set);

}  // namespace subevict::greedy
