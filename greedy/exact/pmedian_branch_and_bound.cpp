#include "greedy/exact/pmedian_branch_and_bound.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/input_error.hpp"
#include "greedy/exact/pmedian_local_search.hpp"

namespace subevict::greedy {
namespace {

/// Whether every distance is an integer (exactly representable: the values stay exact in sums).
bool integral_distances(const PMedianInstance& instance) {
  const Eigen::MatrixXd& d = instance.distance;
  return (d.array() == d.array().round()).all() && d.cwiseAbs().maxCoeff() < 1e9;
}

bool power_of_two(int x) { return x > 0 && (x & (x - 1)) == 0; }

/// The depth-first search of the file comment; one object per solve.
class Search {
 public:
  Search(const PMedianInstance& instance, const PMedianSearchOptions& options)
      : instance_(instance),
        options_(options),
        lagrangian_(instance),
        decisions_(instance.n, Decision::kUndecided),
        undecided_(instance.n),
        start_(std::chrono::steady_clock::now()) {
    result_.integral = integral_distances(instance);
  }

  PMedianSearchResult run() {
    if (instance_.p < 1 || instance_.p > instance_.n ||
        instance_.distance.rows() != Eigen::Index(instance_.n) ||
        instance_.distance.cols() != Eigen::Index(instance_.n)) {
      throw InputError(
          "pmedian_branch_and_bound", "instance", "1 <= p <= n and an n x n distance matrix",
          "n = " + std::to_string(instance_.n) + ", p = " + std::to_string(instance_.p));
    }
    std::vector<Element> initial = options_.initial_set;
    if (initial.empty()) {
      initial = pmedian_greedy(instance_);
    } else {
      std::vector<bool> seen(instance_.n, false);
      for (Element j : initial) {
        if (j >= instance_.n || seen[j]) {
          throw InputError("pmedian_branch_and_bound", "initial_set",
                           "distinct vertices below " + std::to_string(instance_.n),
                           std::to_string(j));
        }
        seen[j] = true;
      }
      if (initial.size() > instance_.p) {
        throw InputError("pmedian_branch_and_bound", "initial_set",
                         "at most p = " + std::to_string(instance_.p) + " vertices",
                         std::to_string(initial.size()));
      }
    }
    if (options_.initial_set.empty() && options_.local_search) {
      vertex_substitution(instance_, initial);
    }
    std::sort(initial.begin(), initial.end());
    best_ = initial;
    upper_ = lagrangian_.value(best_);
    result_.initial_value = upper_;
    lambda_.push_back(lagrangian_.initial_multipliers());
    node(0, -std::numeric_limits<double>::infinity());

    result_.set = best_;
    result_.value = upper_;
    result_.optimal = !stopped_;
    double lower = std::min(open_minimum_, upper_);
    if (result_.integral && lower < upper_) {
      lower = std::ceil(lower - 1e-6 * std::max(1.0, std::abs(lower)));
    }
    result_.lower_bound = result_.optimal ? upper_ : std::min(lower, upper_);
    result_.seconds = elapsed();
    return result_;
  }

 private:
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  bool out_of_budget() const {
    return (options_.node_limit > 0 && result_.nodes >= options_.node_limit) ||
           (options_.time_limit_seconds > 0.0 && elapsed() >= options_.time_limit_seconds);
  }
  double cutoff() const { return pruning_cutoff(upper_, result_.integral); }
  void offer(std::span<const Element> set) {
    if (set.empty()) return;
    const double value = lagrangian_.value(set);
    if (value < upper_) {
      upper_ = value;
      best_.assign(set.begin(), set.end());
      std::sort(best_.begin(), best_.end());
    }
  }
  void decide(Element j, Decision d) {
    if (decisions_[j] == Decision::kIn) --in_;
    if (decisions_[j] == Decision::kUndecided) --undecided_;
    decisions_[j] = d;
    if (d == Decision::kIn) ++in_;
    if (d == Decision::kUndecided) ++undecided_;
  }
  /// A leaf: the subtree holds only F (or nothing when F is empty).
  bool leaf() const { return in_ >= instance_.p || undecided_ == 0; }

  void node(std::size_t depth, double parent_bound) {
    if (stopped_ || out_of_budget()) {
      stopped_ = true;
      open_minimum_ = std::min(open_minimum_, parent_bound);
      return;
    }
    ++result_.nodes;
    if (leaf()) {
      std::vector<Element> fixed_in;
      for (Element j = 0; j < instance_.n; ++j) {
        if (decisions_[j] == Decision::kIn) fixed_in.push_back(j);
      }
      offer(fixed_in);
      return;
    }
    if (lambda_.size() <= depth) lambda_.emplace_back();
    if (depth > 0) lambda_[depth] = lambda_[depth - 1];
    const bool root = depth == 0;
    LagrangianSolution solution;
    const auto on_solution = [&](const LagrangianSolution& y, int step) {
      if (root && options_.local_search &&
          (step == 0 || (step % 25 == 0 && power_of_two(step / 25)))) {
        std::vector<Element> start = y.chosen;
        if (!start.empty()) {
          vertex_substitution(instance_, start);
          offer(start);
        }
      } else if (root || step % 10 == 0) {
        offer(y.chosen);
      }
      return upper_;
    };
    const SubgradientResult relaxed =
        lagrangian_.optimise(lambda_[depth], decisions_, upper_, result_.integral,
                             root ? options_.root : options_.node, solution, on_solution);
    result_.subgradient_steps += std::uint64_t(relaxed.iterations);
    if (root) result_.root_bound = relaxed.bound;
    offer(solution.chosen);
    const double bound = relaxed.bound;
    if (relaxed.solved || bound >= cutoff()) return;

    std::vector<Element> trail;
    if (options_.reduced_cost_fixing) {
      const LagrangianFixing fixing = reduced_cost_fixing(solution, decisions_, cutoff());
      for (Element j : fixing.out) decide(j, Decision::kOut);
      for (Element j : fixing.in) decide(j, Decision::kIn);
      trail = fixing.out;
      trail.insert(trail.end(), fixing.in.begin(), fixing.in.end());
      if (root) {
        result_.root_fixed_out = fixing.out.size();
        result_.root_fixed_in = fixing.in.size();
      }
    }
    if (leaf()) {
      node(depth + 1, bound);
    } else {
      // Branch on the undecided vertex whose share of Y is closest to 1/2 (ties: more negative C).
      Element branch = instance_.n;
      double best_score = std::numeric_limits<double>::infinity();
      for (Element j = 0; j < instance_.n; ++j) {
        if (decisions_[j] != Decision::kUndecided) continue;
        const double score = std::abs(relaxed.frequency[j] - 0.5);
        if (score < best_score ||
            (score == best_score && solution.cost[j] < solution.cost[branch])) {
          best_score = score;
          branch = j;
        }
      }
      decide(branch, Decision::kIn);
      node(depth + 1, bound);
      decide(branch, Decision::kOut);
      if (bound < cutoff()) node(depth + 1, bound);
      decide(branch, Decision::kUndecided);
    }
    for (Element j : trail) decide(j, Decision::kUndecided);
  }

  const PMedianInstance& instance_;
  const PMedianSearchOptions& options_;
  PMedianLagrangian lagrangian_;
  std::vector<Decision> decisions_;
  std::size_t in_ = 0;
  std::size_t undecided_;
  std::vector<std::vector<double>> lambda_;  // the best multipliers per depth of the current path
  std::vector<Element> best_;
  double upper_ = std::numeric_limits<double>::infinity();
  double open_minimum_ = std::numeric_limits<double>::infinity();
  bool stopped_ = false;
  PMedianSearchResult result_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

PMedianSearchResult pmedian_branch_and_bound(const PMedianInstance& instance,
                                             const PMedianSearchOptions& options) {
  return Search(instance, options).run();
}

}  // namespace subevict::greedy
