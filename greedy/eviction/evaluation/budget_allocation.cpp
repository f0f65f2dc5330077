#include "greedy/eviction/evaluation/budget_allocation.hpp"

#include <algorithm>
#include <cmath>
#include <queue>
#include <utility>

#include "core/input_error.hpp"
#include "core/number_text.hpp"

namespace subevict::greedy {

double concavity_slack(const std::vector<double>& curve) {
  double scale = 1.0;
  for (double v : curve) scale = std::max(scale, std::abs(v));
  return 1e-9 * scale;
}

namespace {

/// Throws unless `curve` (head h) is finite, nondecreasing and concave within its slack.
void check_curve(const std::vector<double>& curve, std::size_t h, const std::string& source) {
  const std::string field = "curve of head " + std::to_string(h);
  if (curve.empty()) throw InputError(source, field, "OPT(k) for k = 1..K, K >= 1", "an empty curve");
  for (std::size_t i = 0; i < curve.size(); ++i) {
    if (!std::isfinite(curve[i])) {
      throw InputError(source, field, "finite values", significant_digits(curve[i], 10) + " at k = " + std::to_string(i + 1));
    }
  }
  const double slack = concavity_slack(curve);
  for (std::size_t i = 1; i < curve.size(); ++i) {
    const double step = curve[i] - curve[i - 1];
    if (step < -slack) {
      throw InputError(source, field, "a nondecreasing OPT(k)",
                       "OPT(" + std::to_string(i + 1) + ") < OPT(" + std::to_string(i) + ") by " +
                           significant_digits(-step, 3));
    }
    if (i >= 2 && step > curve[i - 1] - curve[i - 2] + slack) {
      throw InputError(source, field, "a concave OPT(k) (the marginal allocation is exact only then)",
                       "the increment to k = " + std::to_string(i + 1) + " exceeds the one before by " +
                           significant_digits(step - (curve[i - 1] - curve[i - 2]), 3));
    }
  }
}

}  // namespace

BudgetAllocation allocate_budget(const std::vector<std::vector<double>>& curves, long long total,
                                 const std::string& source) {
  if (curves.empty()) throw InputError(source, "heads", "at least one head's curve", "none");
  long long capacity = 0;
  for (std::size_t h = 0; h < curves.size(); ++h) {
    check_curve(curves[h], h, source);
    capacity += (long long)curves[h].size();
  }
  const long long heads = (long long)curves.size();
  if (total < heads || total > capacity) {
    throw InputError(source, "total budget",
                     "an integer in [" + std::to_string(heads) + ", " + std::to_string(capacity) +
                         "] (one slot per head at least, the curves' largest budgets at most)",
                     std::to_string(total));
  }
  BudgetAllocation out;
  out.budgets.assign(curves.size(), 1);
  // (next increment, -head): the largest increment first, the lowest head among equal ones.
  std::priority_queue<std::pair<double, long long>> next;
  const auto offer = [&](std::size_t h) {
    const std::size_t k = std::size_t(out.budgets[h]);
    if (k < curves[h].size()) next.emplace(curves[h][k] - curves[h][k - 1], -(long long)h);
  };
  for (std::size_t h = 0; h < curves.size(); ++h) offer(h);
  for (long long given = heads; given < total; ++given) {
    const std::size_t h = std::size_t(-next.top().second);
    next.pop();
    ++out.budgets[h];
    offer(h);
  }
  for (std::size_t h = 0; h < curves.size(); ++h) out.value += curves[h][std::size_t(out.budgets[h]) - 1];
  return out;
}

}  // namespace subevict::greedy
