#pragma once
/// \file
/// Metrics of one attention row under eviction (theory.md §1). Rows are probability vectors over
/// the keys a query sees (length i + 1 for query i); a tracked set is a boolean mask of that length.

#include <Eigen/Core>
#include <vector>

namespace subevict {

/// r_i(G) = sum_{j in G} a_ij. Precondition: in_set.size() == a.size() (std::invalid_argument).
double retained_mass(const Eigen::VectorXd& a, const std::vector<bool>& in_set);

/// Total variation distance 1/2 sum_j |a_j - b_j|. Precondition: equal sizes.
double total_variation(const Eigen::VectorXd& a, const Eigen::VectorXd& b);

/// ||o - o_tilde|| / ||o||; returns ||o - o_tilde|| when ||o|| = 0 (no division by zero).
double output_relative_error(const Eigen::VectorXd& o, const Eigen::VectorXd& o_tilde);

/// Fraction of entries of `a` strictly below tau * max_j a_j (H2O §3 sparsity; tau = 0.01 means
/// "below 1% of the row maximum"). Precondition: a non-empty, tau in [0, 1].
double sparsity(const Eigen::VectorXd& a, double tau);

/// Number of entries strictly below tau * max_j a_j (the count behind sparsity()).
long long count_below(const Eigen::VectorXd& a, double tau);

/// Accumulated attention: column sums sum_i a_ij of a (rows x n) attention matrix.
Eigen::VectorXd accumulated_attention(const Eigen::MatrixXd& a);

}  // namespace subevict
