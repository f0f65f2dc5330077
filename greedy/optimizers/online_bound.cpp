#include "greedy/optimizers/online_bound.hpp"

#include <algorithm>
#include <functional>
#include <vector>

namespace subevict::greedy {

double online_bound(double value, std::span<const double> gains, std::size_t k) {
  std::vector<double> positive;
  positive.reserve(gains.size());
  for (double g : gains) {
    if (g > 0) {
      positive.push_back(g);
    }
  }
  const std::size_t take = std::min(k, positive.size());
  std::nth_element(positive.begin(), positive.begin() + std::ptrdiff_t(take), positive.end(),
                   std::greater<>());
  double bound = value;
  for (std::size_t i = 0; i < take; ++i) {
    bound += positive[i];
  }
  return bound;
}

double online_bound(const SetState& state, std::size_t k, std::uint64_t& oracle_calls) {
  std::vector<double> gains;
  gains.reserve(state.ground_size() - state.size());
  for (Element e = 0; e < state.ground_size(); ++e) {
    if (!state.contains(e)) {
      gains.push_back(state.gain(e));
      ++oracle_calls;
    }
  }
  return online_bound(state.value(), gains, k);
}

}  // namespace subevict::greedy
