#include "greedy/functions/budget_additive.hpp"

#include <algorithm>
#include <cmath>

#include "greedy/functions/weight_sum_state.hpp"

namespace subevict::greedy {

namespace {
struct Capped {
  double budget;
  double operator()(double z) const { return std::min(budget, z); }
};
}  // namespace

BudgetAdditive::BudgetAdditive(std::vector<double> weights, double budget)
    : weights_(std::move(weights)), budget_(budget) {
  check_weights(weights_, true, "BudgetAdditive");
  if (!std::isfinite(budget_) || budget_ < 0) {
    throw std::invalid_argument("BudgetAdditive: budget is " + std::to_string(budget_) +
                                ", expected a finite non-negative number");
  }
}

double BudgetAdditive::evaluate(std::span<const Element> set) const {
  return Capped{budget_}(weight_sum(weights_, set));
}

std::unique_ptr<SetState> BudgetAdditive::empty_state() const {
  return std::make_unique<WeightSumState<Capped>>(weights_, Capped{budget_});
}

}  // namespace subevict::greedy
