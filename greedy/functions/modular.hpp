#pragma once
/// \file
/// The modular function f(S) = Σ_{j∈S} w_j (e.g. the attention mass a token set retains).

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "greedy/functions/set_function.hpp"

namespace subevict::greedy {

/// f(S) = Σ_{j∈S} w_j, f(∅) = 0. Modular, hence submodular; monotone iff every w_j ≥ 0.
/// Incremental state: O(1) per gain, add and remove.
class Modular final : public SetFunction {
 public:
  /// Ground set {0, ..., weights.size() − 1}. Throws std::invalid_argument for a non-finite weight.
  explicit Modular(std::vector<double> weights);

  std::size_t ground_size() const override { return weights_.size(); }
  /// O(|set|).
  double evaluate(std::span<const Element> set) const override;
  std::unique_ptr<SetState> empty_state() const override;
  std::string name() const override { return "modular"; }
  /// True iff every weight is ≥ 0.
  bool monotone_submodular() const override { return monotone_; }

  [[nodiscard]] const std::vector<double>& weights() const { return weights_; }

 private:
  std::vector<double> weights_;
  bool monotone_ = true;
};

}  // namespace subevict::greedy
