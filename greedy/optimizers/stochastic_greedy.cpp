#include "greedy/optimizers/stochastic_greedy.hpp"

#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "greedy/optimizers/naive_greedy.hpp"
#include "greedy/optimizers/random.hpp"

namespace subevict::greedy {

std::size_t stochastic_sample_size(std::size_t n, std::size_t k, double epsilon) {
  if (!(epsilon > 0 && epsilon < 1)) {
    throw std::invalid_argument("stochastic_greedy: epsilon is " + std::to_string(epsilon) +
                                ", expected a number in (0, 1)");
  }
  if (k == 0) {
    return 0;
  }
  return std::size_t(std::ceil(double(n) / double(k) * std::log(1.0 / epsilon)));
}

Selection stochastic_greedy(const SetFunction& f, const StochasticGreedyOptions& options) {
  check_cardinality(f, options.k, "stochastic_greedy");
  const std::size_t sample = stochastic_sample_size(f.ground_size(), options.k, options.epsilon);
  const auto start = std::chrono::steady_clock::now();
  std::mt19937_64 engine(options.seed);
  std::vector<Element> remaining(f.ground_size());
  std::iota(remaining.begin(), remaining.end(), Element{0});
  Selection result;
  auto state = f.empty_state();
  for (std::size_t t = 0; t < options.k; ++t) {
    const std::size_t s = std::min(sample, remaining.size());
    std::size_t best = 0;  // position in `remaining`
    double best_gain = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < s; ++i) {
      std::swap(remaining[i], remaining[i + uniform_below(engine, remaining.size() - i)]);
      const double g = state->gain(remaining[i]);
      ++result.oracle_calls;
      if (g > best_gain || (g == best_gain && remaining[i] < remaining[best])) {
        best_gain = g;
        best = i;
      }
    }
    state->add(remaining[best]);
    result.set.push_back(remaining[best]);
    remaining[best] = remaining.back();
    remaining.pop_back();
  }
  result.value = state->value();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace subevict::greedy
