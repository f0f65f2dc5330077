#include "greedy/eviction/optimum/incremental_network_simplex.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace subevict::greedy {

IncrementalNetworkSimplex::IncrementalNetworkSimplex(int n, int k, const std::vector<std::int64_t>& never_cached_cost,
                                                     int heads)
    : n_(n), k_(k), tokens_(heads * n) {
  if (n < 1 || heads < 1 || k < 1 || k > tokens_ || static_cast<int>(never_cached_cost.size()) != tokens_) {
    throw std::invalid_argument("IncrementalNetworkSimplex: needs 1 <= k <= H n and H n costs (n = " +
                                std::to_string(n) + ", H = " + std::to_string(heads) + ", k = " + std::to_string(k) +
                                ")");
  }
  const int nodes = tokens_ + n + 1, d0 = tokens_;
  const auto reserve = static_cast<std::size_t>(4) * static_cast<std::size_t>(tokens_);
  for (auto* v : {&source_, &target_, &capacity_, &flow_}) v->reserve(reserve);
  cost_.reserve(reserve);
  state_.reserve(reserve);
  for (int i = 0; i < n; ++i) {  // backbone D_i → D_{i+1}, carrying k (capacity H n: never binds)
    source_.push_back(d0 + i);
    target_.push_back(d0 + i + 1);
    capacity_.push_back(tokens_);
    flow_.push_back(k);
    cost_.push_back(0);
    state_.push_back(kTree);
  }
  for (int r = 0; r < tokens_; ++r) {  // never cached: R_r → D_j (j = r mod n), carrying token r
    if (std::abs(never_cached_cost[r]) > max_cost()) {
      throw std::invalid_argument("IncrementalNetworkSimplex: never_cached_cost[" + std::to_string(r) + "] = " +
                                  std::to_string(never_cached_cost[r]) + " is outside +-" +
                                  std::to_string(max_cost()) + " (2^60 / (2n + 1) + 1)");
    }
    source_.push_back(r);
    target_.push_back(d0 + r % n);
    capacity_.push_back(1);
    flow_.push_back(1);
    cost_.push_back(never_cached_cost[r]);
    state_.push_back(kTree);
  }
  parent_.assign(nodes, -1);
  parent_arc_.assign(nodes, -1);
  depth_.assign(nodes, 0);
  children_.assign(nodes, {});
  potential_.assign(nodes, 0);
  for (int i = 0; i < n; ++i) {  // D_i hangs below D_{i+1}; potentials 0 (backbone costs 0)
    parent_[d0 + i] = d0 + i + 1;
    parent_arc_[d0 + i] = i;
    depth_[d0 + i] = n - i;
    children_[d0 + i + 1].push_back(d0 + i);
  }
  for (int r = 0; r < tokens_; ++r) {  // R_r hangs below D_j: 0 = c + π(R_r) − π(D_j)
    const int j = r % n;
    parent_[r] = d0 + j;
    parent_arc_[r] = n + r;
    depth_[r] = n - j + 1;
    children_[d0 + j].push_back(r);
    potential_[r] = -never_cached_cost[r];
  }
}

int IncrementalNetworkSimplex::add_arc(int r, int e, std::int64_t cost) {
  if (r < 0 || r >= tokens_ || e <= r % n_ || e > n_) {
    throw std::invalid_argument("IncrementalNetworkSimplex::add_arc: bad arc R_" + std::to_string(r) +
                                " -> D_" + std::to_string(e));
  }
  if (std::abs(cost) > max_cost()) {
    throw std::invalid_argument("IncrementalNetworkSimplex::add_arc: cost " + std::to_string(cost) + " of R_" +
                                std::to_string(r) + " -> D_" + std::to_string(e) + " is outside +-" +
                                std::to_string(max_cost()) + " (2^60 / (2n + 1) + 1)");
  }
  source_.push_back(r);
  target_.push_back(tokens_ + e);
  capacity_.push_back(1);
  flow_.push_back(0);
  cost_.push_back(cost);
  state_.push_back(kLower);
  return static_cast<int>(source_.size()) - 1;
}

void IncrementalNetworkSimplex::increase_budget(int by) {
  if (by < 1 || by > tokens_ - k_) {
    throw std::invalid_argument("IncrementalNetworkSimplex::increase_budget: budget " + std::to_string(k_) +
                                " + " + std::to_string(by) + " outside [1, H n = " + std::to_string(tokens_) + "]");
  }
  source_.push_back(tokens_);
  target_.push_back(tokens_ + n_);
  capacity_.push_back(by);
  flow_.push_back(by);
  cost_.push_back(0);
  state_.push_back(kUpper);
  ++budget_arcs_;
  k_ += by;
}

int IncrementalNetworkSimplex::find_entering() {
  const std::size_t m = source_.size();
  const std::size_t block = std::max<std::size_t>(64, static_cast<std::size_t>(std::sqrt(double(m))));
  std::size_t arc = next_arc_ % m;
  int best = -1;
  std::int64_t best_violation = 0;
  std::size_t in_block = 0;
  for (std::size_t seen = 0; seen < m; ++seen) {
    if (state_[arc] != kTree) {
      const std::int64_t violation = state_[arc] * reduced_cost(arc) * -1;  // > 0: improving
      if (violation > best_violation) {
        best_violation = violation;
        best = static_cast<int>(arc);
      }
    }
    if (++arc == m) arc = 0;
    if (++in_block == block) {
      if (best >= 0) break;
      in_block = 0;
    }
  }
  next_arc_ = arc;
  return best;
}

void IncrementalNetworkSimplex::detach_child(int parent, int child) {
  auto& list = children_[parent];
  const auto it = std::find(list.begin(), list.end(), child);
  *it = list.back();
  list.pop_back();
}

void IncrementalNetworkSimplex::pivot(int entering) {
  const int u = source_[entering], v = target_[entering];
  const bool forward = state_[entering] == kLower;  // push along u → v, else along v → u
  const int first = forward ? u : v, second = forward ? v : u;
  // The cycle: first → second on the entering arc, up from second to the apex, down to first.
  up_from_first_.clear();
  up_from_second_.clear();
  int a = first, b = second;
  while (a != b) {
    if (depth_[a] >= depth_[b]) {
      up_from_first_.push_back(a);
      a = parent_[a];
    } else {
      up_from_second_.push_back(b);
      b = parent_[b];
    }
  }
  // Residual of each tree arc in the cycle's direction; the leaving arc is the last blocking arc
  // met from the apex: down to `first`, the entering arc, then up from `second`.
  auto residual_down = [&](int node) {  // traversed parent(node) → node
    const int arc = parent_arc_[node];
    return target_[arc] == node ? capacity_[arc] - flow_[arc] : flow_[arc];
  };
  auto residual_up = [&](int node) {  // traversed node → parent(node)
    const int arc = parent_arc_[node];
    return source_[arc] == node ? capacity_[arc] - flow_[arc] : flow_[arc];
  };
  int delta = std::numeric_limits<int>::max();
  int leaving_node = -1;  // the child end of the leaving tree arc; −1: the entering arc leaves
  bool leaving_on_first_side = false;
  for (auto it = up_from_first_.rbegin(); it != up_from_first_.rend(); ++it) {
    const int r = residual_down(*it);
    if (r <= delta) {
      delta = r;
      leaving_node = *it;
      leaving_on_first_side = true;
    }
  }
  const int entering_residual = forward ? capacity_[entering] - flow_[entering] : flow_[entering];
  if (entering_residual <= delta) {
    delta = entering_residual;
    leaving_node = -1;
  }
  for (int node : up_from_second_) {
    const int r = residual_up(node);
    if (r <= delta) {
      delta = r;
      leaving_node = node;
      leaving_on_first_side = false;
    }
  }
  // Push delta around the cycle.
  if (delta > 0) {
    for (int node : up_from_first_) {
      const int arc = parent_arc_[node];
      flow_[arc] += target_[arc] == node ? delta : -delta;
    }
    flow_[entering] += forward ? delta : -delta;
    for (int node : up_from_second_) {
      const int arc = parent_arc_[node];
      flow_[arc] += source_[arc] == node ? delta : -delta;
    }
  }
  if (leaving_node < 0) {  // the entering arc goes from one bound to the other
    state_[entering] = forward ? kUpper : kLower;
    return;
  }
  const int leaving = parent_arc_[leaving_node];
  state_[leaving] = flow_[leaving] == 0 ? kLower : kUpper;
  state_[entering] = kTree;
  // Re-hang the subtree cut off below leaving_node from the entering arc's end inside it.
  const int inside = leaving_on_first_side ? first : second;
  const int outside = leaving_on_first_side ? second : first;
  const std::int64_t shift = inside == v ? reduced_cost(entering) : -reduced_cost(entering);
  int new_parent = outside, new_arc = entering, node = inside;
  for (;;) {
    const int old_parent = parent_[node], old_arc = parent_arc_[node];
    detach_child(old_parent, node);
    parent_[node] = new_parent;
    parent_arc_[node] = new_arc;
    children_[new_parent].push_back(node);
    if (node == leaving_node) break;
    new_parent = node;
    new_arc = old_arc;
    node = old_parent;
  }
  // Depths and potentials of the moved subtree.
  stack_.assign(1, inside);
  while (!stack_.empty()) {
    const int x = stack_.back();
    stack_.pop_back();
    depth_[x] = depth_[parent_[x]] + 1;
    potential_[x] += shift;
    for (int c : children_[x]) stack_.push_back(c);
  }
}

std::uint64_t IncrementalNetworkSimplex::solve() {
  std::uint64_t pivots = 0;
  for (int entering = find_entering(); entering >= 0; entering = find_entering()) {
    pivot(entering);
    ++pivots;
  }
  return pivots;
}

std::vector<int> IncrementalNetworkSimplex::chosen_steps() const {
  std::vector<int> step(static_cast<std::size_t>(tokens_), -1);
  for (std::size_t arc = static_cast<std::size_t>(n_); arc < source_.size(); ++arc) {
    if (source_[arc] < tokens_ && flow_[arc] == 1) step[static_cast<std::size_t>(source_[arc])] = target_[arc] - tokens_;
  }
  return step;
}

}  // namespace subevict::greedy
