#pragma once
/// \file
/// A gain matrix W (cache_schedule.hpp) stored as its lower triangle only, column by column:
/// column j holds W_{j,j}, W_{j+1,j}, ..., W_{n−1,j} contiguously, so the mass token j earns while
/// cached (a column prefix sum) is one forward walk. n(n+1)/2 entries: 4.3 GB in double and
/// 2.1 GB in float at n = 32768, where the dense n × n double matrix needs 8.6 GB.
///
/// Scalar = float stores every entry rounded to float (relative error ≤ 2^−24 per entry); every
/// sum over entries is still formed in double.

#include <Eigen/Core>
#include <cstddef>
#include <string>
#include <vector>

#include "core/cpu_path.hpp"

#include "greedy/eviction/process/head_group.hpp"

namespace subevict::greedy {

template <class Scalar>
class TriangularGains {
 public:
  /// n = 0.
  TriangularGains() = default;

  /// n × n gains, all 0. Throws InputError (source "gains", "tokens") unless n ≥ 0.
  explicit TriangularGains(int n);

  /// The lower triangle of `gains` after validate_gains(gains, source) (square, finite, ≥ 0, 0
  /// above the diagonal; throws InputError naming `source` otherwise). O(n²).
  static TriangularGains from_dense(const Eigen::MatrixXd& gains, const std::string& source);

  /// n.
  [[nodiscard]] int size() const { return n_; }

  /// Column j: n − j entries, entry r = W_{j + r, j}. Precondition 0 ≤ j < n.
  [[nodiscard]] const Scalar* column(int j) const { return data_.data() + offset(j); }
  [[nodiscard]] Scalar* column(int j) { return data_.data() + offset(j); }

  /// W_ij (0 above the diagonal). Precondition 0 ≤ i, j < n.
  [[nodiscard]] double at(int i, int j) const { return i < j ? 0.0 : double(column(j)[i - j]); }

  /// Σ_j W_jj.
  [[nodiscard]] double diagonal_sum() const;

  /// Bytes held by the entries.
  [[nodiscard]] std::size_t bytes() const { return data_.size() * sizeof(Scalar); }

 private:
  [[nodiscard]] std::size_t offset(int j) const {
    const auto jj = static_cast<std::size_t>(j);
    return jj * static_cast<std::size_t>(n_) - jj * (jj - 1) / 2;
  }
  int n_ = 0;
  std::vector<Scalar> data_;
};

extern template class TriangularGains<float>;
extern template class TriangularGains<double>;

/// gain_matrix(group, weight_by_value_norm) (cache_schedule.hpp) stored as a TriangularGains:
/// exact causal attention in double, summed over the group's query heads (in Scalar), times ‖v_j‖
/// when weight_by_value_norm. Never forms the n × n matrix: memory is the result plus 8 · 64 · n
/// bytes. On `path` kAvx2Fma without a sliding window, each row's scores and exps come from the
/// AVX2 kernels of core/causal_weight_tiles.hpp (for_each_row_block); otherwise (and whatever
/// `path` says under a window) from core/attention.hpp for_each_attention_block's blocked GEMMs.
/// The two paths agree within a relative 2 · exact_rows_tolerance(n, d, M).log_normalizer +
/// gamma(n) per entry (the same weights, summed in another order, FMA, exp within 2 ulp), plus
/// Scalar's rounding. Throws as HeadGroup::validate, and InputError for kAvx2Fma on a CPU without
/// AVX2 and FMA. O(g n² d).
template <class Scalar>
[[nodiscard]] TriangularGains<Scalar> triangular_gain_matrix(const HeadGroup& group,
                                                             bool weight_by_value_norm = false,
                                                             CpuPath path = active_cpu_path());

/// r_i = Σ_{j ∈ G_i} W_ij under `last_step` (schedule_step_mass for stored gains, same
/// preconditions: std::invalid_argument when last_step is not a schedule of length n). O(Σ_j
/// lifetime_j).
template <class Scalar>
[[nodiscard]] Eigen::VectorXd schedule_step_mass(const TriangularGains<Scalar>& gains,
                                                 const std::vector<int>& last_step);

}  // namespace subevict::greedy
