#include "greedy/eviction/process/triangular_gains.hpp"

#include <algorithm>
#include <stdexcept>

#include "core/attention.hpp"
#include "core/causal_weight_tiles.hpp"
#include "core/cpu_path.hpp"
#include "core/input_error.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"

namespace subevict::greedy {

template <class Scalar>
TriangularGains<Scalar>::TriangularGains(int n) : n_(n) {
  if (n < 0) throw InputError("gains", "tokens", "an integer >= 0", std::to_string(n));
  data_.assign(static_cast<std::size_t>(n) * (static_cast<std::size_t>(n) + 1) / 2, Scalar(0));
}

template <class Scalar>
TriangularGains<Scalar> TriangularGains<Scalar>::from_dense(const Eigen::MatrixXd& gains,
                                                            const std::string& source) {
  validate_gains(gains, source);
  TriangularGains out(static_cast<int>(gains.rows()));
  for (int j = 0; j < out.n_; ++j) {
    Scalar* column = out.column(j);
    for (int i = j; i < out.n_; ++i) column[i - j] = static_cast<Scalar>(gains(i, j));
  }
  return out;
}

template <class Scalar>
double TriangularGains<Scalar>::diagonal_sum() const {
  double sum = 0.0;
  for (int j = 0; j < n_; ++j) sum += double(column(j)[0]);
  return sum;
}

template class TriangularGains<float>;
template class TriangularGains<double>;

template <class Scalar>
TriangularGains<Scalar> triangular_gain_matrix(const HeadGroup& group, bool weight_by_value_norm, CpuPath path) {
  group.validate();
  const int n = group.tokens();
  TriangularGains<Scalar> out(n);
  Eigen::VectorXd weight = Eigen::VectorXd::Ones(n);
  if (weight_by_value_norm) weight = group.v.cast<double>().rowwise().norm();
  if (group.window == 0 && path == CpuPath::kAvx2Fma) {
    // Each row's scores once, on the AVX2 kernels (the row blocks of CausalWeightTiles).
    for (const ConstHeadMap& q : group.q) {
      CausalWeightTiles::for_each_row_block(q, group.k, group.scale, 0, [&](const CausalWeightTiles::RowBlock& b) {
        for (int j = 0; j < b.keys; ++j) {
          Scalar* column = out.column(j);  // column[i - j] is row i
          const double* exps = b.exps + std::size_t(j) * CausalWeightTiles::kRowBlock;
          for (int r = std::max(0, j - b.first_row); r < b.rows; ++r) {
            column[b.first_row + r - j] += static_cast<Scalar>(exps[r] * b.inverse_total[r] * weight[j]);
          }
        }
      }, path);
    }
    return out;
  }
  constexpr int kBlockRows = 64;
  for (const ConstHeadMap& q : group.q) {
    for_each_attention_block(q, group.k, group.scale, kBlockRows,
                             [&](int first_row, const Eigen::MatrixXd& probs) {
                               const int rows = static_cast<int>(probs.rows());
                               for (int j = 0; j < first_row + rows; ++j) {
                                 Scalar* column = out.column(j);
                                 for (int r = std::max(0, j - first_row); r < rows; ++r) {
                                   const int i = first_row + r;
                                   column[i - j] += static_cast<Scalar>(probs(r, j) * weight[j]);
                                 }
                               }
                             },
                             group.window);
  }
  return out;
}

template TriangularGains<float> triangular_gain_matrix<float>(const HeadGroup&, bool, CpuPath);
template TriangularGains<double> triangular_gain_matrix<double>(const HeadGroup&, bool, CpuPath);

template <class Scalar>
Eigen::VectorXd schedule_step_mass(const TriangularGains<Scalar>& gains,
                                   const std::vector<int>& last_step) {
  const int n = gains.size();
  if (static_cast<int>(last_step.size()) != n) {
    throw std::invalid_argument("schedule_step_mass: last_step must have n = " +
                                std::to_string(n) + " entries");
  }
  (void)cache_sizes(last_step);  // throws std::invalid_argument unless t_j ∈ [j − 1, n − 1]
  Eigen::VectorXd mass(n);
  for (int j = 0; j < n; ++j) mass[j] = double(gains.column(j)[0]);
  // Token j is in G_i for i = j + 1 .. t_j + 1 (capped at n − 1).
  for (int j = 0; j < n; ++j) {
    const Scalar* column = gains.column(j);
    const int last = std::min(last_step[j] + 1, n - 1);
    for (int i = j + 1; i <= last; ++i) mass[i] += double(column[i - j]);
  }
  return mass;
}

template Eigen::VectorXd schedule_step_mass<float>(const TriangularGains<float>&, const std::vector<int>&);
template Eigen::VectorXd schedule_step_mass<double>(const TriangularGains<double>&, const std::vector<int>&);

}  // namespace subevict::greedy
