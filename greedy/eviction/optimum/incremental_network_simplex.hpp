#pragma once
/// \file
/// A primal network simplex for the eviction network of offline_optimum.hpp whose token arcs are
/// added between solves, each solve continuing from the previous optimal basis (the column
/// generation of implicit_flow.hpp adds a few arcs per round; a solver restarted from scratch
/// would repeat all its pivots every round).
///
/// Network: R_j = node j (supply 1), D_i = node n + i (supply k − 1 at i = 0, −1 for 0 < i < n,
/// −k at i = n); backbone arcs D_i → D_{i+1} (cost 0; capacity n, since the cut between steps i
/// and i + 1 carries exactly k units, backbone plus cached tokens, so a capacity of k would never
/// bind and raising the budget needs no capacity change), the never-cached arcs
/// R_j → D_j (capacity 1) given at construction, and token arcs R_j → D_e (capacity 1) added with
/// add_arc. Costs are integers (the caller rounds them), so every potential and reduced cost is
/// exact.
///
/// With H heads sharing the cache (shared_optimum.hpp), token j of head h is R_r, r = h n + j
/// (node r), D_i is node H n + i (supplies k − H, −H, −k), the backbone's capacity is H n and the
/// never-cached arc of R_r ends at D_{r mod n}; H = 1 is the network above.
///
/// The starting basis is the schedule that caches nothing: every never-cached arc carries its
/// token, the backbone carries k, and the spanning tree is exactly those 2n arcs, rooted at D_n
/// (strongly feasible: every tree arc at capacity points toward the root). Pivots keep the tree
/// strongly feasible (Cunningham's rule: the leaving arc is the last blocking arc of the cycle
/// met from its apex), which rules out cycling; entering arcs are chosen by block search.

#include <cstdint>
#include <vector>

namespace subevict::greedy {

class IncrementalNetworkSimplex {
 public:
  /// n steps, H = `heads` ≥ 1 heads, budget k with 1 ≤ k ≤ H n, never_cached_cost[r] the cost of
  /// R_r → D_{r mod n}. Precondition (std::invalid_argument otherwise, naming the cost): costs
  /// have H n entries, each |cost| ≤ max_cost() = ⌊2^60 / (2n + 1)⌋ + 1 (flow_cost_exponent's
  /// scale at 60 bits, plus rounding), so that potentials and reduced costs, sums of at most
  /// 2n + 1 costs along the tree (its depth is at most n + 1), fit in 64 bits.
  IncrementalNetworkSimplex(int n, int k, const std::vector<std::int64_t>& never_cached_cost, int heads = 1);

  /// Adds the token arc R_r → D_e (r mod n < e ≤ n) with the given integer cost (|cost| ≤
  /// max_cost(), else std::invalid_argument) at flow 0; returns its
  /// id. The current basis stays feasible; its optimality is restored by the next solve().
  int add_arc(int r, int e, std::int64_t cost);

  /// The largest |cost| accepted: ⌊2^60 / (2n + 1)⌋ + 1.
  [[nodiscard]] std::int64_t max_cost() const { return (std::int64_t{1} << 60) / (2 * std::int64_t{n_} + 1) + 1; }

  /// Raises the budget from k to k + by (1 ≤ by, k + by ≤ H n, else std::invalid_argument): the
  /// extra supply at D_0 and demand at D_n are carried by a new arc D_0 → D_n (cost 0, capacity
  /// and flow `by`, at its upper bound, outside the tree), so the basis stays feasible and strongly
  /// feasible and the potentials stay valid; the next solve() moves the new units wherever they
  /// earn (an unused slot riding that arc costs what the backbone would: 0).
  void increase_budget(int by);

  /// The current budget k.
  [[nodiscard]] int budget() const { return k_; }

  /// Pivots to an optimal basis; returns the number of pivots.
  std::uint64_t solve();

  /// Per token r (H n of them), the step e of the arc carrying it (e = r mod n: never cached). O(arcs).
  [[nodiscard]] std::vector<int> chosen_steps() const;

  /// The potential π of a node (reduced cost of u → v is cost + π(u) − π(v); at optimality ≥ 0 on
  /// arcs at flow 0 and ≤ 0 on arcs at capacity).
  [[nodiscard]] std::int64_t potential(int node) const { return potential_[node]; }

  /// Token arcs plus never-cached arcs (the backbone and the budget arcs not counted).
  [[nodiscard]] std::size_t token_arcs() const {
    return source_.size() - static_cast<std::size_t>(n_) - budget_arcs_;
  }

 private:
  enum State : signed char { kTree = 0, kLower = 1, kUpper = -1 };
  [[nodiscard]] std::int64_t reduced_cost(int arc) const {
    return cost_[arc] + potential_[source_[arc]] - potential_[target_[arc]];
  }
  /// The next entering arc by block search, or −1 when the basis is optimal.
  int find_entering();
  void pivot(int entering);
  void detach_child(int parent, int child);

  int n_ = 0, k_ = 0, tokens_ = 0;  // tokens_ = H n
  // Arcs: backbone i (0 ≤ i < n) is arc i, never-cached arc of token r is arc n + r, then added arcs.
  std::vector<int> source_, target_, capacity_, flow_;
  std::vector<std::int64_t> cost_;
  std::vector<State> state_;
  // Spanning tree over H n + n + 1 nodes rooted at D_n: parent node, arc to the parent, depth, children.
  std::vector<int> parent_, parent_arc_, depth_;
  std::vector<std::vector<int>> children_;
  std::vector<std::int64_t> potential_;
  std::size_t next_arc_ = 0;  // block search resumes here
  std::size_t budget_arcs_ = 0;  // arcs D_0 → D_n added by increase_budget
  // Scratch for pivots.
  std::vector<int> up_from_first_, up_from_second_, stack_;
};

}  // namespace subevict::greedy
