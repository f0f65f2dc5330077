#include "core/rotary.hpp"

#include <cmath>
#include <stdexcept>

namespace subevict {

void Rotary::validate(int head_dim) const {
  if (!(std::isfinite(base) && base > 1.0)) {
    throw std::invalid_argument("rotary: base " + std::to_string(base) + ", expected a finite base > 1");
  }
  if (dims < 2 || dims % 2 != 0 || dims > head_dim) {
    throw std::invalid_argument("rotary: " + std::to_string(dims) + " rotated dims, expected an even count from 2 to head_dim " +
                                std::to_string(head_dim));
  }
}

namespace {

/// Σ_p R(p) over the positions p = first, .., first + count − 1, scaled by `weight`.
Eigen::MatrixXd summed_rotation(const Rotary& rotary, int head_dim, double first, long count, double weight) {
  Eigen::MatrixXd r = Eigen::MatrixXd::Zero(head_dim, head_dim);
  const int half = rotary.dims / 2;
  for (int j = 0; j < half; ++j) {
    const double theta = std::pow(rotary.base, -2.0 * double(j) / double(rotary.dims));
    double c = 0.0, s = 0.0;
    for (long p = 0; p < count; ++p) {
      c += std::cos((first + double(p)) * theta);
      s += std::sin((first + double(p)) * theta);
    }
    r(j, j) = r(j + half, j + half) = weight * c;
    r(j, j + half) = -weight * s;
    r(j + half, j) = weight * s;
  }
  for (int j = rotary.dims; j < head_dim; ++j) r(j, j) = 1.0;
  return r;
}

}  // namespace

Eigen::MatrixXd rotation(const Rotary& rotary, int head_dim, double position) {
  return summed_rotation(rotary, head_dim, position, 1, 1.0);
}

Eigen::MatrixXd average_rotation(const Rotary& rotary, int head_dim, long first, int count) {
  if (count <= 0) return Eigen::MatrixXd::Identity(head_dim, head_dim);
  return summed_rotation(rotary, head_dim, double(first), count, 1.0 / double(count));
}

}  // namespace subevict
