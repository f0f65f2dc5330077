#include "greedy/exact/exhaustive.hpp"

#include <chrono>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "greedy/optimizers/naive_greedy.hpp"

namespace subevict::greedy {

std::uint64_t count_subsets_up_to(std::size_t n, std::size_t k) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t total = 0;
  std::uint64_t binomial = 1;  // C(n, j)
  for (std::size_t j = 0; j <= k && j <= n; ++j) {
    if (total > kMax - binomial) {
      return kMax;
    }
    total += binomial;
    // C(n, j+1) = C(n, j) (n − j) / (j + 1) (exact: the product is divisible); saturate where
    // the product would overflow, which only makes the count refuse earlier.
    const std::uint64_t factor = n - j;
    binomial = (factor != 0 && binomial > kMax / factor) ? kMax : binomial * factor / (j + 1);
  }
  return total;
}

namespace {

struct Search {
  SetState& state;
  std::size_t n;
  std::size_t k;
  Selection& best;

  /// Visits the current set, then its extensions by elements ≥ first.
  void visit(Element first) {
    ++best.nodes;
    const double value = state.value();
    if (value > best.value) {
      best.value = value;
      best.set = state.members();
    }
    if (state.size() == k) {
      return;
    }
    for (Element e = first; e < n; ++e) {
      state.add(e);
      visit(e + 1);
      state.remove(e);
    }
  }
};

}  // namespace

Selection exhaustive_optimum(const SetFunction& f, const ExhaustiveOptions& options) {
  check_cardinality(f, options.k, "exhaustive_optimum");
  const std::uint64_t sets = count_subsets_up_to(f.ground_size(), options.k);
  if (sets > options.max_sets) {
    throw std::invalid_argument("exhaustive_optimum: n = " + std::to_string(f.ground_size()) +
                                ", k = " + std::to_string(options.k) + " gives " +
                                std::to_string(sets) + " sets to enumerate; expected at most " +
                                std::to_string(options.max_sets) +
                                " (ExhaustiveOptions::max_sets)");
  }
  const auto start = std::chrono::steady_clock::now();
  auto state = f.empty_state();
  Selection best;
  best.value = -std::numeric_limits<double>::infinity();
  Search{*state, f.ground_size(), options.k, best}.visit(0);
  best.oracle_calls = best.nodes;
  best.upper_bound = best.value;
  best.optimal = true;
  best.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return best;
}

}  // namespace subevict::greedy
