#pragma once
/// \file
/// The concave transforms h of the H2O score family h(Σ acc) (theory.md §4), shared by the static
/// concave-over-modular function and the dynamic eviction scores.

#include <string>
#include <string_view>

namespace subevict::greedy {

/// h ∈ {z, sqrt(z + 1), log(z + 1)}: concave and non-decreasing on z ≥ 0 (z > −1 for the last two).
enum class Concave { kIdentity, kSqrt, kLog };

/// h(z): z, sqrt(z + 1) or log1p(z). Precondition: z ≥ −1 for kSqrt, z > −1 for kLog (NaN or −inf
/// otherwise, as std::sqrt/std::log1p give). O(1).
[[nodiscard]] double concave_value(Concave h, double z);

/// The stable name: "identity", "sqrt" or "log" (used in reports and on the command line).
[[nodiscard]] std::string concave_name(Concave h);

/// The inverse of concave_name; throws subevict::InputError (source "concave", naming the
/// accepted names) for anything else.
[[nodiscard]] Concave parse_concave(std::string_view name);

}  // namespace subevict::greedy
