#include "greedy/eviction/optimum/shortest_path_curve.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/input_error.hpp"
#include "core/parallel_units.hpp"
#include "greedy/eviction/optimum/column_generation.hpp"
#include "greedy/eviction/optimum/implicit_flow.hpp"
#include "greedy/eviction/optimum/incremental_network_simplex.hpp"
#include "greedy/eviction/optimum/radix_heap.hpp"
#include "greedy/eviction/optimum/triangle_pricing.hpp"

namespace subevict::greedy {
namespace {

using namespace column_generation;

constexpr const char* kCurveSource = "shortest_path_curve";
constexpr std::int64_t kInfinity = std::numeric_limits<std::int64_t>::max();
/// Potentials stay below 2^61 in magnitude, so a distance (a reduced cost below 2^62 plus a
/// distance below it) fits in 64 bits; the solver checks it after every augmentation.
constexpr std::int64_t kPotentialLimit = std::int64_t{1} << 61;
/// A run of budgets on its own thread holds this many budgets at least: its start (a column
/// generation at its first budget) costs about as much as a hundred augmentations at n = 4096.
constexpr int kRunBudgets = 256;

/// A queue entry: a node at its tentative distance, or block b of token j's implicit arcs at a lower
/// bound on the distance any of them gives (block = −1 for a node). Keys are distances from D_0 on
/// reduced costs, so never negative, and never below the key popped last (a block's bound is raised
/// to its token's distance, which every arc of the token's exceeds): the queue is monotone.
struct Entry {
  std::uint64_t key;
  int node;
  int block;
};

/// What every run of budgets of one instance reads and none changes: the integer costs' scale,
/// per token C_j at the end of its first block and the integer cost at every later block's end, and
/// the certificate's sums.
template <class Scalar>
struct CurveInstance {
  explicit CurveInstance(const TriangularGains<Scalar>& g)
      : gains(g), n(g.size()), blocks(block_count(g.size())), scale(cost_scale(g)) {
    first_end.assign(n, 0.0);
    // Per token: C_j at the end of its first block (where block_earned's stored ends begin), and the
    // largest rounding of an arc's integer cost above its exact cost (in cost units, at most 1/2;
    // exact in double: the two terms are within a factor 2 of each other or tiny).
    for (int j = 0; j < n; ++j) {
      const double shift = scale.costs.shift[j], s = scale.costs.scale;
      const Scalar* column = gains.column(j);
      const int walked_to = std::min(n - 1, ((j + 1) / kPricingBlock + 1) * kPricingBlock - 1);
      double earned = 0.0, rounding = static_cast<double>(integer_cost(shift, s)) - shift * s;
      for (int e = j + 1; e < n; ++e) {
        earned += double(column[e - j]);
        if (e == walked_to) first_end[j] = earned;
        rounding = std::max(rounding, static_cast<double>(integer_cost(shift - earned, s)) - (shift - earned) * s);
      }
      shift_sum += shift;
      rounding_sum += rounding;
    }
    block_end_cost.resize(scale.block_earned.size());
    for (int j = 0; j < n; ++j) {
      for (std::size_t m = scale.block_offset[j]; m < scale.block_offset[j + 1]; ++m) {
        block_end_cost[m] = arc_cost(j, scale.block_earned[m]);
      }
    }
  }

  [[nodiscard]] std::int64_t arc_cost(int j, double earned) const {
    return integer_cost(scale.costs.shift[j] - earned, scale.costs.scale);
  }
  /// The index of token j's block b (b after its first block) in block_earned and block_end_cost.
  [[nodiscard]] std::size_t later_block(int j, int b) const {
    return scale.block_offset[j] + static_cast<std::size_t>(b - (j + 1) / kPricingBlock - 1);
  }
  /// C_j just before block b (b > the first block of j): the exact double a walk down column j
  /// reaches there (the end of the block before).
  [[nodiscard]] double earned_before(int j, int b) const {
    return b == (j + 1) / kPricingBlock + 1 ? first_end[j] : scale.block_earned[later_block(j, b - 1)];
  }
  /// C_j(e) for e ∈ [j, n] (C_j(n) = C_j(n − 1)), summed as every walk sums it.
  [[nodiscard]] double earned_at(int j, int e) const {
    e = std::min(e, n - 1);
    const int first = (j + 1) / kPricingBlock, b = e / kPricingBlock;
    double earned = 0.0;
    int from = j + 1;
    if (b > first) {
      earned = earned_before(j, b);
      from = b * kPricingBlock;
    }
    const Scalar* column = gains.column(j);
    for (int i = from; i <= e; ++i) earned += double(column[i - j]);
    return earned;
  }
  /// The integer cost at the end of token j's block b (b after its first block).
  [[nodiscard]] std::int64_t block_end_cost_of(int j, int b) const { return block_end_cost[later_block(j, b)]; }

  const TriangularGains<Scalar>& gains;
  int n, blocks;
  CostScale scale;
  std::vector<double> first_end;             ///< C_j at the end of token j's first block
  std::vector<std::int64_t> block_end_cost;  ///< the integer cost at each block_earned entry
  double shift_sum = 0.0, rounding_sum = 0.0;  ///< Σ_j shift_j, Σ_j (token j's largest rounding)
};

/// Where a run of budgets hands each certified point: (point, certificate y_0..y_n).
using PointSink = std::function<void(const CurveOptimum&, const std::vector<double>&)>;

/// One run of consecutive budgets first..last: the first by the column generation, each next one
/// by one augmentation.
template <class Scalar>
class CurveSolver {
 public:
  CurveSolver(const CurveInstance<Scalar>& instance, PointSink sink)
      : in_(instance), gains_(instance.gains), n_(instance.n), blocks_(instance.blocks), sink_(std::move(sink)) {
    const int nodes = 2 * n_ + 1;
    pot_.assign(nodes, 0);
    dist_.assign(nodes, kInfinity);
    pred_.assign(nodes, -1);
    settled_flag_.assign(nodes, 0);
    base_.assign(n_, 0);
    end_.assign(n_, 0);
    carry_cost_.assign(n_, 0);
    carry_earned_.assign(n_, 0.0);
    position_.assign(n_, 0);
    ending_at_.assign(static_cast<std::size_t>(n_) + 1, {});
    flow_.assign(n_, 0);
    unsettled_steps_.assign(blocks_, 0);
  }

  /// Budgets first..last (1 ≤ first ≤ last ≤ n), each handed to the sink in order; returns what
  /// the run did.
  ShortestPathCurveStats run(int first, int last) {
    start_from(first);
    for (int k = first + 1; k <= last; ++k) {
      augment();
      tighten_token_potentials();
      certify(k);
    }
    stats_.blocks_skipped = blocks_after_first_ - stats_.blocks_walked;
    return stats_;
  }

 private:
  [[nodiscard]] int d(int i) const { return n_ + i; }
  [[nodiscard]] std::int64_t arc_cost(int j, double earned) const { return in_.arc_cost(j, earned); }

  /// Token j's arc now ends at D_e with this integer cost and earnings (it leaves the list of its
  /// old end; at the start, before its first arc, it is in no list).
  void carry(int j, int e, std::int64_t cost, double earned) {
    std::vector<int>& old = ending_at_[end_[j]];
    if (position_[j] < static_cast<int>(old.size()) && old[position_[j]] == j) {
      old[position_[j]] = old.back();
      position_[old[position_[j]]] = position_[j];
      old.pop_back();
    }
    end_[j] = e;
    carry_cost_[j] = cost;
    carry_earned_[j] = earned;
    position_[j] = static_cast<int>(ending_at_[e].size());
    ending_at_[e].push_back(j);
  }

  /// Budget k0 by the column generation (implicit_flow.hpp's solve_budget from each token's
  /// never-cached arc and guessed lifetime, priced until no arc is violated): its optimal basis's
  /// potentials are dual feasible on the whole residual network (≥ 0 on arcs at flow 0, ≤ 0 on arcs
  /// at capacity, no implicit arc below 0), and its flow (each token's chosen arc, the backbone by
  /// conservation) is kept.
  void start_from(int k0) {
    const CostScale& scale = in_.scale;
    const std::vector<double> prices = slot_prices<Scalar>({&gains_}, k0);
    std::vector<std::vector<TokenArc>> arcs(n_);
    for (int j = 0; j < n_; ++j) arcs[j] = guessed_token_arcs(gains_, j, prices, scale.costs.shift[j]);
    IncrementalNetworkSimplex simplex = restricted_simplex(n_, k0, scale.costs, arcs);
    ImplicitFlowOptions values_only;
    values_only.step_mass = false;
    values_only.process_form = false;
    values_only.on_round = [this](const ImplicitFlowRound&) { ++stats_.pricing_passes; };
    const ImplicitFlowResult first = solve_budget(n_, gains_.diagonal_sum(), k0, scale.costs, simplex, arcs,
                                                  values_only, price_every_token(gains_, scale, nullptr), {});
    if (first.summary.status != ScheduleStatus::kOptimal) {
      throw std::logic_error("shortest_path_curve: the first budget's column generation stopped early");
    }
    const std::vector<int> chosen = simplex.chosen_steps();
    for (int v = 0; v < 2 * n_ + 1; ++v) pot_[v] = simplex.potential(v);
    std::vector<int> arriving(static_cast<std::size_t>(n_) + 1, 0);  // tokens whose arc ends at D_e
    for (int j = 0; j < n_; ++j) {
      for (const TokenArc& arc : arcs[j]) {
        if (arc.e != chosen[j]) continue;
        const std::int64_t cost = integer_cost(arc.cost, scale.costs.scale);
        // The walks form the same cost from the same sums; a token arc must not change its cost when
        // it leaves the restricted network.
        if (arc.e < n_ && arc.e > j && cost != arc_cost(j, in_.earned_at(j, arc.e))) {
          throw std::logic_error("shortest_path_curve: a restricted arc's cost differs from its walk's");
        }
        carry(j, arc.e, cost, arc.earned);
      }
      ++arriving[chosen[j]];
    }
    // The backbone's flow by conservation at D_i (supply k0 − 1 at D_0, −1 at 0 < i < n).
    int flow = k0 - 1;
    for (int i = 0; i < n_; ++i) {
      flow += arriving[i] - (i == 0 ? 0 : 1);
      flow_[i] = flow;
    }
    tighten_token_potentials();
    sink_(CurveOptimum{k0, first.summary.value, first.summary.upper_bound}, first.potentials);
  }

  /// Relaxes node v to distance `through` from predecessor p (pred_ encoding: a token j < n for
  /// its arc R_j → D_e, n + i for the backbone from D_i; unused for R nodes).
  void relax(int v, std::int64_t through, int p) {
    if (settled_flag_[v] || through >= dist_[v]) return;
    if (dist_[v] == kInfinity) touched_.push_back(v);
    dist_[v] = through;
    pred_[v] = p;
    queue_.push(Entry{static_cast<std::uint64_t>(through), v, -1});
  }

  /// Relaxes the explicit arc from settled node u (at distance du) to v with reduced cost rc.
  void relax_arc(int v, std::int64_t du, std::int64_t rc, int p) {
    if (rc < 0) throw std::logic_error("shortest_path_curve: a residual arc lost dual feasibility");
    relax(v, du + rc, p);
  }

  /// Relaxes token j's implicit arcs R_j → D_e for the steps e of block b (its first block: from
  /// j + 1), walking down column j from C_j before the block (the exact doubles every walk reaches,
  /// so each arc's integer cost is the one pricing formed). A settled D_e needs no test: its
  /// distance is at most the entry's key, at most any arc's. Nor does token j's own arc (at
  /// capacity, not residual): it ends at D_{e_j}, R_j's only way in, settled before R_j.
  void walk(int j, int b) {
    const int first = (j + 1) / kPricingBlock, from = b == first ? j + 1 : b * kPricingBlock;
    const int last = block_end(b, n_);
    const Scalar* column = gains_.column(j);
    const std::int64_t base = base_[j], floor = dist_[j];
    const std::int64_t* pot_d = pot_.data() + n_;
    const std::int64_t* dist_d = dist_.data() + n_;
    // In locals: relax() writes to the solver's arrays, which would make the compiler reload them.
    const double shift = in_.scale.costs.shift[j], scale = in_.scale.costs.scale;
    double earned = b == first ? 0.0 : in_.earned_before(j, b);
    for (int e = from; e <= last; ++e) {
      earned += double(column[e - j]);
      const std::int64_t through = base + integer_cost(shift - earned, scale) - pot_d[e];
      if (through >= dist_d[e]) continue;
      if (through < floor) throw std::logic_error("shortest_path_curve: an implicit arc lost dual feasibility");
      relax(d(e), through, j);
    }
  }

  /// The bound of token j's block b (b after its first block): no arc R_j → D_e in the block gives
  /// D_e a distance below it (C_j at the block's end, the block's largest π(D_e)).
  [[nodiscard]] std::int64_t block_key(int j, int b) const {
    return base_[j] + in_.block_end_cost_of(j, b) - max_pot_[b];
  }

  /// Queues token j's next block after (key, b) in the order (bound, block) whose bound lies below
  /// `bound`, an upper bound on D_n's distance (a block at or above it can only reach nodes that
  /// stay unsettled) and whose steps are not all settled, at its bound raised to the token's
  /// distance (every arc of the token's gives at least that); one block of a token is in the queue
  /// at a time.
  void queue_next_block(int j, std::int64_t key, int b, std::int64_t bound) {
    std::int64_t best = bound;
    int block = -1;
    for (int c = (j + 1) / kPricingBlock + 1; c < blocks_; ++c) {
      if (unsettled_steps_[c] == 0) continue;
      const std::int64_t k = block_key(j, c);
      if ((k > key || (k == key && c > b)) && k < best) {
        best = k;
        block = c;
      }
    }
    if (block >= 0) {
      queue_.push(Entry{static_cast<std::uint64_t>(std::max(best, dist_[j])), j, block});
      ++stats_.blocks_queued;
    }
  }

  /// Settles R_j: relaxes its arcs in its first block at once (the never-cached arc R_j → D_j
  /// included) and queues its later blocks.
  void settle_token(int j, std::int64_t bound) {
    base_[j] = dist_[j] + pot_[j];
    if (!settled_flag_[d(j)]) {  // settled when it is D_{e_j} (e_j = j: never cached)
      const std::int64_t through = base_[j] + arc_cost(j, 0.0) - pot_[d(j)];
      if (through < dist_[j]) throw std::logic_error("shortest_path_curve: a never-cached arc lost dual feasibility");
      relax(d(j), through, j);
    }
    if (j + 1 < n_) walk(j, (j + 1) / kPricingBlock);
    blocks_after_first_ += static_cast<std::size_t>(std::max(0, blocks_ - (j + 1) / kPricingBlock - 1));
    queue_next_block(j, std::numeric_limits<std::int64_t>::min(), -1, bound);
  }

  /// Raises the budget by one: Dijkstra from D_0 to D_n on reduced costs over the whole network,
  /// the implicit arcs relaxed block by block in the order of their bounds; π grown by the
  /// distances capped at D_n's (settled nodes only: the others keep theirs, the same up to a
  /// constant), which keeps every reduced cost ≥ 0; then one unit along the path.
  void augment() {
    ++stats_.augmentations;
    max_pot_ = block_max_potential(std::vector<std::int64_t>(pot_.begin() + n_, pot_.end()), n_);
    for (int b = 0; b < blocks_; ++b) unsettled_steps_[b] = block_end(b, n_) - b * kPricingBlock + 1;
    const int source = d(0), sink = d(n_);
    dist_[source] = 0;
    touched_.push_back(source);
    queue_.push(Entry{0, source, -1});
    // An upper bound on D_n's distance: a settled D_i plus the backbone from D_i to D_n, whose
    // reduced costs sum to π(D_i) − π(D_n).
    std::int64_t bound = kInfinity;
    bool reached = false;
    while (!queue_.empty()) {
      const Entry top = queue_.pop();
      const auto key = static_cast<std::int64_t>(top.key);
      if (dist_[sink] <= key) {  // nothing left in the queue can lower it: D_n settles now
        settled_flag_[sink] = 1;
        settled_.push_back(sink);
        ++stats_.nodes_settled;
        reached = true;
        break;
      }
      if (top.block >= 0) {
        if (key >= bound) continue;
        const int j = top.node, b = top.block;
        if (unsettled_steps_[b] > 0) {
          ++stats_.blocks_walked;
          walk(j, b);
        }
        queue_next_block(j, block_key(j, b), b, std::min(bound, dist_[sink]));
        continue;
      }
      const int u = top.node;
      if (settled_flag_[u] || key > dist_[u]) continue;
      settled_flag_[u] = 1;
      settled_.push_back(u);
      ++stats_.nodes_settled;
      if (u >= n_) --unsettled_steps_[(u - n_) / kPricingBlock];  // u is not D_n: see above
      const std::int64_t du = dist_[u];
      if (u < n_) {
        settle_token(u, std::min(bound, dist_[sink]));
        continue;
      }
      const int i = u - n_;
      bound = std::min(bound, du + pot_[u] - pot_[sink]);
      relax_arc(d(i + 1), du, pot_[u] - pot_[d(i + 1)], u);
      if (i > 0 && flow_[i - 1] > 0) relax_arc(d(i - 1), du, pot_[u] - pot_[d(i - 1)], u);
      for (int j : ending_at_[i]) relax_arc(j, du, -carry_cost_[j] + pot_[u] - pot_[j], u);
    }
    if (!reached) throw std::logic_error("shortest_path_curve: no augmenting path");
    queue_.clear();
    const std::int64_t reach = dist_[sink];
    for (int v : settled_) {
      pot_[v] += dist_[v] - reach;
      if (pot_[v] <= -kPotentialLimit) throw std::logic_error("shortest_path_curve: potentials beyond 2^61");
    }
    // One unit from D_n back to D_0: a backbone step moves the backbone's flow, a token step
    // D_old → R_j → D_e moves token j's arc from D_old to D_e.
    for (int v = sink; v != source;) {
      const int p = pred_[v];
      const int e = v - n_;
      if (p >= n_) {
        const int i = p - n_;
        if (i + 1 == e) ++flow_[i];
        else --flow_[e];
        v = p;
      } else {
        const int j = p, old = end_[j];
        const double earned = in_.earned_at(j, e);
        carry(j, e, arc_cost(j, earned), earned);
        v = d(old);
      }
    }
    for (int u : settled_) settled_flag_[u] = 0;
    settled_.clear();
    for (int t : touched_) dist_[t] = kInfinity;
    touched_.clear();
  }

  /// Raises π(R_j) until the reverse of token j's arc (its only way in) has reduced cost 0: every
  /// arc leaving R_j only gains, and π(R_j) is as high as dual feasibility allows (what certify's
  /// bound reads).
  void tighten_token_potentials() {
    for (int j = 0; j < n_; ++j) {
      const std::int64_t tight = pot_[d(end_[j])] - carry_cost_[j];
      if (tight < pot_[j]) throw std::logic_error("shortest_path_curve: a token's arc lost dual feasibility");
      pot_[j] = tight;
    }
  }

  /// Budget k's point from the current π, dual feasible on the whole network (every reduced cost
  /// ≥ 0, the used arcs' 0 after tightening). Then every token's Lagrangian term min_e (y_e − C_j(e))
  /// is at least −shift_j − (π(R_j) + ρ_j) / scale, ρ_j ≤ 1/2 the largest rounding of one of its
  /// integer costs above the exact one (each arc's reduced cost is ≥ 0; e = n is no lower than
  /// e = n − 1, the backbone's reduced costs being ≥ 0), so the bound of upper_bound_from with these
  /// terms is an upper bound on OPT(k), formed in O(n); it exceeds the full evaluation by at most
  /// n / scale. The value is Σ_j W_jj + Σ_j C_j(e_j) of the flow's schedule.
  void certify(int k) {
    const double scale = in_.scale.costs.scale;
    y_.resize(static_cast<std::size_t>(n_) + 1);
    for (int i = 0; i <= n_; ++i) y_[i] = -static_cast<double>(pot_[d(i)]) / scale;
    double token_terms = -in_.shift_sum - in_.rounding_sum / scale;
    double value = gains_.diagonal_sum();
    for (int j = 0; j < n_; ++j) {
      token_terms -= static_cast<double>(pot_[j]) / scale;
      value += carry_earned_[j];
    }
    const double bound = upper_bound_from(gains_.diagonal_sum(), n_, k, y_, token_terms);
    sink_(CurveOptimum{k, value, std::max(value, bound)}, y_);
  }

  const CurveInstance<Scalar>& in_;
  const TriangularGains<Scalar>& gains_;
  int n_, blocks_;
  PointSink sink_;
  std::vector<std::int64_t> pot_;         ///< R_j = j, D_i = n + i
  std::vector<int> end_;                  ///< token j's arc ends at D_{end_j} (end_j = j: never cached)
  std::vector<std::int64_t> carry_cost_;  ///< that arc's integer cost
  std::vector<double> carry_earned_;      ///< and its C_j(end_j)
  std::vector<std::vector<int>> ending_at_;  ///< per D_e the tokens whose arc ends there
  std::vector<int> position_;             ///< token j's index in ending_at_[end_j]
  std::vector<int> flow_;                 ///< the backbone D_i → D_{i+1}'s flow
  std::vector<std::int64_t> dist_, base_, max_pot_;
  std::vector<int> pred_, settled_, touched_;
  std::vector<char> settled_flag_;
  /// Per block of steps, its D_e not yet settled in this Dijkstra: a block of settled steps is
  /// neither queued nor walked (an arc into a settled node changes nothing).
  std::vector<int> unsettled_steps_;
  RadixHeap<Entry> queue_;
  std::vector<double> y_;
  ShortestPathCurveStats stats_;
  std::size_t blocks_after_first_ = 0;  ///< blocks after the first of every token settled
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
  if (options.threads < 1) {
    throw InputError(kCurveSource, "threads", "an integer >= 1", std::to_string(options.threads));
  }
  const CurveInstance<Scalar> instance(gains);
  // Runs of consecutive budgets, one per thread; run r holds budgets first[r]..first[r + 1] − 1.
  const int runs = std::max(1, std::min(options.threads, max_budget / kRunBudgets));
  std::vector<int> first(static_cast<std::size_t>(runs) + 1);
  for (int r = 0; r <= runs; ++r) first[r] = 1 + static_cast<int>(static_cast<long long>(r) * max_budget / runs);
  std::vector<std::vector<CurveOptimum>> points(runs);
  std::vector<std::vector<std::vector<double>>> held(runs);  // later runs' certificates, handed out last
  std::vector<ShortestPathCurveStats> stats(runs);
  std::mutex progress;
  int done = 0;
  const std::string error = parallel_units(runs, runs, [&](long long u) {
    const int r = static_cast<int>(u);
    CurveSolver<Scalar> solver(instance, [&, r](const CurveOptimum& p, const std::vector<double>& y) {
      points[r].push_back(p);
      if (options.on_certificate) {
        if (r == 0) {
          options.on_certificate(p.budget, y);
        } else {
          held[r].push_back(y);
        }
      }
      if (options.on_budget) {
        const std::lock_guard<std::mutex> lock(progress);
        options.on_budget(++done);
      }
    });
    stats[r] = solver.run(first[r], first[r + 1] - 1);
  });
  if (!error.empty()) throw std::logic_error(error);
  ShortestPathCurve out;
  for (int r = 0; r < runs; ++r) {
    out.points.insert(out.points.end(), points[r].begin(), points[r].end());
    for (std::size_t i = 0; i < held[r].size(); ++i) options.on_certificate(points[r][i].budget, held[r][i]);
    out.stats += stats[r];
  }
  return out;
}

template ShortestPathCurve shortest_path_curve<float>(const TriangularGains<float>&, int,
                                                      const ShortestPathCurveOptions&);
template ShortestPathCurve shortest_path_curve<double>(const TriangularGains<double>&, int,
                                                       const ShortestPathCurveOptions&);

}  // namespace subevict::greedy
