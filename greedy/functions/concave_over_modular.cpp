#include "greedy/functions/concave_over_modular.hpp"

#include "greedy/functions/weight_sum_state.hpp"

namespace subevict::greedy {

namespace {
/// z ↦ h(z) − h(0).
struct Shifted {
  Concave h;
  double operator()(double z) const { return concave_value(h, z) - concave_value(h, 0.0); }
};
}  // namespace

ConcaveOverModular::ConcaveOverModular(std::vector<double> weights, Concave h)
    : weights_(std::move(weights)), h_(h) {
  check_weights(weights_, true, "ConcaveOverModular");
}

double ConcaveOverModular::evaluate(std::span<const Element> set) const {
  return Shifted{h_}(weight_sum(weights_, set));
}

std::unique_ptr<SetState> ConcaveOverModular::empty_state() const {
  return std::make_unique<WeightSumState<Shifted>>(weights_, Shifted{h_});
}

std::string ConcaveOverModular::name() const { return "concave-over-modular-" + concave_name(h_); }

}  // namespace subevict::greedy
