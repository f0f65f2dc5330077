#include "greedy/eviction/optimum/step_oracle.hpp"

#include <algorithm>
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

}  // namespace subevict::greedy
