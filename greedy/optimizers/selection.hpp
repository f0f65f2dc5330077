#pragma once
/// \file
/// The result every static optimizer returns, greedy or exact, so that reports and the CLI treat
/// them alike.

#include <cstdint>
#include <limits>
#include <vector>

#include "greedy/functions/set_function.hpp"

namespace subevict::greedy {

/// A chosen set with its value, what is proven about OPT_k = max_{|S| ≤ k} f(S), and the cost.
struct Selection {
  /// The chosen elements: in the order picked (greedy methods) or ascending (exact methods).
  std::vector<Element> set;
  /// f(set).
  double value = 0.0;
  /// A proven upper bound on OPT_k: equal to `value` when `optimal`; the best online bound for
  /// greedy methods that compute one; +infinity when nothing is proven.
  double upper_bound = std::numeric_limits<double>::infinity();
  /// True when `value` is proven to equal OPT_k (exhaustive search, a closed branch-and-bound tree,
  /// an integer program solved to optimality).
  bool optimal = false;
  /// Number of value or marginal-gain queries made to the set function (SetFunction::evaluate,
  /// SetState::gain); exact solvers that never query the function report 0.
  std::uint64_t oracle_calls = 0;
  /// Search-tree nodes explored (branch and bound, integer programs); 0 for greedy methods.
  std::uint64_t nodes = 0;
  /// Wall-clock seconds spent.
  double seconds = 0.0;
};

}  // namespace subevict::greedy
