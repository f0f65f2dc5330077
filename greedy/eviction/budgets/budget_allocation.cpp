#include "greedy/eviction/budgets/budget_allocation.hpp"

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

int first_decrease(const std::vector<double>& curve) {
  const double slack = concavity_slack(curve);
  for (std::size_t i = 1; i < curve.size(); ++i) {
    if (curve[i] < curve[i - 1] - slack) return int(i) + 1;
  }
  return 0;
}

namespace {

/// Throws unless every value of `curve` (head h) is finite.
void check_finite(const std::vector<double>& curve, std::size_t h, const std::string& source) {
  for (std::size_t i = 0; i < curve.size(); ++i) {
    if (!std::isfinite(curve[i])) {
      throw InputError(source, "curve of head " + std::to_string(h), "finite values",
                       significant_digits(curve[i], 10) + " at k = " + std::to_string(i + 1));
    }
  }
}

/// Throws unless `curve` (head h) is finite and nondecreasing within its slack.
void check_nondecreasing(const std::vector<double>& curve, std::size_t h, const std::string& source) {
  check_finite(curve, h, source);
  if (const int k = first_decrease(curve); k > 0) {
    throw InputError(source, "curve of head " + std::to_string(h), "a nondecreasing OPT(k)",
                     "OPT(" + std::to_string(k) + ") < OPT(" + std::to_string(k - 1) + ") by " +
                         significant_digits(curve[std::size_t(k) - 2] - curve[std::size_t(k) - 1], 3));
  }
}

/// Throws unless `curve` (head h) is non-empty, finite, nondecreasing and concave within its slack:
/// each increment at most the smallest one before it plus one slack.
void check_curve(const std::vector<double>& curve, std::size_t h, const std::string& source) {
  const std::string field = "curve of head " + std::to_string(h);
  if (curve.empty()) throw InputError(source, field, "OPT(k) for k = 1..K, K >= 1", "an empty curve");
  check_nondecreasing(curve, h, source);
  const double slack = concavity_slack(curve);
  std::size_t smallest = 1;  // the increment to k = smallest + 1 is the smallest so far
  for (std::size_t i = 2; i < curve.size(); ++i) {
    const double step = curve[i] - curve[i - 1], least = curve[smallest] - curve[smallest - 1];
    if (step > least + slack) {
      throw InputError(source, field, "a concave OPT(k) (the marginal allocation is exact only then)",
                       "the increment to k = " + std::to_string(i + 1) + " exceeds the one to k = " +
                           std::to_string(smallest + 1) + " by " + significant_digits(step - least, 3));
    }
    if (step < least) smallest = i;
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

namespace {

/// The common length K of every curve; throws unless there is a head and all curves are that long.
std::size_t common_length(const std::vector<std::vector<double>>& curves, const std::string& source) {
  if (curves.empty()) throw InputError(source, "heads", "at least one head's curve", "none");
  for (std::size_t h = 0; h < curves.size(); ++h) {
    if (curves[h].size() != curves.front().size()) {
      throw InputError(source, "curve of head " + std::to_string(h),
                       "OPT(k) for k = 1.." + std::to_string(curves.front().size()) + " as every other head's",
                       std::to_string(curves[h].size()) + " points");
    }
  }
  if (curves.front().empty()) throw InputError(source, "curve of head 0", "OPT(k) for k = 1..K, K >= 1", "an empty curve");
  return curves.front().size();
}

}  // namespace

BudgetAllocation allocate_layer_budgets(const std::vector<std::vector<double>>& curves, const std::vector<int>& group,
                                        long long total, const std::string& source) {
  const std::size_t length = common_length(curves, source);
  if (group.size() != curves.size()) {
    throw InputError(source, "layer of each head", "one per head (" + std::to_string(curves.size()) + ")",
                     std::to_string(group.size()));
  }
  const int groups = *std::max_element(group.begin(), group.end()) + 1;
  std::vector<long long> size(std::size_t(std::max(groups, 0)), 0);
  for (std::size_t h = 0; h < group.size(); ++h) {
    if (group[h] < 0) throw InputError(source, "layer of head " + std::to_string(h), "a layer index >= 0", std::to_string(group[h]));
    ++size[std::size_t(group[h])];
  }
  for (int g = 0; g < groups; ++g) {
    if (size[std::size_t(g)] != size.front()) {
      throw InputError(source, "heads of layer " + std::to_string(g),
                       "as many as every other layer's (" + std::to_string(size.front()) + ")",
                       std::to_string(size[std::size_t(g)]));
    }
  }
  const long long per_layer = size.front();
  if (total % per_layer != 0) {
    throw InputError(source, "total budget", "a multiple of the heads per layer (" + std::to_string(per_layer) + ")",
                     std::to_string(total));
  }
  for (std::size_t h = 0; h < curves.size(); ++h) check_curve(curves[h], h, source);
  std::vector<std::vector<double>> layer_curves(std::size_t(groups), std::vector<double>(length, 0.0));
  for (std::size_t h = 0; h < curves.size(); ++h) {
    for (std::size_t k = 0; k < length; ++k) layer_curves[std::size_t(group[h])][k] += curves[h][k];
  }
  const BudgetAllocation layers = allocate_budget(layer_curves, total / per_layer, source);
  BudgetAllocation out;
  out.value = layers.value;
  for (std::size_t h = 0; h < curves.size(); ++h) out.budgets.push_back(layers.budgets[std::size_t(group[h])]);
  return out;
}

BudgetAllocation allocate_two_classes(const std::vector<std::vector<double>>& curves, int low, long long total,
                                      const std::string& source) {
  const long long length = (long long)common_length(curves, source);
  for (std::size_t h = 0; h < curves.size(); ++h) check_nondecreasing(curves[h], h, source);
  if (low < 1 || low >= length) {
    throw InputError(source, "streaming heads' budget", "an integer in [1, " + std::to_string(length - 1) + "]",
                     std::to_string(low));
  }
  const long long heads = (long long)curves.size();
  if (total < heads * low || total > heads * length) {
    throw InputError(source, "total budget",
                     "an integer in [" + std::to_string(heads * low) + ", " + std::to_string(heads * length) +
                         "] (every head streaming, every head full)",
                     std::to_string(total));
  }
  const long long full = std::min(heads, (total - heads * low) / (length - low));
  std::vector<std::size_t> order(curves.size());
  for (std::size_t h = 0; h < order.size(); ++h) order[h] = h;
  const auto gain = [&](std::size_t h) { return curves[h][std::size_t(length) - 1] - curves[h][std::size_t(low) - 1]; };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return gain(a) > gain(b); });
  BudgetAllocation out;
  out.budgets.assign(curves.size(), low);
  for (long long i = 0; i < full; ++i) out.budgets[order[std::size_t(i)]] = int(length);
  for (std::size_t h = 0; h < curves.size(); ++h) out.value += curves[h][std::size_t(out.budgets[h]) - 1];
  return out;
}

}  // namespace subevict::greedy
