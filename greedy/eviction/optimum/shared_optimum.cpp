#include "greedy/eviction/optimum/shared_optimum.hpp"

#include <lemon/network_simplex.h>
#include <lemon/static_graph.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/input_error.hpp"
#include "greedy/eviction/optimum/flow_cost_quantum.hpp"

namespace subevict::greedy {
namespace {

using Graph = lemon::StaticDigraph;
using Cost = double;  // integer values below 2^53 (see flow_cost_exponent)
constexpr const char* kSource = "shared_optimum";

/// The heads' n after validation (InputError naming the head otherwise).
int validate_heads(const std::vector<const Eigen::MatrixXd*>& gains, long long total) {
  if (gains.empty()) throw InputError(kSource, "heads", "at least one gain matrix");
  const auto n = gains.front()->rows();
  for (std::size_t h = 0; h < gains.size(); ++h) {
    if (gains[h]->rows() != n || gains[h]->cols() != n) {
      throw InputError(kSource, "head " + std::to_string(h),
                       "a " + std::to_string(n) + " x " + std::to_string(n) + " matrix like head 0",
                       std::to_string(gains[h]->rows()) + " x " + std::to_string(gains[h]->cols()));
    }
    validate_gains(*gains[h], std::string(kSource) + ": head " + std::to_string(h));
  }
  if (total < 0) throw InputError(kSource, "total budget", "an integer >= 0", std::to_string(total));
  return static_cast<int>(n);
}

}  // namespace

SharedOptimum shared_optimum(const std::vector<Eigen::MatrixXd>& gains, long long total,
                             const SharedOptimumOptions& options) {
  std::vector<const Eigen::MatrixXd*> heads;
  for (const Eigen::MatrixXd& g : gains) heads.push_back(&g);
  return shared_optimum(heads, total, options);
}

SharedOptimum shared_optimum(const std::vector<const Eigen::MatrixXd*>& gains, long long total,
                             const SharedOptimumOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const int n = validate_heads(gains, total);
  const int heads = static_cast<int>(gains.size());
  SharedOptimum out;
  out.last_step.assign(heads, std::vector<int>(n));
  out.occupancy = Eigen::MatrixXi::Zero(n, heads);
  if (n == 0) {
    out.status = ScheduleStatus::kOptimal;
    return out;
  }
  // A larger total changes nothing; with it every count below fits an int.
  const int t = static_cast<int>(std::min<long long>(total, static_cast<long long>(heads) * n));

  // Arcs sorted by source (StaticDigraph's requirement): R_{h,j} = node h·n + j, D_i = node H·n + i.
  // Costs are shifted per token to be ≥ 0 (each token sends its one unit on exactly one arc, so
  // adding the most it can earn to all of its arcs adds a constant to every flow's cost): LEMON's
  // network simplex with a floating-point cost type derives its artificial cost from the largest.
  const int d0 = heads * n;
  std::vector<std::pair<int, int>> arcs;
  std::vector<double> cost;
  std::vector<int> head_step;  // e = t + 1 of a token arc, −1 for the backbone
  double max_cost = 0.0, shift = 0.0, diagonal = 0.0;
  for (int h = 0; h < heads; ++h) {
    diagonal += gains[h]->diagonal().sum();
    for (int j = 0; j < n; ++j) {
      const std::size_t first = cost.size();
      const double* column = gains[h]->col(j).data();
      arcs.emplace_back(h * n + j, d0 + j);  // never cached
      cost.push_back(0.0);
      head_step.push_back(j);
      double earned = 0.0;
      // Cached on steps j..e−1 earns W_{j+1,j} + ... + W_{e,j}; e ≤ n − 1 when pruning, else e = n
      // (cached to the end) earns the same as e = n − 1.
      const int last = options.prune_dominated_arcs ? n - 1 : n;
      for (int e = j + 1; e <= last; ++e) {
        const double g = e <= n - 1 ? column[e] : 0.0;
        earned += g;
        if (options.prune_dominated_arcs && g == 0.0) continue;
        arcs.emplace_back(h * n + j, d0 + e);
        cost.push_back(-earned);
        head_step.push_back(e);
      }
      for (std::size_t a = first; a < cost.size(); ++a) cost[a] += earned;
      max_cost = std::max(max_cost, earned);
      shift += earned;
    }
  }
  for (int i = 0; i < n; ++i) {
    arcs.emplace_back(d0 + i, d0 + i + 1);
    cost.push_back(0.0);
    head_step.push_back(-1);
  }
  const int node_count = d0 + n + 1;
  Graph graph;
  graph.build(node_count, arcs.begin(), arcs.end());
  const std::size_t m = arcs.size();
  std::vector<std::pair<int, int>>().swap(arcs);

  // flow_cost_exponent bounds sums over 2n' + 1 nodes; n' = ⌈(node_count − 1) / 2⌉ covers them all.
  const int s = flow_cost_exponent((node_count) / 2, max_cost);
  const double scale = std::ldexp(1.0, s);
  Graph::ArcMap<Cost> rounded_cost(graph);
  Graph::ArcMap<int> capacity(graph);
  for (std::size_t a = 0; a < m; ++a) {
    const Graph::Arc arc = graph.arc(static_cast<int>(a));
    rounded_cost[arc] = std::nearbyint(cost[a] * scale);
    capacity[arc] = head_step[a] < 0 ? t : 1;
  }
  Graph::NodeMap<int> supply(graph);
  for (int r = 0; r < d0; ++r) supply[graph.node(r)] = 1;
  supply[graph.node(d0)] = t - heads;
  for (int i = 1; i < n; ++i) supply[graph.node(d0 + i)] = -heads;
  supply[graph.node(d0 + n)] = -t;

  using Simplex = lemon::NetworkSimplex<Graph, int, Cost>;
  Simplex simplex(graph);
  simplex.upperMap(capacity).costMap(rounded_cost).supplyMap(supply);
  static constexpr Simplex::PivotRule kRules[] = {Simplex::BLOCK_SEARCH, Simplex::FIRST_ELIGIBLE,
                                                  Simplex::BEST_ELIGIBLE, Simplex::CANDIDATE_LIST,
                                                  Simplex::ALTERING_LIST};
  const auto result = simplex.run(kRules[static_cast<int>(options.pivot)]);
  out.arcs = m;
  if (result != Simplex::OPTIMAL) {
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;  // kFailed: cannot happen for valid input (the never-cached schedule is feasible)
  }
  for (std::size_t a = 0; a < m; ++a) {
    if (head_step[a] < 0 || simplex.flow(graph.arc(static_cast<int>(a))) != 1) continue;
    const int r = graph.id(graph.source(graph.arc(static_cast<int>(a))));
    out.last_step[r / n][r % n] = head_step[a] - 1;
  }
  for (int h = 0; h < heads; ++h) {
    out.value += schedule_value(*gains[h], out.last_step[h]);
    for (int j = 0; j < n; ++j) {
      for (int i = j; i <= out.last_step[h][j]; ++i) ++out.occupancy(i, h);
    }
  }
  out.status = ScheduleStatus::kOptimal;
  out.upper_bound = out.value;
  if (options.certify) {
    // Lagrangian dual of the flow LP with potentials π = −(LEMON's) / scale and the unrounded
    // (shifted) costs: min cost ≥ Σ_v π_v b_v + Σ_e u_e min(0, c_e − π_source + π_target).
    std::vector<double> pi(node_count);
    for (int v = 0; v < node_count; ++v) pi[v] = -static_cast<double>(simplex.potential(graph.node(v))) / scale;
    double bound = 0.0;
    for (int v = 0; v < node_count; ++v) bound += pi[v] * supply[graph.node(v)];
    for (std::size_t a = 0; a < m; ++a) {
      const Graph::Arc arc = graph.arc(static_cast<int>(a));
      const double reduced = cost[a] - pi[graph.id(graph.source(arc))] + pi[graph.id(graph.target(arc))];
      if (reduced < 0.0) bound += capacity[arc] * reduced;
    }
    out.upper_bound = std::max(out.value, diagonal + shift - bound);
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace subevict::greedy
