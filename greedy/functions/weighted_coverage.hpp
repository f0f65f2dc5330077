#pragma once
/// \file
/// Weighted coverage f(S) = Σ_{u ∈ ∪_{j∈S} set_j} w_u over a universe of weighted items and sparse
/// candidate sets (theory.md §4). f(∅) = 0; monotone and submodular since every w_u ≥ 0.

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "greedy/functions/set_function.hpp"

namespace subevict::greedy {

/// Candidate sets in compressed sparse rows: set j holds items[offsets[j] .. offsets[j+1]).
class WeightedCoverage final : public SetFunction {
 public:
  /// `weights` (one per item of the universe, finite, ≥ 0), `offsets` (n + 1 nondecreasing
  /// entries from 0 to items.size()), `items` (each < weights.size()). Each set's items are
  /// sorted and duplicates dropped (a set has no multiplicity). Throws std::invalid_argument
  /// naming the first violation. O(weights + items · log).
  WeightedCoverage(std::vector<double> weights, std::vector<std::size_t> offsets,
                   std::vector<std::size_t> items);

  /// Convenience: the candidate sets as lists of items; same checks.
  WeightedCoverage(std::vector<double> weights, const std::vector<std::vector<std::size_t>>& sets);

  std::size_t ground_size() const override { return offsets_.size() - 1; }
  /// O(Σ_{j∈S} |set_j| + universe).
  double evaluate(std::span<const Element> set) const override;
  /// The state keeps a cover count per item: value O(1), gain O(|set_e|), add and remove
  /// O(|set_e|).
  std::unique_ptr<SetState> empty_state() const override;
  std::string name() const override { return "weighted-coverage"; }
  bool monotone_submodular() const override { return true; }

  /// The items of candidate set j (sorted, distinct).
  std::span<const std::size_t> set(Element j) const {
    return {items_.data() + offsets_[j], offsets_[j + 1] - offsets_[j]};
  }
  /// The item weights w_u.
  const std::vector<double>& weights() const { return weights_; }

 private:
  std::vector<double> weights_;
  std::vector<std::size_t> offsets_;
  std::vector<std::size_t> items_;
};

}  // namespace subevict::greedy
