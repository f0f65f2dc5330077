#pragma once
/// \file
/// Step-by-step comparison of two schedules of one instance (typically a policy's and the offline
/// optimum's): how much their caches overlap and how much attention each holds that the other
/// does not (docs/eviction.md "Comparing caches with the optimum").
///
/// Both are compared on the set query i attends over, G_i = S_{i−1} ∪ {i} (cache_schedule.hpp):
/// the cache as the step reads it. Then, per step, the masses decompose the retained-mass gap
/// exactly: r_i(A) − r_i(B) = only_first_mass_i − only_second_mass_i (up to rounding).

#include <Eigen/Core>
#include <vector>

#include "greedy/eviction/process/head_group.hpp"

namespace subevict::greedy {

/// Per-step overlap of schedules A (first) and B (second); vectors of length n.
struct ScheduleOverlap {
  /// |G_i(A) ∩ G_i(B)| / |G_i(A) ∪ G_i(B)| ∈ (0, 1] (both hold i, so the union is never empty).
  Eigen::VectorXd jaccard;
  /// Σ_{j ∈ G_i(A) \ G_i(B)} W_ij: the gain of the tokens only A holds at step i.
  Eigen::VectorXd only_first_mass;
  /// Σ_{j ∈ G_i(B) \ G_i(A)} W_ij: the gain of the tokens only B holds at step i.
  Eigen::VectorXd only_second_mass;

  /// Means over the steps (0 for n = 0).
  [[nodiscard]] double mean_jaccard() const;
  [[nodiscard]] double mean_only_first_mass() const;
  [[nodiscard]] double mean_only_second_mass() const;
};

/// The overlap of schedules `first` and `second` (t_j convention of cache_schedule.hpp) under gains
/// W (n × n, e.g. gain_matrix of the group: the masses are then on the scale of
/// schedule_step_mass). Preconditions, checked (std::invalid_argument): W square of size n, both
/// schedules of length n with t_j ∈ [j − 1, n − 1]. O(n²).
[[nodiscard]] ScheduleOverlap schedule_overlap(const Eigen::MatrixXd& gains, const std::vector<int>& first,
                                               const std::vector<int>& second);

/// The same on the gains of a head group (gain_matrix(group): its query heads' exact causal
/// attention, summed), streamed in blocks of query rows: memory O(block rows x n) instead of the
/// dense n x n matrix (8.6 GB at 32768 tokens), so any length the optimum reaches works. Equal to
/// schedule_overlap(gain_matrix(group), ...) up to the order of summation. Throws as the dense form
/// and as HeadGroup::validate.
[[nodiscard]] ScheduleOverlap schedule_overlap(const HeadGroup& group, const std::vector<int>& first,
                                               const std::vector<int>& second);

}  // namespace subevict::greedy
