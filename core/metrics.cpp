#include "core/metrics.hpp"

#include <stdexcept>
#include <string>

namespace subevict {

double retained_mass(const Eigen::VectorXd& a, const std::vector<bool>& in_set) {
  if (in_set.size() != std::size_t(a.size())) {
    throw std::invalid_argument("retained_mass: mask has " + std::to_string(in_set.size()) +
                                " entries, expected " + std::to_string(a.size()));
  }
  double r = 0;
  for (Eigen::Index j = 0; j < a.size(); ++j) {
    if (in_set[j]) r += a[j];
  }
  return r;
}

double total_variation(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  if (a.size() != b.size()) throw std::invalid_argument("total_variation: sizes differ");
  return 0.5 * (a - b).lpNorm<1>();
}

double output_relative_error(const Eigen::VectorXd& o, const Eigen::VectorXd& o_tilde) {
  const double err = (o - o_tilde).norm();
  const double ref = o.norm();
  return ref > 0 ? err / ref : err;
}

long long count_below(const Eigen::VectorXd& a, double tau) {
  if (a.size() == 0) throw std::invalid_argument("sparsity: empty row");
  if (!(tau >= 0 && tau <= 1)) throw std::invalid_argument("sparsity: tau must lie in [0, 1]");
  const double threshold = tau * a.maxCoeff();
  return (a.array() < threshold).count();
}

double sparsity(const Eigen::VectorXd& a, double tau) {
  return double(count_below(a, tau)) / double(a.size());
}

Eigen::VectorXd accumulated_attention(const Eigen::MatrixXd& a) { return a.colwise().sum().transpose(); }

}  // namespace subevict
