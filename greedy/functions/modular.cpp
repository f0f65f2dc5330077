#include "greedy/functions/modular.hpp"

#include <algorithm>

#include "greedy/functions/weight_sum_state.hpp"

namespace subevict::greedy {

namespace {
struct Identity {
  double operator()(double z) const { return z; }
};
}  // namespace

Modular::Modular(std::vector<double> weights) : weights_(std::move(weights)) {
  check_weights(weights_, false, "Modular");
  monotone_ = std::all_of(weights_.begin(), weights_.end(), [](double w) { return w >= 0; });
}

double Modular::evaluate(std::span<const Element> set) const { return weight_sum(weights_, set); }

std::unique_ptr<SetState> Modular::empty_state() const {
  return std::make_unique<WeightSumState<Identity>>(weights_, Identity{});
}

}  // namespace subevict::greedy
