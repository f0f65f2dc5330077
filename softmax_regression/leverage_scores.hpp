#pragma once
/// \file
/// Leverage scores of M = diag(s) A and leverage-score row sampling (for Algorithm 4).
///
/// tau_i(M) = |row i of an orthonormal basis of range(M)|^2 = M_i (M^T M)^+ M_i^T, sum = rank(M).
/// Sampling s rows i.i.d. with p_i >= tau_i / sum(tau) (or p proportional to overestimates of
/// tau) and weight 1 / (s p_i) gives sum_sampled M_i^T M_i / (s p_i) within (1 +- eps) of M^T M
/// with probability 1 - delta once s >= C sum(tau) ln(d / delta) / eps^2 (matrix Chernoff; the
/// constant C is a parameter of the caller).

#include <cstdint>
#include <vector>

#include "softmax_regression/loss.hpp"

namespace subevict::softmax_regression {

/// Exact leverage scores of diag(s) A by a column-pivoted Householder QR (rank-revealing: rows of
/// the first rank(M) columns of Q). O(n d^2).
Vector exact_leverage_scores(const Matrix& A, const Vector& s);

/// Parameters of the sketched estimate.
struct SketchOptions {
  /// Rows of the CountSketch of diag(s) A; 0 means min(n, 20 d).
  Index sketch_rows = 0;
  /// Columns of the Gaussian Johnson-Lindenstrauss projection; each score is a mean of this many
  /// squared normals (relative standard deviation sqrt(2 / jl_columns)).
  Index jl_columns = 16;
  std::uint64_t seed = 0;
};

/// Approximate leverage scores of M = diag(s) A (Drineas, Magdon-Ismail, Mahoney, Woodruff 2012,
/// with a CountSketch as the first sketch): R from a QR of the CountSketch Pi M, then
/// tau~_i = |M_i R^{-1} G|^2 / k with G a d x k Gaussian. Deterministic in `seed` (counter-based
/// normals and hashes). O(n d + m d^2 + n d k).
Vector sketched_leverage_scores(const Matrix& A, const Vector& s, const SketchOptions& options);

/// A weighted row sample: distinct row indices (ascending) and the weight of each,
/// count_i / (draws p_i).
struct RowSample {
  std::vector<Index> rows;
  Vector weights;
};

/// Draws `draws` rows i.i.d. with probabilities p (p >= 0, sum p = 1) by inverting the cumulative
/// sum with the counter-based uniform (seed, stream, k) for draw k (a draw landing on a boundary
/// goes to the lowest index). O(n + draws log n).
RowSample sample_rows(const Vector& p, Index draws, std::uint64_t seed, std::uint64_t stream);

}  // namespace subevict::softmax_regression
