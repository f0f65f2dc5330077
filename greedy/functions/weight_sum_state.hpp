#pragma once
/// \file
/// The shared machinery of the functions of the form f(S) = g(Σ_{j∈S} w_j) (modular,
/// concave-over-modular, budget-additive): weight validation and an O(1)-per-update incremental
/// state that keeps the running sum z = Σ_{j∈S} w_j.

#include <cmath>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "greedy/functions/set_function.hpp"

namespace subevict::greedy {

/// Checks that every weight is finite (and ≥ 0 when `nonnegative`); throws std::invalid_argument
/// naming `function` and the first offending index otherwise.
inline void check_weights(const std::vector<double>& weights, bool nonnegative,
                          const std::string& function) {
  for (std::size_t j = 0; j < weights.size(); ++j) {
    if (!std::isfinite(weights[j]) || (nonnegative && weights[j] < 0)) {
      throw std::invalid_argument(function + ": weight " + std::to_string(j) + " is " +
                                  std::to_string(weights[j]) + ", expected a finite" +
                                  (nonnegative ? " non-negative" : "") + " number");
    }
  }
}

/// Σ_{j∈set} weights[j] (the scratch path; the incremental one is WeightSumState).
inline double weight_sum(const std::vector<double>& weights, std::span<const Element> set) {
  double z = 0;
  for (Element j : set) {
    z += weights.at(j);
  }
  return z;
}

/// Incremental state of f(S) = Outer(Σ_{j∈S} w_j), given by `Outer`, a copyable
/// callable double(double) mapping the running sum z to f(S). O(1) per gain, add and remove (two
/// calls to Outer). The sum is reset to exactly 0 when S becomes empty so that rounding from long
/// add/remove sequences does not survive an empty set. `weights` must outlive the state.
template <class Outer>
class WeightSumState final : public SetState {
 public:
  WeightSumState(const std::vector<double>& weights, Outer outer)
      : SetState(weights.size()), weights_(&weights), outer_(outer), value_(outer(0.0)) {}

  double value() const override { return value_; }
  std::unique_ptr<SetState> clone() const override {
    return std::make_unique<WeightSumState>(*this);
  }

 protected:
  double on_gain(Element e) const override { return outer_(z_ + (*weights_)[e]) - value_; }
  void on_add(Element e) override { set_sum(z_ + (*weights_)[e]); }
  void on_remove(Element e) override { set_sum(size() == 0 ? 0.0 : z_ - (*weights_)[e]); }

 private:
  void set_sum(double z) {
    z_ = z;
    value_ = outer_(z_);
  }

  const std::vector<double>* weights_;
  Outer outer_;
  double z_ = 0;
  double value_;
};

}  // namespace subevict::greedy
