#include "greedy/exact/pmedian_lagrangian.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace subevict::greedy {

PMedianLagrangian::PMedianLagrangian(const PMedianInstance& instance)
    : instance_(&instance), sorted_(instance.n * instance.n), in_y_(instance.n, 0) {
  const std::size_t n = instance.n;
  for (std::size_t i = 0; i < n; ++i) {
    Neighbor* row = &sorted_[i * n];
    for (std::size_t j = 0; j < n; ++j) {
      row[j] = {instance.distance(Eigen::Index(i), Eigen::Index(j)), j};
    }
    std::sort(row, row + n, [](const Neighbor& a, const Neighbor& b) {
      return a.distance < b.distance || (a.distance == b.distance && a.vertex < b.vertex);
    });
  }
}

std::vector<double> PMedianLagrangian::initial_multipliers() const {
  const std::size_t n = instance_->n;
  std::vector<double> lambda(n, 0.0);
  if (n < 2) return lambda;
  for (std::size_t i = 0; i < n; ++i) {
    // The second entry of the sorted row: the nearest vertex other than one at distance 0.
    lambda[i] = sorted_[i * n + 1].distance;
  }
  return lambda;
}

void PMedianLagrangian::solve(std::span<const double> lambda, std::span<const Decision> decisions,
                              LagrangianSolution& out) const {
  const std::size_t n = instance_->n;
  out.cost.assign(n, 0.0);
  double value = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double li = lambda[i];
    value += li;
    const Neighbor* row = &sorted_[i * n];
    for (std::size_t k = 0; k < n && row[k].distance < li; ++k) {
      out.cost[row[k].vertex] += row[k].distance - li;
    }
  }
  out.chosen.clear();
  order_.clear();
  for (Element j = 0; j < n; ++j) {
    if (decisions[j] == Decision::kIn) {
      out.chosen.push_back(j);
      value += out.cost[j];
    } else if (decisions[j] == Decision::kUndecided) {
      order_.push_back(j);
    } else {
      out.cost[j] = 0.0;
    }
  }
  const std::size_t budget =
      instance_->p > out.chosen.size() ? instance_->p - out.chosen.size() : 0;
  const std::size_t r = std::min(budget, order_.size());
  const auto by_cost = [&](Element a, Element b) {
    return out.cost[a] < out.cost[b] || (out.cost[a] == out.cost[b] && a < b);
  };
  if (r < order_.size()) {
    std::nth_element(order_.begin(), order_.begin() + std::ptrdiff_t(r), order_.end(), by_cost);
    out.first_unchosen = std::min(0.0, out.cost[order_[r]]);
  } else {
    out.first_unchosen = 0.0;
  }
  std::sort(order_.begin(), order_.begin() + std::ptrdiff_t(r), by_cost);
  for (std::size_t t = 0; t < r; ++t) {
    out.chosen.push_back(order_[t]);
    value += out.cost[order_[t]];
  }
  out.free_chosen = r;
  out.last_chosen = r > 0 ? out.cost[order_[r - 1]] : 0.0;
  out.value = value;
}

double PMedianLagrangian::value(std::span<const Element> set) const {
  const std::size_t n = instance_->n;
  for (Element j : set) in_y_[j] = 1;
  double total = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const Neighbor* row = &sorted_[i * n];
    std::size_t k = 0;
    while (!in_y_[row[k].vertex]) ++k;
    total += row[k].distance;
  }
  for (Element j : set) in_y_[j] = 0;
  return total;
}

double PMedianLagrangian::subgradient(std::span<const double> lambda,
                                      const LagrangianSolution& solution,
                                      std::vector<double>& g) const {
  const std::size_t n = instance_->n;
  for (Element j : solution.chosen) in_y_[j] = 1;
  g.assign(n, 1.0);
  double norm2 = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double li = lambda[i];
    const Neighbor* row = &sorted_[i * n];
    for (std::size_t k = 0; k < n && row[k].distance < li; ++k) g[i] -= in_y_[row[k].vertex];
    norm2 += g[i] * g[i];
  }
  for (Element j : solution.chosen) in_y_[j] = 0;
  return norm2;
}

SubgradientResult PMedianLagrangian::optimise(
    std::vector<double>& lambda, std::span<const Decision> decisions, double upper, bool integral,
    const SubgradientOptions& options, LagrangianSolution& best,
    const std::function<double(const LagrangianSolution&, int)>& on_solution) const {
  const std::size_t n = instance_->n;
  SubgradientResult result;
  result.frequency.assign(n, 0.0);
  result.bound = -std::numeric_limits<double>::infinity();
  std::vector<double> best_lambda = lambda;
  std::vector<double> g;
  LagrangianSolution current;
  double alpha = options.initial_step;
  int since_improvement = 0;
  for (int it = 0; it < options.iterations; ++it) {
    solve(lambda, decisions, current);
    result.iterations = it + 1;
    for (Element j : current.chosen) result.frequency[j] += 1.0;
    if (on_solution) upper = std::min(upper, on_solution(current, it));
    if (current.value > result.bound) {
      result.bound = current.value;
      best_lambda = lambda;
      best = current;
      since_improvement = 0;
    } else if (++since_improvement >= options.patience) {
      alpha /= 2.0;
      since_improvement = 0;
    }
    if (result.bound >= pruning_cutoff(upper, integral)) break;
    const double norm2 = subgradient(lambda, current, g);
    if (norm2 == 0.0) {
      // Every client has exactly one member of Y below its multiplier: L(λ) is the value of Y
      // assigned that way, at least the value of Y, so Y is optimal for the node and L(λ) is the
      // node's optimum (it is also the best bound).
      result.solved = true;
      result.bound = current.value;
      best_lambda = lambda;
      best = current;
      break;
    }
    if (alpha < options.min_step) break;
    const double step =
        alpha * std::max(upper - current.value, 1e-9 * std::max(1.0, std::abs(upper))) / norm2;
    for (std::size_t i = 0; i < n; ++i) lambda[i] = std::max(0.0, lambda[i] + step * g[i]);
  }
  for (double& x : result.frequency) x /= double(std::max(1, result.iterations));
  lambda = best_lambda;
  return result;
}

double pruning_cutoff(double upper, bool integral) {
  const double scale = std::max(1.0, std::abs(upper));
  return integral ? upper - 1.0 + 1e-6 * scale : upper - 1e-9 * scale;
}

LagrangianFixing reduced_cost_fixing(const LagrangianSolution& solution,
                                     std::span<const Decision> decisions, double cutoff) {
  LagrangianFixing fixing;
  if (solution.free_chosen == 0) return fixing;
  std::vector<unsigned char> chosen(decisions.size(), 0);
  for (Element j : solution.chosen) chosen[j] = 1;
  for (Element j = 0; j < decisions.size(); ++j) {
    if (decisions[j] != Decision::kUndecided) continue;
    const double c = solution.cost[j];
    if (chosen[j]) {
      if (solution.value - c + solution.first_unchosen >= cutoff) fixing.in.push_back(j);
    } else if (solution.value - solution.last_chosen + c >= cutoff) {
      fixing.out.push_back(j);
    }
  }
  return fixing;
}

}  // namespace subevict::greedy
