#pragma once
/// \file
/// The concave-over-modular function f(S) = h(Σ_{j∈S} w_j) − h(0), the H2O score family
/// (theory.md §4) with h from greedy/functions/concave.hpp.

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "greedy/functions/concave.hpp"
#include "greedy/functions/set_function.hpp"

namespace subevict::greedy {

/// f(S) = h(Σ_{j∈S} w_j) − h(0) with w_j ≥ 0. The constant h(0) (1 for sqrt(z + 1), 0 otherwise)
/// is subtracted so that f(∅) = 0, which the Nemhauser–Wolsey–Fisher guarantee and the online
/// bound assume; gains, maximizers and ratios of differences are unaffected, and h itself stays
/// available as concave_value. Monotone submodular (h concave, non-decreasing on z ≥ 0).
/// Incremental state: O(1) per gain, add and remove.
class ConcaveOverModular final : public SetFunction {
 public:
  /// Throws std::invalid_argument for a negative or non-finite weight.
  ConcaveOverModular(std::vector<double> weights, Concave h);

  std::size_t ground_size() const override { return weights_.size(); }
  /// O(|set|).
  double evaluate(std::span<const Element> set) const override;
  std::unique_ptr<SetState> empty_state() const override;
  /// "concave-over-modular-" followed by concave_name(h), e.g. "concave-over-modular-sqrt".
  std::string name() const override;
  bool monotone_submodular() const override { return true; }

  [[nodiscard]] Concave concave() const { return h_; }
  [[nodiscard]] const std::vector<double>& weights() const { return weights_; }

 private:
  std::vector<double> weights_;
  Concave h_;
};

}  // namespace subevict::greedy
