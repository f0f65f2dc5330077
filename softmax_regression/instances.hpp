#pragma once
/// \file
/// Seeded instance generators: problems that satisfy the hypotheses of Lemma D.47 / Theorem D.49
/// (|A| <= R, b >= 0, |b|_1 <= 1, the w condition) and problems that violate exactly one.

#include <cstdint>
#include <string>

#include "softmax_regression/hypotheses.hpp"

namespace subevict::softmax_regression {

/// Which hypothesis a generated instance breaks.
enum class Violation {
  kNone,
  kNormA,      ///< |A|_2 = 2 R
  kNegativeB,  ///< b_0 = -0.05
  kMassB,      ///< |b|_1 = 2
  kWeakW,      ///< w_i^2 = 1% of the w condition's threshold
  kFarStart,   ///< x0 on the sphere of radius R (far outside the neighbourhood of x*)
};

/// "none", "norm_a", "negative_b", "mass_b", "weak_w", "far_start".
std::string to_string(Violation violation);
/// Inverse of to_string; throws InputError("violation", ...) otherwise.
Violation parse_violation(const std::string& name);

/// What to generate.
struct InstanceSpec {
  Index n = 200;
  Index d = 10;
  TheoremParameters parameters;  ///< R and l
  double norm_A = 1;             ///< |A|_2 (must be <= R for a conforming instance)
  /// w_i^2 = threshold (1 + w_margin U_i), U_i uniform in (0, 1), threshold = 20 + l/sigma_min^2.
  double w_margin = 0.5;
  double b_mass = 0.9;  ///< |b|_1
  /// Row i of A is scaled by exp(row_spread N_i) (N_i standard normal) before the rescaling to
  /// norm_A: 0 gives an incoherent Gaussian A with near-uniform leverage scores, larger values
  /// a few dominant rows (coherent A, where leverage-score sampling matters and the loss is
  /// far from quadratic along those rows).
  double row_spread = 0;
  std::uint64_t seed = 0;
  Violation violation = Violation::kNone;
};

/// A generated problem with its start point and theorem constants.
struct Instance {
  Problem problem;
  Vector x0;
  TheoremParameters parameters;
};

/// A = Gaussian (counter-based normals, element (i, j) of stream "A" under `seed`) rescaled to
/// |A|_2 = norm_A; b_i proportional to uniforms with |b|_1 = b_mass; w as in InstanceSpec; x0 = 0.
/// Then the violation is applied. Throws std::invalid_argument unless n >= d >= 1. O(n d^2).
Instance make_instance(const InstanceSpec& spec);

}  // namespace subevict::softmax_regression
