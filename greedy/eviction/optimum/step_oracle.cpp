#include "greedy/eviction/optimum/step_oracle.hpp"

#include <algorithm>
#include <utility>
#include <vector>
#include <numeric>
#include <stdexcept>
#include <string>

#include "greedy/eviction/process/cache_schedule.hpp"

namespace subevict::greedy {

namespace {

/// The `budget` past tokens of step i with the largest gain(j), ties to the lower index, ascending
/// (every past token when i <= budget).
template <class Gain>
std::vector<int> top_past(int i, int budget, const Gain& gain) {
  std::vector<int> order(static_cast<std::size_t>(i));
  std::iota(order.begin(), order.end(), 0);
  if (i > budget) {
    std::nth_element(order.begin(), order.begin() + budget, order.end(), [&](int a, int b) {
      return gain(a) > gain(b) || (gain(a) == gain(b) && a < b);
    });
    order.resize(static_cast<std::size_t>(budget));
    std::sort(order.begin(), order.end());
  }
  return order;
}

}  // namespace

StepOracle step_oracle(const Eigen::MatrixXd& gains, int budget, bool keep_sets) {
  const int n = validate_instance(gains, budget, "step_oracle");
  StepOracle out;
  out.per_step.resize(n);
  if (keep_sets) out.chosen.resize(n);
  for (int i = 0; i < n; ++i) {
    std::vector<int> top = top_past(i, budget, [&](int j) { return gains(i, j); });
    double u = gains(i, i);
    for (int j : top) u += gains(i, j);
    out.per_step[i] = u;
    if (keep_sets) out.chosen[i] = std::move(top);
  }
  out.total = out.per_step.sum();
  return out;
}

template <class Scalar>
std::vector<StepOracle> step_oracles(const TriangularGains<Scalar>& gains, const std::vector<int>& budgets,
                                     bool keep_sets) {
  for (int budget : budgets) validate_budget(budget, "step_oracle");
  const int n = gains.size();
  std::vector<StepOracle> out(budgets.size());
  for (StepOracle& o : out) {
    o.per_step.resize(n);
    if (keep_sets) o.chosen.resize(n);
  }
  // The budgets from the largest down: each selection runs inside the previous one's top part.
  std::vector<std::size_t> largest_first(budgets.size());
  std::iota(largest_first.begin(), largest_first.end(), std::size_t{0});
  std::sort(largest_first.begin(), largest_first.end(), [&](std::size_t a, std::size_t b) { return budgets[a] > budgets[b]; });
  // A row's past entries (gain, token), ordered by gain descending, ties to the lower token: a
  // strict order, so the top `taken` entries are the same set as top_past's.
  std::vector<std::pair<double, int>> row;
  row.reserve(std::size_t(n));
  const auto before = [](const std::pair<double, int>& a, const std::pair<double, int>& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  for (int i = 0; i < n; ++i) {
    row.resize(std::size_t(i));
    for (int j = 0; j < i; ++j) row[std::size_t(j)] = {double(gains.column(j)[i - j]), j};
    const double diagonal = double(gains.column(i)[0]);
    int end = i;  // row[0, end) holds the top `end` entries
    for (std::size_t b : largest_first) {
      const int taken = std::min(budgets[b], i);
      if (taken < end) std::nth_element(row.begin(), row.begin() + taken, row.begin() + end, before);
      end = taken;
      double u = diagonal;
      for (int r = 0; r < taken; ++r) u += row[std::size_t(r)].first;
      out[b].per_step[i] = u;
      if (keep_sets) {
        std::vector<int>& chosen = out[b].chosen[std::size_t(i)];
        chosen.resize(std::size_t(taken));
        for (int r = 0; r < taken; ++r) chosen[std::size_t(r)] = row[std::size_t(r)].second;
        std::sort(chosen.begin(), chosen.end());
      }
    }
  }
  for (StepOracle& o : out) o.total = o.per_step.sum();
  return out;
}

template std::vector<StepOracle> step_oracles<float>(const TriangularGains<float>&, const std::vector<int>&, bool);
template std::vector<StepOracle> step_oracles<double>(const TriangularGains<double>&, const std::vector<int>&, bool);

void restrict_to_rows(StepOracle& oracle, const std::vector<char>& mask) {
  if (Eigen::Index(mask.size()) != oracle.per_step.size()) {
    throw std::invalid_argument("restrict_to_rows: the mask has " + std::to_string(mask.size()) +
                                " entries for an oracle of " + std::to_string(oracle.per_step.size()) + " steps");
  }
  for (Eigen::Index i = 0; i < oracle.per_step.size(); ++i) {
    if (!mask[std::size_t(i)]) oracle.per_step[i] = 0.0;
  }
  oracle.total = oracle.per_step.sum();
}

}  // namespace subevict::greedy
