#include "greedy/eviction/optimum/shortest_path_curve.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/input_error.hpp"
#include "greedy/eviction/optimum/column_generation.hpp"
#include "greedy/eviction/optimum/implicit_flow.hpp"
#include "greedy/eviction/optimum/incremental_network_simplex.hpp"
#include "greedy/eviction/optimum/triangle_pricing.hpp"

namespace subevict::greedy {
namespace {

using namespace column_generation;

constexpr const char* kCurveSource = "shortest_path_curve";
constexpr std::int64_t kInfinity = std::numeric_limits<std::int64_t>::max();
/// Arcs added per violated token and retry: every one is legal at flow 0 (add_arcs), and more
/// of them anticipate the next budgets' paths (4 against 2: 25% fewer retries at n = 2048).
constexpr int kArcsPerToken = 4;
/// compact() runs after this many committed pairs and keeps the unused token arcs whose reduced
/// cost is at most kKeptReach times the last augmentation's distance (tuned on the benchmark heads
/// at n = 2048: 1, 2, 4 and 8 times, every 4 or 16 pairs, differ by under 10%).
constexpr int kCompactionPeriod = 16;
constexpr std::int64_t kKeptReach = 2;
/// Potentials stay below 2^61 in magnitude, so a reduced cost (a cost below 2^60 plus two
/// potentials) fits in 64 bits; the solver checks it after every Dijkstra.
constexpr std::int64_t kPotentialLimit = std::int64_t{1} << 61;

/// The residual network: nodes R_j = j, D_i = n + i; arcs in pairs (a, a ^ 1), forward (even) and
/// reverse (odd), each with its residual capacity; per node a singly linked list of its outgoing
/// arcs; integer potentials per node.
struct Residual {
  std::vector<int> head, next, to, cap;
  std::vector<std::int64_t> cost;
  std::vector<double> earned;  ///< C_j(e) of a token arc R_j → D_e (0 on the backbone)
  std::vector<std::int64_t> pot;

  /// Adds u → v (capacity, cost c) and its reverse v → u (capacity 0, cost −c); returns u → v.
  int add_pair(int u, int v, int capacity, std::int64_t c, double earns) {
    const int a = static_cast<int>(to.size());
    add_arc(u, v, capacity, c, earns);
    add_arc(v, u, 0, -c, earns);
    return a;
  }
  [[nodiscard]] std::int64_t reduced(int a) const { return cost[a] + pot[to[a ^ 1]] - pot[to[a]]; }
  /// One unit along arc a.
  void push(int a) {
    --cap[a];
    ++cap[a ^ 1];
  }

 private:
  void add_arc(int from, int target, int room, std::int64_t c, double earns) {
    next.push_back(head[from]);
    head[from] = static_cast<int>(to.size());
    to.push_back(target);
    cap.push_back(room);
    cost.push_back(c);
    earned.push_back(earns);
  }
};

/// A token's most negative arc found by pricing.
struct ViolatedArc {
  int token = 0;
  TokenArc arc;
};

template <class Scalar>
class CurveSolver {
 public:
  CurveSolver(const TriangularGains<Scalar>& gains, const ShortestPathCurveOptions& options)
      : gains_(gains), n_(gains.size()), scale_(cost_scale(gains)), options_(options) {
    const int nodes = 2 * n_ + 1;
    net_.head.assign(nodes, -1);
    dist_.assign(nodes, kInfinity);
    pred_.assign(nodes, -1);
    settled_flag_.assign(nodes, 0);
    dirty_.assign(n_, 0);
    // Per token the largest rounding of an arc's integer cost above its exact cost (in cost units,
    // at most 1/2; exact in double: the two terms are within a factor 2 of each other or tiny).
    for (int j = 0; j < n_; ++j) {
      const double shift = scale_.costs.shift[j], s = scale_.costs.scale;
      const Scalar* column = gains.column(j);
      double earned = 0.0, rounding = static_cast<double>(integer_cost(shift, s)) - shift * s;
      for (int e = j + 1; e < n_; ++e) {
        earned += double(column[e - j]);
        rounding = std::max(rounding, static_cast<double>(integer_cost(shift - earned, s)) - (shift - earned) * s);
      }
      shift_sum_ += shift;
      rounding_sum_ += rounding;
    }
  }

  ShortestPathCurve run(int max_budget) {
    ShortestPathCurve out;
    start_from_budget_one(out);
    int k = 1;
    while (k < max_budget) {
      const int step = std::min(2, max_budget - k);
      for (;;) {
        augment();
        const double first_value = flow_value();
        if (step == 2) augment();
        const std::vector<ViolatedArc> violated = price(out.stats);
        if (violated.empty()) {
          certify(k + 1, first_value, out);
          if (step == 2) certify(k + 2, flow_value(), out);
          commit();
          if (++since_compaction_ == kCompactionPeriod) compact();
          break;
        }
        // Back to budget k, whose π is dual feasible on the whole network: every arc can join the
        // restricted network at flow 0, and the budgets are solved again on it.
        undo();
        add_arcs(violated, out.stats);
        ++out.stats.retries;
      }
      k += step;
    }
    out.stats.augmentations = augmentations_;
    out.stats.token_arcs = net_.to.size() / 2 - static_cast<std::size_t>(n_);
    return out;
  }

 private:
  [[nodiscard]] int d(int i) const { return n_ + i; }

  /// Budget 1 by the column generation (implicit_flow.hpp's solve_budget from the never-cached
  /// basis, priced until no arc is violated): its optimal basis's potentials are dual feasible on
  /// the residual network (≥ 0 on arcs at flow 0, ≤ 0 on arcs at capacity, no implicit arc below
  /// 0), and its arcs and flow become the residual network's.
  void start_from_budget_one(ShortestPathCurve& out) {
    std::vector<std::vector<TokenArc>> arcs(n_);
    for (int j = 0; j < n_; ++j) arcs[j] = {TokenArc{j, 0.0, scale_.costs.shift[j]}};
    IncrementalNetworkSimplex simplex = restricted_simplex(n_, 1, scale_.costs, arcs);
    ImplicitFlowOptions values_only;
    values_only.step_mass = false;
    values_only.process_form = false;
    values_only.on_round = [&out](const ImplicitFlowRound&) { ++out.stats.pricing_passes; };
    const ImplicitFlowResult first = solve_budget(n_, gains_.diagonal_sum(), 1, scale_.costs, simplex, arcs,
                                                  values_only, price_every_token(gains_, scale_, nullptr), {});
    if (first.summary.status != ScheduleStatus::kOptimal) {
      throw std::logic_error("shortest_path_curve: the first budget's column generation stopped early");
    }
    const std::vector<int> chosen = simplex.chosen_steps();
    std::vector<int> arriving(static_cast<std::size_t>(n_) + 1, 0);  // tokens whose arc ends at D_e
    net_.pot.resize(2 * static_cast<std::size_t>(n_) + 1);
    for (int v = 0; v < 2 * n_ + 1; ++v) net_.pot[v] = simplex.potential(v);
    for (int j = 0; j < n_; ++j) {
      for (const TokenArc& arc : arcs[j]) {
        const int a = net_.add_pair(j, d(arc.e), 1, integer_cost(arc.cost, scale_.costs.scale), arc.earned);
        if (arc.e == chosen[j]) net_.push(a);
      }
      ++arriving[chosen[j]];
    }
    // The backbone's flow by conservation at D_i (supply k − 1 = 0 at D_0, −1 at 0 < i < n).
    int flow = 0;
    for (int i = 0; i < n_; ++i) {
      flow += arriving[i] - (i == 0 ? 0 : 1);
      const int a = net_.add_pair(d(i), d(i + 1), n_, 0, 0.0);
      net_.cap[a] -= flow;
      net_.cap[a ^ 1] += flow;
    }
    // The column generation's last pass found no violated arc: slack 0 is a bound.
    slack_.assign(n_, 0);
    latest_.resize(n_);
    out.points.push_back(CurveOptimum{1, first.summary.value, first.summary.upper_bound});
    if (options_.on_certificate) options_.on_certificate(1, first.potentials);
    if (options_.on_budget) options_.on_budget(1);
  }

  /// Raises the budget by one: Dijkstra on reduced costs from D_0 to D_n, π grown by the distances
  /// capped at D_n's (settled nodes only: the others keep theirs, the same up to a constant), and
  /// one unit sent along the path, whose arcs then have reduced cost 0. Every change is journaled
  /// for undo. A token whose slack (a lower bound on its implicit arcs' reduced costs) falls below
  /// 0 becomes dirty: only its implicit arcs can have lost dual feasibility.
  void augment() {
    ++augmentations_;
    using Entry = std::pair<std::int64_t, int>;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
    const int source = d(0), sink = d(n_);
    dist_[source] = 0;
    pred_[source] = -1;
    heap.emplace(0, source);
    touched_.push_back(source);
    bool reached = false;
    while (!heap.empty()) {
      const auto [du, u] = heap.top();
      heap.pop();
      if (settled_flag_[u] || du > dist_[u]) continue;
      settled_flag_[u] = 1;
      settled_.push_back(u);
      if (u == sink) {
        reached = true;
        break;
      }
      for (int a = net_.head[u]; a != -1; a = net_.next[a]) {
        if (net_.cap[a] <= 0) continue;
        const int v = net_.to[a];
        const std::int64_t rc = net_.reduced(a);
        if (rc < 0) throw std::logic_error("shortest_path_curve: a residual arc lost dual feasibility");
        if (du + rc < dist_[v]) {
          if (dist_[v] == kInfinity) touched_.push_back(v);
          dist_[v] = du + rc;
          pred_[v] = a;
          heap.emplace(dist_[v], v);
        }
      }
    }
    if (!reached) throw std::logic_error("shortest_path_curve: no augmenting path");
    const std::int64_t reach = dist_[sink];
    last_reach_ = reach;

    // An implicit arc R_j → D_e changes by δ(R_j) − δ(D_e), δ(v) = min(dist(v), reach) − reach:
    // at least by δ(R_j) − max over e > j of δ(D_e), a suffix maximum over the steps.
    for (int e = n_ - 1; e >= 0; --e) {
      const std::int64_t capped = settled_flag_[d(e)] ? dist_[d(e)] : reach;
      latest_[e] = e == n_ - 1 ? capped : std::max(capped, latest_[e + 1]);
    }
    for (int v : settled_) {
      const std::int64_t fall = dist_[v] - reach;
      if (fall != 0) set_potential(v, net_.pot[v] + fall);
      if (net_.pot[v] <= -kPotentialLimit) throw std::logic_error("shortest_path_curve: potentials beyond 2^61");
      if (v >= n_ || v + 1 >= n_) continue;
      const std::int64_t loss = latest_[v + 1] - dist_[v];
      if (loss <= 0) continue;
      set_slack(v, slack_[v] - loss);
      if (slack_[v] < 0 && !dirty_[v]) {
        dirty_[v] = 1;
        dirty_log_.push_back(v);
      }
    }
    for (int v = sink; pred_[v] != -1; v = net_.to[pred_[v] ^ 1]) {
      net_.push(pred_[v]);
      path_log_.push_back(pred_[v]);
    }
    for (int u : settled_) settled_flag_[u] = 0;
    settled_.clear();
    for (int t : touched_) dist_[t] = kInfinity;
    touched_.clear();
  }

  /// Drops from the restricted network every token arc that carries no flow and whose reduced
  /// cost exceeds kKeptReach times the last augmentation's distance (it cannot lie on a shortest
  /// path soon; Dijkstra and every O(arcs) pass get cheaper), folding its reduced cost into its
  /// token's slack (it is implicit again). At a committed budget only (the journal is empty).
  void compact() {
    since_compaction_ = 0;
    const std::int64_t limit = kKeptReach * last_reach_;
    Residual kept;
    kept.head.assign(net_.head.size(), -1);
    kept.pot = net_.pot;
    for (std::size_t a = 0; a < net_.to.size(); a += 2) {
      const int from = net_.to[a ^ 1], to = net_.to[a];
      const bool token_arc = from < n_, never_cached = to == d(from);
      const std::int64_t rc = net_.reduced(int(a));
      if (token_arc && !never_cached && net_.cap[a] > 0 && rc > limit) {
        slack_[from] = std::min(slack_[from], rc);
        continue;
      }
      const int b = kept.add_pair(from, to, net_.cap[a] + net_.cap[a ^ 1], net_.cost[a], net_.earned[a]);
      kept.cap[b] = net_.cap[a];
      kept.cap[b ^ 1] = net_.cap[a ^ 1];
    }
    net_ = std::move(kept);
  }

  /// slack_j = value, journaled.
  void set_slack(int j, std::int64_t value) {
    slack_log_.emplace_back(j, slack_[j]);
    slack_[j] = value;
  }

  /// π(v) = value, journaled.
  void set_potential(int v, std::int64_t value) {
    pot_log_.emplace_back(v, net_.pot[v]);
    net_.pot[v] = value;
  }

  /// Back to the last committed budget: flows, potentials and dirty flags as they were.
  void undo() {
    for (auto a = path_log_.rbegin(); a != path_log_.rend(); ++a) net_.push(*a ^ 1);
    for (auto p = pot_log_.rbegin(); p != pot_log_.rend(); ++p) net_.pot[p->first] = p->second;
    for (auto p = slack_log_.rbegin(); p != slack_log_.rend(); ++p) slack_[p->first] = p->second;
    commit();
  }

  /// The current flow becomes the one undo returns to.
  void commit() {
    for (int j : dirty_log_) dirty_[j] = 0;
    path_log_.clear();
    pot_log_.clear();
    slack_log_.clear();
    dirty_log_.clear();
  }

  /// Adds the violated arcs at flow 0 (at a committed budget π is dual feasible on the whole
  /// network, so each has reduced cost ≥ 0 there; checked).
  void add_arcs(const std::vector<ViolatedArc>& violated, ShortestPathCurveStats& stats) {
    for (const auto& [j, arc] : violated) {
      const int a = net_.add_pair(j, d(arc.e), 1, integer_cost(arc.cost, scale_.costs.scale), arc.earned);
      if (net_.reduced(a) < 0) throw std::logic_error("shortest_path_curve: an implicit arc violated at a certified budget");
      ++stats.arcs_added;
    }
  }

  /// Raises π(R_j) until the arc carrying token j has reduced cost 0 (its reverse bounds π(R_j);
  /// every other arc leaving R_j only gains), so a restricted arc never prices as violated and
  /// π(R_j) is as high as dual feasibility allows (what certify's bound reads).
  void tighten_token_potentials() {
    for (int j = 0; j < n_; ++j) {
      for (int a = net_.head[j]; a != -1; a = net_.next[a]) {
        const std::int64_t tight = net_.pot[net_.to[a]] - net_.cost[a];
        if ((a & 1) == 0 && net_.cap[a] == 0 && net_.pot[j] != tight) {
          set_slack(j, std::min(slack_[j] + (tight - net_.pot[j]), kPotentialLimit));
          set_potential(j, tight);
        }
      }
    }
  }

  /// Prices the implicit arcs of every dirty token against π (the others cannot be violated) and
  /// returns the kArcsPerToken most negative arcs of each violated one.
  std::vector<ViolatedArc> price(ShortestPathCurveStats& stats) {
    tighten_token_potentials();
    ++stats.pricing_passes;
    pot_d_.assign(net_.pot.begin() + n_, net_.pot.end());
    const std::vector<std::int64_t> max_pot = block_max_potential(pot_d_, n_);
    std::vector<ViolatedArc> violated;
    PricingBlocks blocks;
    y_unused_.assign(static_cast<std::size_t>(n_) + 1, 0.0);
    for (int j = 0; j < n_; ++j) {
      if (!dirty_[j]) continue;
      ++stats.tokens_priced;
      restricted_.clear();
      for (int a = net_.head[j]; a != -1; a = net_.next[a]) {
        if ((a & 1) == 0) restricted_.push_back(TokenArc{net_.to[a] - n_, 0.0, 0.0});
      }
      std::sort(restricted_.begin(), restricted_.end(), [](const TokenArc& x, const TokenArc& y) { return x.e < y.e; });
      const TokenPrice p = price_token(gains_, j, scale_, pot_d_, max_pot, net_.pot[j], y_unused_, restricted_,
                                       PricingKeep{kArcsPerToken, false, true}, blocks);
      for (int a = 0; a < p.found; ++a) violated.push_back(ViolatedArc{j, p.arc[a]});
      set_slack(j, std::min(p.least_other, kPotentialLimit));
    }
    stats.blocks_skipped += blocks.skipped;
    stats.blocks_walked += blocks.walked_for_reduced_cost + blocks.walked_for_both + blocks.walked_for_term;
    return violated;
  }

  /// Σ_j W_jj + Σ_j C_j(e_j) of the current flow.
  [[nodiscard]] double flow_value() const {
    double value = gains_.diagonal_sum();
    for (int j = 0; j < n_; ++j) {
      for (int a = net_.head[j]; a != -1; a = net_.next[a]) {
        if ((a & 1) == 0 && net_.cap[a] == 0) value += net_.earned[a];
      }
    }
    return value;
  }

  /// Budget k's point from the current π, dual feasible on the whole network (every reduced cost
  /// ≥ 0, the used arcs' 0 after tightening). Then every token's Lagrangian term min_e (y_e − C_j(e))
  /// is at least −shift_j − (π(R_j) + ρ_j) / scale, ρ_j ≤ 1/2 the largest rounding of one of its
  /// integer costs above the exact one (each arc's reduced cost is ≥ 0; e = n is no lower than
  /// e = n − 1, the backbone's reduced costs being ≥ 0), so the bound of upper_bound_from with these
  /// terms is an upper bound on OPT(k), formed in O(n); it exceeds the full evaluation by at most
  /// n / scale.
  void certify(int k, double value, ShortestPathCurve& out) {
    y_.resize(static_cast<std::size_t>(n_) + 1);
    for (int i = 0; i <= n_; ++i) y_[i] = -static_cast<double>(net_.pot[d(i)]) / scale_.costs.scale;
    double token_terms = -shift_sum_ - rounding_sum_ / scale_.costs.scale;
    for (int j = 0; j < n_; ++j) token_terms -= static_cast<double>(net_.pot[j]) / scale_.costs.scale;
    const double bound = upper_bound_from(gains_.diagonal_sum(), n_, k, y_, token_terms);
    out.points.push_back(CurveOptimum{k, value, std::max(value, bound)});
    if (options_.on_certificate) options_.on_certificate(k, y_);
    if (options_.on_budget) options_.on_budget(static_cast<int>(out.points.size()));
  }

  const TriangularGains<Scalar>& gains_;
  int n_;
  CostScale scale_;
  const ShortestPathCurveOptions& options_;
  Residual net_;
  std::vector<int> pred_, settled_, touched_;
  std::vector<int> path_log_, dirty_log_;                    ///< since the last commit
  std::vector<std::pair<int, std::int64_t>> pot_log_;       ///< (node, potential before)
  std::vector<std::pair<int, std::int64_t>> slack_log_;     ///< (token, slack before)
  std::vector<std::int64_t> latest_;  ///< scratch: suffix maxima of the capped distances of D_e
  /// Per token, a lower bound on the reduced cost of every implicit arc of j (≥ 0 at
  /// every committed budget).
  std::vector<std::int64_t> slack_;
  std::vector<char> settled_flag_, dirty_;
  std::vector<std::int64_t> dist_, pot_d_;
  std::vector<double> y_, y_unused_;
  std::vector<TokenArc> restricted_;  ///< scratch: one token's restricted steps, sorted
  std::int64_t last_reach_ = 0;  ///< the last augmentation's distance from D_0 to D_n
  int since_compaction_ = 0;
  std::size_t settled_total_ = 0, zero_total_ = 0;     ///< committed pairs since the last compact()
  double shift_sum_ = 0.0, rounding_sum_ = 0.0;  ///< Σ_j shift_j, Σ_j (token j's largest rounding)
  std::size_t augmentations_ = 0;
};

}  // namespace

template <class Scalar>
ShortestPathCurve shortest_path_curve(const TriangularGains<Scalar>& gains, int max_budget,
                                      const ShortestPathCurveOptions& options) {
  const int n = gains.size();
  if (max_budget < 1 || max_budget > std::max(n, 1)) {
    throw InputError(kCurveSource, "largest budget", "an integer in [1, " + std::to_string(std::max(n, 1)) + "]",
                     std::to_string(max_budget));
  }
  if (n == 0) {
    ShortestPathCurve out;
    out.points.push_back(CurveOptimum{1, 0.0, 0.0});
    if (options.on_certificate) options.on_certificate(1, std::vector<double>{0.0});
    if (options.on_budget) options.on_budget(1);
    return out;
  }
  return CurveSolver<Scalar>(gains, options).run(max_budget);
}

template ShortestPathCurve shortest_path_curve<float>(const TriangularGains<float>&, int,
                                                      const ShortestPathCurveOptions&);
template ShortestPathCurve shortest_path_curve<double>(const TriangularGains<double>&, int,
                                                       const ShortestPathCurveOptions&);

}  // namespace subevict::greedy
