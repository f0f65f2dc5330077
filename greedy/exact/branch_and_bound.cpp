#include "greedy/exact/branch_and_bound.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

#include "greedy/optimizers/online_bound.hpp"

namespace subevict::greedy {
namespace {

using Clock = std::chrono::steady_clock;

/// Sum of the q largest positive entries of `values` (sorted descending) in [first, end).
double top_positive(std::span<const double> sorted_descending, std::size_t first, std::size_t q) {
  double sum = 0.0;
  for (std::size_t s = first; s < sorted_descending.size() && s < first + q; ++s) {
    if (sorted_descending[s] <= 0.0) break;
    sum += sorted_descending[s];
  }
  return sum;
}

class Search final : public BranchAndBoundNode {
 public:
  Search(const SetFunction& f, std::size_t k, const BranchAndBoundOptions& options)
      : f_(&f),
        k_(std::min(k, f.ground_size())),
        options_(&options),
        state_(f.empty_state()),
        decisions_(f.ground_size(), Decision::kUndecided),
        start_(Clock::now()) {
    best_value_ = f.evaluate({});
    ++oracle_calls_;
    if (!options.initial_set.empty()) offer(options.initial_set);
  }

  Selection run() {
    visit(std::numeric_limits<double>::infinity());
    Selection result;
    result.set = best_set_;
    std::sort(result.set.begin(), result.set.end());
    result.value = best_value_;
    result.optimal = !stopped_;
    result.upper_bound = stopped_ ? std::max(best_value_, open_bound_) : best_value_;
    result.oracle_calls = oracle_calls_;
    result.nodes = nodes_;
    result.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    return result;
  }

  const SetState& state() const override { return *state_; }
  std::span<const Decision> decisions() const override { return decisions_; }
  std::size_t k() const override { return k_; }
  double incumbent() const override { return best_value_; }
  double tolerance() const override {
    return options_->relative_tolerance * std::max(1.0, std::fabs(best_value_));
  }
  bool root() const override { return nodes_ == 1; }
  double offer(std::span<const Element> set) override {
    if (set.size() > k_) {
      throw std::invalid_argument("branch_and_bound: an offered set has " +
                                  std::to_string(set.size()) + " elements, more than k = " +
                                  std::to_string(k_));
    }
    std::vector<char> seen(f_->ground_size(), 0);
    for (Element e : set) {
      if (e >= f_->ground_size() || seen[e] != 0) {
        throw std::invalid_argument("branch_and_bound: an offered set holds element " +
                                    std::to_string(e) +
                                    " twice or outside the ground set of size " +
                                    std::to_string(f_->ground_size()));
      }
      seen[e] = 1;
    }
    const double value = f_->evaluate(set);
    ++oracle_calls_;
    consider(value, set);
    return best_value_;
  }

 private:
  void consider(double value, std::span<const Element> set) {
    if (value > best_value_) {
      best_value_ = value;
      best_set_.assign(set.begin(), set.end());
    }
  }
  [[nodiscard]] double prune_level() const { return best_value_ + tolerance(); }

  bool out_of_budget() {
    if (options_->node_limit != 0 && nodes_ >= options_->node_limit) return true;
    if (options_->time_limit_seconds > 0.0 &&
        std::chrono::duration<double>(Clock::now() - start_).count() >= options_->time_limit_seconds) {
      return true;
    }
    return false;
  }

  /// Explores the subproblem of the current node; `parent_bound` bounds it (used if the search
  /// stops before exploring it).
  void visit(double parent_bound) {
    if (stopped_ || out_of_budget()) {
      stopped_ = true;
      open_bound_ = std::max(open_bound_, parent_bound);
      return;
    }
    ++nodes_;
    const double value = state_->value();
    consider(value, state_->members());
    const std::size_t r = k_ - state_->size();
    if (r == 0) return;

    // Undecided elements ordered by gain descending, ties to the lowest index.
    std::vector<Element> order;
    std::vector<double> gain(f_->ground_size(), 0.0);
    for (Element e = 0; e < f_->ground_size(); ++e) {
      if (decisions_[e] != Decision::kUndecided) continue;
      gain[e] = state_->gain(e);
      ++oracle_calls_;
      order.push_back(e);
    }
    if (order.empty()) return;
    std::stable_sort(order.begin(), order.end(),
                     [&](Element a, Element b) { return gain[a] > gain[b]; });
    std::vector<double> sorted(order.size());
    for (std::size_t t = 0; t < order.size(); ++t) sorted[t] = gain[order[t]];

    double bound = online_bound(value, sorted, r);
    if (bound <= prune_level()) return;

    Element branch = order.front();
    if (options_->node_bound != nullptr) {
      NodeBoundResult plug = options_->node_bound->bound(*this);
      bound = std::min(bound, plug.upper_bound);
      if (bound <= prune_level()) return;
      if (apply_fixings(plug, r)) {
        visit(bound);
        undo_fixings();
        return;
      }
      if (plug.branch < decisions_.size() && decisions_[plug.branch] == Decision::kUndecided) {
        branch = plug.branch;
      }
    }
    if (options_->pairwise_bound && r >= 2) {
      bound = std::min(bound, pairwise(order, sorted, value, r));
      if (bound <= prune_level()) return;
    }

    state_->add(branch);
    decisions_[branch] = Decision::kIn;
    visit(bound);
    state_->remove(branch);
    decisions_[branch] = Decision::kOut;
    visit(bound);
    decisions_[branch] = Decision::kUndecided;
  }

  /// The pairwise bound of the file comment.
  double pairwise(const std::vector<Element>& order, std::span<const double> g, double value,
                  std::size_t r) {
    double best = value;  // T' = ∅
    std::vector<double> second;
    for (std::size_t t = 0; t < order.size(); ++t) {
      const double relaxed = value + std::max(g[t], 0.0) + top_positive(g, t + 1, r - 1);
      if (relaxed <= best) return best;  // C_t is nonincreasing: no later t can raise the max
      if (t >= options_->pairwise_first_elements || best > prune_level()) {
        return std::max(best, relaxed);
      }
      state_->add(order[t]);
      second.clear();
      for (std::size_t s = t + 1; s < order.size(); ++s) {
        second.push_back(std::min(g[s], state_->gain(order[s])));
        ++oracle_calls_;
      }
      state_->remove(order[t]);
      const std::size_t q = std::min(r - 1, second.size());
      std::partial_sort(second.begin(), second.begin() + std::ptrdiff_t(q), second.end(),
                        std::greater<>());
      best = std::max(best, std::min(relaxed, value + g[t] + top_positive(second, 0, q)));
    }
    return best;
  }

  /// Applies the plug-in's fixings of undecided elements (fix-ins only while budget remains);
  /// records them for undo_fixings. Returns whether anything changed.
  bool apply_fixings(const NodeBoundResult& plug, std::size_t r) {
    fixed_.emplace_back();
    for (Element e : plug.fix_out) {
      if (e < decisions_.size() && decisions_[e] == Decision::kUndecided) {
        decisions_[e] = Decision::kOut;
        fixed_.back().push_back(e);
      }
    }
    for (Element e : plug.fix_in) {
      if (r == 0) break;
      if (e < decisions_.size() && decisions_[e] == Decision::kUndecided) {
        state_->add(e);
        decisions_[e] = Decision::kIn;
        fixed_.back().push_back(e);
        --r;
      }
    }
    if (fixed_.back().empty()) {
      fixed_.pop_back();
      return false;
    }
    return true;
  }
  void undo_fixings() {
    for (Element e : fixed_.back()) {
      if (decisions_[e] == Decision::kIn) state_->remove(e);
      decisions_[e] = Decision::kUndecided;
    }
    fixed_.pop_back();
  }

  const SetFunction* f_;
  std::size_t k_;
  const BranchAndBoundOptions* options_;
  std::unique_ptr<SetState> state_;
  std::vector<Decision> decisions_;
  std::vector<std::vector<Element>> fixed_;
  Clock::time_point start_;
  double best_value_ = 0.0;
  std::vector<Element> best_set_;
  double open_bound_ = -std::numeric_limits<double>::infinity();
  bool stopped_ = false;
  std::uint64_t nodes_ = 0;
  std::uint64_t oracle_calls_ = 0;
};

}  // namespace

Selection branch_and_bound(const SetFunction& f, std::size_t k, const BranchAndBoundOptions& options) {
  if (!f.monotone_submodular()) {
    throw std::invalid_argument("branch_and_bound: " + f.name() +
                                " is not declared monotone submodular; its bounds would not hold");
  }
  return Search(f, k, options).run();
}

}  // namespace subevict::greedy
