#include "greedy/exact/pmedian_local_search.hpp"

#include <algorithm>
#include <limits>

#include "core/input_error.hpp"

namespace subevict::greedy {

std::vector<Element> pmedian_greedy(const PMedianInstance& instance) {
  const Eigen::MatrixXd& d = instance.distance;
  const auto n = Eigen::Index(instance.n);
  Eigen::VectorXd nearest = Eigen::VectorXd::Constant(n, std::numeric_limits<double>::infinity());
  std::vector<Element> set;
  std::vector<bool> in(instance.n, false);
  while (set.size() < instance.p) {
    Element best = 0;
    double best_value = std::numeric_limits<double>::infinity();
    for (Eigen::Index c = 0; c < n; ++c) {
      if (in[std::size_t(c)]) continue;
      const double value = nearest.cwiseMin(d.col(c)).sum();
      if (value < best_value) {
        best_value = value;
        best = Element(c);
      }
    }
    in[best] = true;
    set.push_back(best);
    nearest = nearest.cwiseMin(d.col(Eigen::Index(best)));
  }
  return set;
}

namespace {

/// Each client's nearest median (as a position in `set`), its distance and the second-nearest
/// distance (+infinity when |set| = 1).
struct Nearest {
  std::vector<std::size_t> first;
  std::vector<double> d1;
  std::vector<double> d2;
  void update(const Eigen::MatrixXd& d, const std::vector<Element>& set) {
    const std::size_t n = std::size_t(d.rows());
    first.assign(n, 0);
    d1.assign(n, std::numeric_limits<double>::infinity());
    d2.assign(n, std::numeric_limits<double>::infinity());
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t s = 0; s < set.size(); ++s) {
        const double x = d(Eigen::Index(i), Eigen::Index(set[s]));
        if (x < d1[i]) {
          d2[i] = d1[i];
          d1[i] = x;
          first[i] = s;
        } else if (x < d2[i]) {
          d2[i] = x;
        }
      }
    }
  }
};

}  // namespace

double vertex_substitution(const PMedianInstance& instance, std::vector<Element>& set) {
  const std::size_t n = instance.n;
  if (set.empty()) throw InputError("vertex_substitution", "set", "a non-empty set of medians");
  std::vector<bool> in(n, false);
  for (Element j : set) {
    if (j >= n || in[j]) {
      throw InputError("vertex_substitution", "set", "distinct vertices below " + std::to_string(n),
                       std::to_string(j));
    }
    in[j] = true;
  }
  const Eigen::MatrixXd& d = instance.distance;
  Nearest near;
  near.update(d, set);
  std::vector<double> loss(set.size());
  for (;;) {
    // Swap value of (c in, set[s] out) = −gain(c) + loss[s]: clients closer to c than to their
    // nearest median move to c whatever leaves; the others lose only when their nearest leaves,
    // and then go to c or to their second-nearest median.
    double best_delta = 0.0;
    Element best_c = n;
    std::size_t best_s = 0;
    for (Element c = 0; c < n; ++c) {
      if (in[c]) continue;
      double gain = 0.0;
      std::fill(loss.begin(), loss.end(), 0.0);
      for (std::size_t i = 0; i < n; ++i) {
        const double x = d(Eigen::Index(i), Eigen::Index(c));
        if (x < near.d1[i]) {
          gain += near.d1[i] - x;
        } else {
          loss[near.first[i]] += std::min(x, near.d2[i]) - near.d1[i];
        }
      }
      for (std::size_t s = 0; s < set.size(); ++s) {
        const double delta = loss[s] - gain;
        if (delta < best_delta) {
          best_delta = delta;
          best_c = c;
          best_s = s;
        }
      }
    }
    // Integral data gives exact swap values; the relative margin keeps rounding in fractional
    // data from cycling.
    if (best_c == n || best_delta > -1e-12 * (1.0 + near.d1.size())) break;
    in[set[best_s]] = false;
    in[best_c] = true;
    set[best_s] = best_c;
    near.update(d, set);
  }
  std::sort(set.begin(), set.end());
  return pmedian_value(instance, set);
}

}  // namespace subevict::greedy
