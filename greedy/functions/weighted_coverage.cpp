#include "greedy/functions/weighted_coverage.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace subevict::greedy {
namespace {

std::vector<std::size_t> offsets_of(const std::vector<std::vector<std::size_t>>& sets) {
  std::vector<std::size_t> offsets{0};
  for (const auto& s : sets) offsets.push_back(offsets.back() + s.size());
  return offsets;
}

std::vector<std::size_t> items_of(const std::vector<std::vector<std::size_t>>& sets) {
  std::vector<std::size_t> items;
  for (const auto& s : sets) items.insert(items.end(), s.begin(), s.end());
  return items;
}

class WeightedCoverageState final : public SetState {
 public:
  explicit WeightedCoverageState(const WeightedCoverage& f)
      : SetState(f.ground_size()), f_(&f), count_(f.weights().size(), 0) {}

  double value() const override { return value_; }
  std::unique_ptr<SetState> clone() const override {
    return std::unique_ptr<SetState>(new WeightedCoverageState(*this));
  }

 protected:
  WeightedCoverageState(const WeightedCoverageState&) = default;

  double on_gain(Element e) const override {
    double gain = 0.0;
    for (std::size_t u : f_->set(e)) {
      if (count_[u] == 0) gain += f_->weights()[u];
    }
    return gain;
  }
  void on_add(Element e) override {
    for (std::size_t u : f_->set(e)) {
      if (count_[u]++ == 0) value_ += f_->weights()[u];
    }
  }
  void on_remove(Element e) override {
    for (std::size_t u : f_->set(e)) {
      if (--count_[u] == 0) value_ -= f_->weights()[u];
    }
    if (members().empty()) value_ = 0.0;  // no rounding residue on the empty set
  }

 private:
  const WeightedCoverage* f_;
  std::vector<std::size_t> count_;  // number of members covering each item
  double value_ = 0.0;
};

}  // namespace

WeightedCoverage::WeightedCoverage(std::vector<double> weights, std::vector<std::size_t> offsets,
                                   std::vector<std::size_t> items)
    : weights_(std::move(weights)), offsets_(std::move(offsets)), items_(std::move(items)) {
  for (std::size_t u = 0; u < weights_.size(); ++u) {
    if (!std::isfinite(weights_[u]) || weights_[u] < 0.0) {
      throw std::invalid_argument("WeightedCoverage: weight " + std::to_string(u) +
                                  " must be finite and nonnegative, got " +
                                  std::to_string(weights_[u]));
    }
  }
  if (offsets_.size() < 2 || offsets_.front() != 0 || offsets_.back() != items_.size() ||
      !std::is_sorted(offsets_.begin(), offsets_.end())) {
    throw std::invalid_argument("WeightedCoverage: offsets must be n + 1 >= 2 nondecreasing entries "
                                "from 0 to the number of items (" +
                                std::to_string(items_.size()) + ")");
  }
  for (std::size_t u : items_) {
    if (u >= weights_.size()) {
      throw std::invalid_argument("WeightedCoverage: item " + std::to_string(u) +
                                  " is outside the universe of size " +
                                  std::to_string(weights_.size()));
    }
  }
  // Sort and deduplicate each set, compacting the CSR arrays in place.
  std::size_t write = 0;
  for (std::size_t j = 0; j + 1 < offsets_.size(); ++j) {
    const auto first = items_.begin() + std::ptrdiff_t(offsets_[j]);
    const auto last = items_.begin() + std::ptrdiff_t(offsets_[j + 1]);
    std::sort(first, last);
    const auto unique_end = std::unique(first, last);
    offsets_[j] = write;
    write = std::size_t(std::copy(first, unique_end, items_.begin() + std::ptrdiff_t(write)) -
                        items_.begin());
  }
  offsets_.back() = write;
  items_.resize(write);
}

WeightedCoverage::WeightedCoverage(std::vector<double> weights,
                                   const std::vector<std::vector<std::size_t>>& sets)
    : WeightedCoverage(std::move(weights), offsets_of(sets), items_of(sets)) {}

double WeightedCoverage::evaluate(std::span<const Element> set) const {
  std::vector<char> covered(weights_.size(), 0);
  for (Element j : set) {
    for (std::size_t u : this->set(j)) covered[u] = 1;
  }
  double value = 0.0;
  for (std::size_t u = 0; u < weights_.size(); ++u) {
    if (covered[u] != 0) value += weights_[u];
  }
  return value;
}

std::unique_ptr<SetState> WeightedCoverage::empty_state() const {
  return std::make_unique<WeightedCoverageState>(*this);
}

}  // namespace subevict::greedy
