#include "greedy/eviction/optimum/offline_optimum.hpp"

#include <lemon/network_simplex.h>
#include <lemon/static_graph.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>
#include <vector>

#include "greedy/eviction/optimum/flow_cost_quantum.hpp"

namespace subevict::greedy {
namespace {

using Graph = lemon::StaticDigraph;
using Cost = double;  // integer values below 2^53 (see flow_cost_exponent)

}  // namespace

ScheduleSummary offline_optimum(const Eigen::MatrixXd& gains, int budget,
                                const OfflineOptimumOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const int n = validate_instance(gains, budget, "offline_optimum");
  if (n == 0) return empty_schedule_summary();
  ScheduleSummary out;
  const int k = std::min(budget, n);  // a larger budget changes nothing

  // Arc list sorted by source (StaticDigraph's requirement): R_j = node j, D_i = node n + i.
  // For each kept arc remember its t + 1 and its true cost, shifted per token to be >= 0: R_j
  // sends exactly one unit on exactly one of its arcs, so adding earned_j (the most token j can
  // earn) to all of them adds the constant sum_j earned_j to every flow's cost. LEMON's network
  // simplex needs costs >= 0 with a floating-point cost type (its artificial cost is derived
  // from the largest cost).
  std::vector<std::pair<int, int>> arcs;
  std::vector<double> cost;
  std::vector<int> head_step;  // t + 1 for R arcs, -1 for chain arcs
  std::size_t reserve = static_cast<std::size_t>(n) * (n + 1) / 2 + 2 * static_cast<std::size_t>(n);
  arcs.reserve(reserve);
  cost.reserve(reserve);
  head_step.reserve(reserve);
  double max_cost = 0.0;
  double shift = 0.0;  // sum_j earned_j
  for (int j = 0; j < n; ++j) {
    const std::size_t first = cost.size();
    const double* column = gains.col(j).data();
    arcs.emplace_back(j, n + j);  // never cached
    cost.push_back(0.0);
    head_step.push_back(j);
    double earned = 0.0;
    // Cached on steps j..t earns W_{j+1,j} + ... + W_{t+1,j}; t + 1 <= n - 1 when pruning, else
    // t = n - 1 (to D_n) earns the same as t = n - 2.
    const int last_head = options.prune_dominated_arcs ? n - 1 : n;
    for (int h = j + 1; h <= last_head; ++h) {
      const double g = h <= n - 1 ? column[h] : 0.0;
      earned += g;
      if (options.prune_dominated_arcs && g == 0.0) continue;
      arcs.emplace_back(j, n + h);
      cost.push_back(-earned);
      head_step.push_back(h);
    }
    for (std::size_t e = first; e < cost.size(); ++e) cost[e] += earned;
    max_cost = std::max(max_cost, earned);
    shift += earned;
  }
  for (int i = 0; i < n; ++i) {
    arcs.emplace_back(n + i, n + i + 1);
    cost.push_back(0.0);
    head_step.push_back(-1);
  }
  const int node_count = 2 * n + 1;
  Graph graph;
  graph.build(node_count, arcs.begin(), arcs.end());
  const std::size_t m = arcs.size();
  std::vector<std::pair<int, int>>().swap(arcs);

  const int s = flow_cost_exponent(n, max_cost);
  const double scale = std::ldexp(1.0, s);
  Graph::ArcMap<Cost> rounded_cost(graph);
  Graph::ArcMap<int> capacity(graph);
  for (std::size_t e = 0; e < m; ++e) {
    const Graph::Arc arc = graph.arc(static_cast<int>(e));
    rounded_cost[arc] = std::nearbyint(cost[e] * scale);
    capacity[arc] = head_step[e] < 0 ? k : 1;
  }
  Graph::NodeMap<int> supply(graph);
  for (int j = 0; j < n; ++j) supply[graph.node(j)] = 1;
  supply[graph.node(n)] = k - 1;
  for (int i = 1; i < n; ++i) supply[graph.node(n + i)] = -1;
  supply[graph.node(2 * n)] = -k;

  lemon::NetworkSimplex<Graph, int, Cost> simplex(graph);
  simplex.upperMap(capacity).costMap(rounded_cost).supplyMap(supply);
  using Simplex = lemon::NetworkSimplex<Graph, int, Cost>;
  static constexpr Simplex::PivotRule kRules[] = {Simplex::BLOCK_SEARCH, Simplex::FIRST_ELIGIBLE,
                                                  Simplex::BEST_ELIGIBLE, Simplex::CANDIDATE_LIST,
                                                  Simplex::ALTERING_LIST};
  const auto result = simplex.run(kRules[static_cast<int>(options.pivot)]);
  out.model_size = m;
  if (result != Simplex::OPTIMAL) {
    out.status = ScheduleStatus::kFailed;
    out.message = "network simplex reported an infeasible or unbounded network";
    return out;
  }

  std::vector<int> last_step(n, -2);
  for (std::size_t e = 0; e < m; ++e) {
    if (head_step[e] < 0) continue;
    if (simplex.flow(graph.arc(static_cast<int>(e))) == 1) {
      last_step[graph.id(graph.source(graph.arc(static_cast<int>(e))))] = head_step[e] - 1;
    }
  }
  out.last_step = options.process_form ? to_process_schedule(last_step, k) : last_step;
  finish_summary(gains, out);
  out.status = ScheduleStatus::kOptimal;

  if (options.certify) {
    // Lagrangian dual of the flow LP with potentials pi = -(LEMON's) / scale and the true
    // (shifted) costs: min cost >= sum_v pi_v b_v + sum_e u_e min(0, c_e - pi_s + pi_t).
    std::vector<double> pi(node_count);
    for (int v = 0; v < node_count; ++v) {
      pi[v] = -static_cast<double>(simplex.potential(graph.node(v))) / scale;
    }
    double bound = 0.0;
    for (int v = 0; v < node_count; ++v) bound += pi[v] * supply[graph.node(v)];
    for (std::size_t e = 0; e < m; ++e) {
      const Graph::Arc arc = graph.arc(static_cast<int>(e));
      const double reduced = cost[e] - pi[graph.id(graph.source(arc))] + pi[graph.id(graph.target(arc))];
      if (reduced < 0.0) bound += capacity[arc] * reduced;
    }
    out.upper_bound = std::max(out.value, gains.diagonal().sum() + shift - bound);
  } else {
    out.upper_bound = out.value;
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace subevict::greedy
