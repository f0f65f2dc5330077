#include "greedy/eviction/optimum/step_oracle.hpp"

#include <algorithm>
#include <functional>
#include <numeric>

#include "greedy/eviction/process/cache_schedule.hpp"

namespace subevict::greedy {

StepOracle step_oracle(const Eigen::MatrixXd& gains, int budget, bool keep_sets) {
  const int n = validate_instance(gains, budget, "step_oracle");
  StepOracle out;
  out.per_step.resize(n);
  if (keep_sets) out.chosen.resize(n);
  std::vector<int> order;
  order.reserve(n);
  for (int i = 0; i < n; ++i) {
    double u = gains(i, i);
    if (i <= budget) {
      for (int j = 0; j < i; ++j) u += gains(i, j);
      if (keep_sets) {
        out.chosen[i].resize(i);
        std::iota(out.chosen[i].begin(), out.chosen[i].end(), 0);
      }
    } else {
      // Larger gain first, then the lower index: the top `budget` of this order.
      order.resize(i);
      std::iota(order.begin(), order.end(), 0);
      const auto before = [&](int a, int b) {
        return gains(i, a) > gains(i, b) || (gains(i, a) == gains(i, b) && a < b);
      };
      std::nth_element(order.begin(), order.begin() + budget, order.end(), before);
      for (int r = 0; r < budget; ++r) u += gains(i, order[r]);
      if (keep_sets) {
        out.chosen[i].assign(order.begin(), order.begin() + budget);
        std::sort(out.chosen[i].begin(), out.chosen[i].end());
      }
    }
    out.per_step[i] = u;
  }
  out.total = out.per_step.sum();
  return out;
}

template <class Scalar>
std::vector<StepOracle> step_oracles(const TriangularGains<Scalar>& gains, const std::vector<int>& budgets) {
  for (int budget : budgets) validate_budget(budget, "step_oracle");
  const int n = gains.size();
  std::vector<StepOracle> out(budgets.size());
  for (StepOracle& o : out) o.per_step.resize(n);
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
    }
  }
  for (StepOracle& o : out) o.total = o.per_step.sum();
  return out;
}

template std::vector<StepOracle> step_oracles<float>(const TriangularGains<float>&, const std::vector<int>&);
template std::vector<StepOracle> step_oracles<double>(const TriangularGains<double>&, const std::vector<int>&);

}  // namespace subevict::greedy
