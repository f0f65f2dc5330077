#include "greedy/optimizers/noisy_greedy.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "greedy/optimizers/naive_greedy.hpp"
#include "greedy/optimizers/random.hpp"

namespace subevict::greedy {

Selection noisy_greedy(const SetFunction& f, const NoisyGreedyOptions& options) {
  if (!std::isfinite(options.epsilon) || options.epsilon < 0) {
    throw std::invalid_argument("noisy_greedy: epsilon is " + std::to_string(options.epsilon) +
                                ", expected a finite number >= 0");
  }
  std::mt19937_64 engine(options.seed);
  const double epsilon = options.epsilon;
  const auto perturb = [&engine, epsilon](double gain) {
    return gain + epsilon * (2.0 * uniform_unit(engine) - 1.0);
  };
  return detail::greedy_scan(f, {options.k, false}, perturb, true, "noisy_greedy");
}

}  // namespace subevict::greedy
