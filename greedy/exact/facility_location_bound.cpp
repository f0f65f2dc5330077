#include "greedy/exact/facility_location_bound.hpp"

#include <algorithm>
#include <limits>
#include <vector>

namespace subevict::greedy {

FacilityLocationBound::FacilityLocationBound(const FacilityLocation& f,
                                             const FacilityLocationBoundOptions& options)
    : f_(&f), options_(options), u_(f.similarity().rows()) {
  // Start from each client's second-largest similarity: the value it would get from its
  // second-best candidate (Beasley's start, min over j ≠ i of d_ij, in the max form).
  const Eigen::MatrixXd& sim = f.similarity();
  for (Eigen::Index i = 0; i < sim.rows(); ++i) {
    double first = 0.0;
    double second = 0.0;
    for (Eigen::Index j = 0; j < sim.cols(); ++j) {
      const double x = sim(i, j);
      if (x > first) {
        second = first;
        first = x;
      } else if (x > second) {
        second = x;
      }
    }
    u_(i) = sim.cols() > 1 ? second : first;
  }
}

NodeBoundResult FacilityLocationBound::bound(BranchAndBoundNode& node) {
  const Eigen::MatrixXd& sim = f_->similarity();
  const std::span<const Decision> decisions = node.decisions();
  std::vector<Element> fixed_in;
  std::vector<Element> undecided;
  for (Element j = 0; j < decisions.size(); ++j) {
    if (decisions[j] == Decision::kIn) fixed_in.push_back(j);
    if (decisions[j] == Decision::kUndecided) undecided.push_back(j);
  }
  const std::size_t r = std::min(node.k() - fixed_in.size(), undecided.size());

  Eigen::VectorXd cost(sim.cols());  // C_j(u) for the fixed-in and undecided columns
  std::vector<Element> order = undecided;
  auto relax = [&](const Eigen::VectorXd& u) {
    for (Element j : fixed_in) cost(Eigen::Index(j)) = (sim.col(Eigen::Index(j)) - u).cwiseMax(0.0).sum();
    for (Element j : undecided) cost(Eigen::Index(j)) = (sim.col(Eigen::Index(j)) - u).cwiseMax(0.0).sum();
    std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(r), order.end(),
                      [&](Element a, Element b) {
                        const double ca = cost(Eigen::Index(a));
                        const double cb = cost(Eigen::Index(b));
                        return ca > cb || (ca == cb && a < b);
                      });
    double value = u.sum();
    for (Element j : fixed_in) value += cost(Eigen::Index(j));
    for (std::size_t t = 0; t < r; ++t) value += cost(Eigen::Index(order[t]));
    return value;
  };

  Eigen::VectorXd u = u_;
  Eigen::VectorXd best_u = u;
  double best = std::numeric_limits<double>::infinity();
  double alpha = options_.initial_step;
  int since_improvement = 0;
  std::vector<Element> chosen;
  Eigen::VectorXd covered(sim.rows());
  const int iterations = node.root() ? options_.root_iterations : options_.node_iterations;
  for (int it = 0; it < iterations; ++it) {
    const double value = relax(u);
    if (value < best) {
      best = value;
      best_u = u;
      since_improvement = 0;
    } else if (++since_improvement >= options_.patience) {
      alpha /= 2.0;
      since_improvement = 0;
    }
    chosen = fixed_in;
    chosen.insert(chosen.end(), order.begin(), order.begin() + std::ptrdiff_t(r));
    const double incumbent = node.offer(chosen);
    if (best <= incumbent + node.tolerance() || alpha < options_.min_step) break;
    covered.setZero();
    for (Element j : chosen) {
      covered += (sim.col(Eigen::Index(j)).array() > u.array()).cast<double>().matrix();
    }
    const Eigen::VectorXd g = Eigen::VectorXd::Ones(sim.rows()) - covered;
    const double norm2 = g.squaredNorm();
    if (norm2 == 0.0) {
      // Every client is served by exactly one chosen candidate above its multiplier: L(u) equals
      // the value of `chosen`, which was just offered, so the node is solved.
      best = std::min(best, value);
      break;
    }
    const double step = alpha * (value - incumbent) / norm2;
    u = (u - step * g).cwiseMax(0.0);
  }
  u_ = best_u;

  NodeBoundResult result;
  result.upper_bound = best;
  if (r == 0) return result;
  // Reduced-cost fixing and the branching suggestion at the best multipliers.
  const double level = node.incumbent() + node.tolerance();
  const double bound_at_best = relax(best_u);
  const double smallest_chosen = cost(Eigen::Index(order[r - 1]));
  double largest_unchosen = 0.0;  // replacing a chosen j by nothing is allowed too (C ≥ 0)
  for (std::size_t t = r; t < order.size(); ++t) {
    largest_unchosen = std::max(largest_unchosen, cost(Eigen::Index(order[t])));
  }
  for (std::size_t t = 0; t < order.size(); ++t) {
    const double c = cost(Eigen::Index(order[t]));
    if (t < r) {
      if (bound_at_best - c + largest_unchosen <= level) result.fix_in.push_back(order[t]);
    } else if (bound_at_best - smallest_chosen + c <= level) {
      result.fix_out.push_back(order[t]);
    }
  }
  result.branch = order.front();
  return result;
}

}  // namespace subevict::greedy
