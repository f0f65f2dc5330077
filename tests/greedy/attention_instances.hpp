#pragma once
// Random causal attention matrices for the offline-optimum tests, drawn with RapidCheck generators
// (call only inside a property).
#include <rapidcheck.h>

#include <Eigen/Core>

namespace subevict::greedy::testing {

/// An n x n lower-triangular matrix whose row i is a probability vector over tokens 0..i. About
/// zero_per_mille / 1000 of the entries are exactly 0 (zero-gain arcs and ties); a row left all
/// zero puts its mass on the diagonal.
inline Eigen::MatrixXd random_attention(int n, int zero_per_mille) {
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j <= i; ++j) {
      const int draw = *rc::gen::inRange(0, 1000);
      a(i, j) = draw < zero_per_mille ? 0.0 : double(draw + 1);
    }
    if (a.row(i).sum() == 0.0) a(i, i) = 1.0;
    a.row(i) /= a.row(i).sum();
  }
  return a;
}

}  // namespace subevict::greedy::testing
