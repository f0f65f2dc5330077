#pragma once
/// \file
/// Query rows: the steps whose attention an objective counts. Restricting the gain matrix W
/// (cache_schedule.hpp) to a set R of rows gives W'_ij = W_ij for i ∈ R and 0 otherwise, so a
/// schedule's value on W' is its retained mass on R's rows alone, Σ_{i ∈ R} Σ_{j ∈ G_i} W_ij, and
/// the offline optimum on W' is the best an irreversible cache can keep for those queries when it
/// knows in advance which they are (e.g. a question's and an answer's positions). Every solver
/// that reads W reads W' once the gains are restricted: the stored triangle, the dense matrix and
/// the streamed tiles (streamed_gains.hpp) each have their own restrict_to_rows.

#include <Eigen/Core>
#include <string>
#include <vector>

#include "greedy/eviction/process/triangular_gains.hpp"

namespace subevict::greedy {

/// The 0/1 mask (one entry per step, 1 for a row of R) of `rows`: indices in [0, n), in any
/// order, duplicates merged, at least one. Throws InputError(source, "optimum_rows", ...) naming
/// the first offending index otherwise.
[[nodiscard]] std::vector<char> query_row_mask(const std::vector<int>& rows, int n,
                                               const std::string& source);

/// Sets every entry W_ij of a row i with mask[i] = 0 to 0 (the diagonal entry W_ii included).
/// Throws std::invalid_argument unless mask has one entry per row. O(n²).
template <class Scalar>
void restrict_to_rows(TriangularGains<Scalar>& gains, const std::vector<char>& mask);
/// The same on a dense n × n gain matrix.
void restrict_to_rows(Eigen::MatrixXd& gains, const std::vector<char>& mask);

/// triangular_gain_matrix<Scalar>(group) restricted to the rows of `mask` (the same entries within
/// rounding, 0 on the other rows), computed row by row (core/attention.hpp attention_row, the
/// group's window included) for R's rows only: O(g |R| n d) instead of the whole head's
/// O(g n² d), for a few query rows of a long head. Throws as HeadGroup::validate and
/// std::invalid_argument unless mask has n entries.
template <class Scalar>
[[nodiscard]] TriangularGains<Scalar> row_gain_matrix(const HeadGroup& group,
                                                      const std::vector<char>& mask);

}  // namespace subevict::greedy
