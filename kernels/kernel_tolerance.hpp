#pragma once
/// \file
/// Named tolerances of the portable and cuda backends against the double-precision reference.
///
/// Statistics take float dot products: by Higham's bound a score s = scale <q, k> over d dims has
/// absolute error delta <= Tol<float>::sum(d) * scale * ||q|| ||k|| (score_tolerance). Then
/// L_i = log sum exp(s) moves by at most delta, every a_ij by a factor within exp(+-2 delta), so
/// column sums and U_i move by at most a relative 2 delta (plus double rounding); an entry counts
/// differently against tau only when a_ij / max_j a_ij lies within a factor exp(+-2 delta) of tau.
/// The simulation runs in double on every backend with sums in another order: relative
/// Tol<double>::sum(n d).

#include <cstddef>

#include "core/tolerance.hpp"

namespace subevict::kernels {

/// delta: the largest error of a float score over d dims when scale ||q_i|| ||k_j|| <= magnitude.
[[nodiscard]] inline double score_tolerance(int head_dim, double magnitude) {
  return double(Tol<float>::sum(std::size_t(head_dim))) * magnitude;
}

/// Relative tolerance of a mass (column sum, U_i) computed from scores within delta: 2 delta plus
/// the double rounding of a sum of n terms, with headroom 2.
[[nodiscard]] inline double mass_tolerance(double delta, int tokens) {
  return 2.0 * (2.0 * delta + Tol<double>::sum(std::size_t(tokens)));
}

/// Relative tolerance of the double-precision simulation metrics (sums of n d products).
[[nodiscard]] inline double simulation_tolerance(int tokens, int head_dim) {
  return Tol<double>::sum(std::size_t(tokens) * std::size_t(head_dim));
}

}  // namespace subevict::kernels
