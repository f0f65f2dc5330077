#include "greedy/optimizers/naive_greedy.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "greedy/optimizers/online_bound.hpp"

namespace subevict::greedy {

void check_cardinality(const SetFunction& f, std::size_t k, const char* caller) {
  if (k > f.ground_size()) {
    throw std::invalid_argument(
        std::string(caller) + ": k = " + std::to_string(k) + " exceeds the ground set size n = " +
        std::to_string(f.ground_size()) + " of " + f.name() + "; expected k <= n");
  }
}

namespace detail {

Selection greedy_scan(const SetFunction& f, const NaiveGreedyOptions& options,
                      const std::function<double(double)>& perturb, bool bound,
                      const char* caller) {
  check_cardinality(f, options.k, caller);
  const auto start = std::chrono::steady_clock::now();
  const std::size_t n = f.ground_size();
  const bool certify = bound && f.monotone_submodular();
  Selection result;
  auto state = f.empty_state();
  std::vector<double> gains;
  gains.reserve(n);
  for (std::size_t t = 0; t < options.k; ++t) {
    gains.clear();
    Element best = n;
    double best_score = -std::numeric_limits<double>::infinity();
    for (Element e = 0; e < n; ++e) {
      if (state->contains(e)) {
        continue;
      }
      const double g = state->gain(e);
      ++result.oracle_calls;
      gains.push_back(g);
      const double score = perturb(g);
      if (score > best_score) {  // strict: ties keep the lower index
        best_score = score;
        best = e;
      }
    }
    if (certify) {
      result.upper_bound =
          std::min(result.upper_bound, online_bound(state->value(), gains, options.k));
    }
    if (best == n || (options.stop_at_nonpositive_gain && best_score <= 0)) {
      break;
    }
    state->add(best);
    result.set.push_back(best);
  }
  if (certify) {
    result.upper_bound =
        std::min(result.upper_bound, online_bound(*state, options.k, result.oracle_calls));
  }
  result.value = state->value();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace detail

Selection naive_greedy(const SetFunction& f, const NaiveGreedyOptions& options) {
  return detail::greedy_scan(
      f, options, [](double g) { return g; }, true, "naive_greedy");
}

}  // namespace subevict::greedy
