#pragma once
/// \file
/// The budget-additive function f(S) = min(B, Σ_{j∈S} w_j).

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "greedy/functions/set_function.hpp"

namespace subevict::greedy {

/// f(S) = min(B, Σ_{j∈S} w_j) with w_j ≥ 0 and B ≥ 0; f(∅) = 0. Monotone submodular (a concave
/// non-decreasing function of a non-negative modular one). Incremental state: O(1) per gain, add
/// and remove.
class BudgetAdditive final : public SetFunction {
 public:
  /// Throws std::invalid_argument for a negative or non-finite weight or budget.
  BudgetAdditive(std::vector<double> weights, double budget);

  std::size_t ground_size() const override { return weights_.size(); }
  /// O(|set|).
  double evaluate(std::span<const Element> set) const override;
  std::unique_ptr<SetState> empty_state() const override;
  std::string name() const override { return "budget-additive"; }
  bool monotone_submodular() const override { return true; }

  [[nodiscard]] double budget() const { return budget_; }
  [[nodiscard]] const std::vector<double>& weights() const { return weights_; }

 private:
  std::vector<double> weights_;
  double budget_;
};

}  // namespace subevict::greedy
