#pragma once
/// \file
/// Exact causal attention statistics of every (layer, query head) of a workload at once: the
/// quantities the experiments at real model sizes need, without materialising any n x n matrix
/// on the portable and cuda backends.

#include <cstdint>
#include <vector>

#include "core/workload.hpp"
#include "kernels/backend.hpp"

namespace subevict::kernels {

/// Settings of attention_stats.
struct AttentionStatsOptions {
  double tau = 0.01;  ///< sparsity threshold relative to the row maximum, in (0, 1]
  int budget = 0;     ///< k of the per-step oracle mass U_i (0: U_i = a_ii), >= 0
};

/// Per (layer, query head) arrays, layer-major then head, then token: index
/// (layer * q_heads + head) * tokens + i. With a^h the exact causal attention of head h
/// (s_ij = score_scale <q_i, k_j>, j <= i, 0-based):
///   log_normalizer[i]  L_i = log sum_{j <= i} exp(s_ij)
///   column_sum[j]      sum_{i >= j} a_ij (H2O's accumulated attention)
///   oracle_mass[i]     U_i = a_ii + the sum of the `budget` largest a_ij over j < i
///                      (greedy/eviction/optimum/step_oracle.hpp with W = a^h)
/// and per (layer, query head):
///   below_tau          #{(i, j) : j <= i, a_ij < tau max_j a_ij} (core/metrics.hpp count_below
///                      summed over rows; sparsity = below_tau / (n (n + 1) / 2))
/// The portable and cuda backends compute scores in float and accumulate in double; tolerances
/// against the reference are in kernels/kernel_tolerance.hpp.
struct AttentionStats {
  Shape shape;
  std::vector<double> log_normalizer;
  std::vector<double> column_sum;
  std::vector<double> oracle_mass;
  std::vector<std::int64_t> below_tau;
};

/// Statistics of every (layer, query head) on `backend`. Throws InputError for tau outside (0, 1],
/// budget < 0 or an unavailable backend. Cost O(layers * q_heads * n^2 * d); memory O(layers *
/// q_heads * n) for the results. The reference backend materialises each head's n x n attention
/// (8 n^2 bytes) for greedy::step_oracle.
[[nodiscard]] AttentionStats attention_stats(const Workload& workload, const AttentionStatsOptions& options,
                                             Backend backend);

}  // namespace subevict::kernels
