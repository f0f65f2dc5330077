#include "greedy/diagnostics/tight_family.hpp"

#include <stdexcept>
#include <string>

namespace subevict::greedy {

namespace {

std::int64_t power(std::int64_t base, std::size_t exponent) {
  std::int64_t result = 1;
  for (std::size_t i = 0; i < exponent; ++i) {
    result *= base;
  }
  return result;
}

TightFamily build(std::size_t k, std::int64_t multiplier, bool tie_free, TieTowards ties) {
  if (k < 2 || k > 8) {
    throw std::invalid_argument("tight_family: k = " + std::to_string(k) +
                                ", expected 2 <= k <= 8");
  }
  TightFamily family;
  family.k = k;
  family.multiplier = multiplier;
  family.tie_free = tie_free;
  const auto ki = std::int64_t(k);
  const std::size_t cells = k * (k + 1);
  family.weights.resize(cells + (tie_free ? k : 0));
  for (std::size_t r = 0; r < k; ++r) {
    for (std::size_t c = 0; c <= k; ++c) {
      const std::int64_t w = c < k ? power(ki - 1, c) * power(ki, k - 1 - c) : power(ki - 1, k);
      family.weights[r * (k + 1) + c] = double(multiplier * w);
    }
  }
  std::vector<std::vector<std::size_t>> rows(k), columns(k);
  for (std::size_t r = 0; r < k; ++r) {
    for (std::size_t c = 0; c <= k; ++c) {
      rows[r].push_back(r * (k + 1) + c);
    }
  }
  for (std::size_t c = 0; c < k; ++c) {
    for (std::size_t r = 0; r < k; ++r) {
      columns[c].push_back(r * (k + 1) + c);
    }
    if (tie_free) {
      family.weights[cells + c] = 1.0;
      columns[c].push_back(cells + c);
    }
  }
  const bool columns_first = ties == TieTowards::kColumns;
  for (auto* group : columns_first ? std::vector{&columns, &rows} : std::vector{&rows, &columns}) {
    auto& indices = group == &rows ? family.rows : family.columns;
    for (auto& set : *group) {
      indices.push_back(family.sets.size());
      family.sets.push_back(std::move(set));
    }
  }
  return family;
}

}  // namespace

TightFamily tight_family(std::size_t k, TieTowards ties) { return build(k, 1, false, ties); }

TightFamily tie_free_tight_family(std::size_t k, std::int64_t multiplier, TieTowards ties) {
  if (multiplier <= std::int64_t(k) || multiplier > 1000) {
    throw std::invalid_argument("tie_free_tight_family: M = " + std::to_string(multiplier) +
                                ", expected k < M <= 1000 with k = " + std::to_string(k));
  }
  return build(k, multiplier, true, ties);
}

std::int64_t tight_family_optimum(const TightFamily& family) {
  return family.multiplier * power(std::int64_t(family.k), family.k + 1);
}

std::int64_t tight_family_columns_value(const TightFamily& family) {
  const auto k = std::int64_t(family.k);
  return family.multiplier * (power(k, family.k + 1) - k * power(k - 1, family.k)) +
         (family.tie_free ? k : 0);
}

}  // namespace subevict::greedy
