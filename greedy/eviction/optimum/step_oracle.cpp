#include "greedy/eviction/optimum/step_oracle.hpp"

#include <algorithm>
#include <functional>
#include <numeric>

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
  std::vector<double> row;
  row.reserve(n);
  for (int i = 0; i < n; ++i) {
    row.resize(i);
    for (int j = 0; j < i; ++j) row[j] = double(gains.column(j)[i - j]);
    std::sort(row.begin(), row.end(), std::greater<>());
    for (int j = 1; j < i; ++j) row[j] += row[j - 1];  // prefix sums of the largest entries
    const double diagonal = double(gains.column(i)[0]);
    for (std::size_t b = 0; b < budgets.size(); ++b) {
      const int taken = std::min(budgets[b], i);
      out[b].per_step[i] = diagonal + (taken > 0 ? row[taken - 1] : 0.0);
      if (keep_sets) out[b].chosen[i] = top_past(i, budgets[b], [&](int j) { return gains.column(j)[i - j]; });
    }
  }
  for (StepOracle& o : out) o.total = o.per_step.sum();
  return out;
}

template std::vector<StepOracle> step_oracles<float>(const TriangularGains<float>&, const std::vector<int>&, bool);
template std::vector<StepOracle> step_oracles<double>(const TriangularGains<double>&, const std::vector<int>&, bool);

}  // namespace subevict::greedy
