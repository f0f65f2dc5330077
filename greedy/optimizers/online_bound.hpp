#pragma once
/// \file
/// The online bound of Leskovec et al. (2007): for monotone submodular f and any set S,
///   OPT_k = max_{|T| ≤ k} f(T) ≤ f(S) + Σ of the k largest Δ(e|S), e ∉ S
/// (theory.md §5), because f(T) ≤ f(S ∪ T) ≤ f(S) + Σ_{e ∈ T \ S} Δ(e|S). Only positive gains are
/// summed (T may have fewer than k elements), so the bound also holds when some gains are negative
/// rounding noise. The bound is valid for every S; greedy takes its minimum over its steps, branch
/// and bound prunes with it.

#include <cstddef>
#include <cstdint>
#include <span>

#include "greedy/functions/set_function.hpp"

namespace subevict::greedy {

/// f(S) + Σ of the k largest positive Δ(e|S) over e ∉ S, S the set of `state`. Queries gain(e) for
/// every e ∉ S and adds that count to `oracle_calls`. O(n) oracle calls plus O(n) work
/// (selection by nth_element). Valid as an upper bound on OPT_k only for monotone submodular f.
[[nodiscard]] double online_bound(const SetState& state, std::size_t k,
                                  std::uint64_t& oracle_calls);

/// The same bound from precomputed gains: value + Σ of the k largest positive entries of `gains`
/// (one entry per candidate e ∉ S; entries for members of S, if present, must be 0). O(|gains|).
[[nodiscard]] double online_bound(double value, std::span<const double> gains, std::size_t k);

}  // namespace subevict::greedy
