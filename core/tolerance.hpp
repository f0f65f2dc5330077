#pragma once
/// \file
/// Named numerical tolerances, tied to the precision of the type. Tests and checks compare with
/// these, never with bare literals: relative comparisons with an absolute floor near zero.

#include <cmath>
#include <cstddef>
#include <limits>

namespace subevict {

template <class T>
struct Tol {
  static constexpr T kEps = std::numeric_limits<T>::epsilon();
  /// A result of a handful of rounded operations on O(1) values.
  static constexpr T kValue = T(64) * kEps;
  /// A sum or dot product of n terms of magnitude <= 1: Higham's n * eps bound with headroom 4.
  static constexpr T sum(std::size_t n) { return T(4) * T(n + 1) * kEps; }
  /// Gradients by central differences: truncation O(h^2) and rounding O(eps / h) balance at
  /// h = eps^(1/3), error ~ eps^(2/3) (6e-11 for double, 5e-5 for float); with headroom 100.
  static T grad() { return T(100) * std::cbrt(kEps * kEps); }
};

/// |a - b| <= tol * max(1, |a|, |b|): relative, with an absolute floor of tol near zero.
template <class T>
bool near(T a, T b, T tol) {
  const T scale = std::fmax(T(1), std::fmax(std::fabs(a), std::fabs(b)));
  return std::fabs(a - b) <= tol * scale;
}

}  // namespace subevict
