#include "proofs_checks/shared_cache.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/tolerance.hpp"
#include "greedy/eviction/budgets/budget_allocation.hpp"
#include "greedy/eviction/optimum/shared_optimum.hpp"
#include "greedy/eviction/optimum/shortest_path_curve.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/process/triangular_gains.hpp"
#include "proofs_checks/format.hpp"

namespace subevict::proofs_checks {

SharedSolver exact_shared_optimum() {
  return [](const std::vector<Eigen::MatrixXd>& gains, long long total) {
    return greedy::shared_optimum(gains, total).value;
  };
}

CheckResult check_shared_cache(const Workload& workload, const std::vector<int>& layers, int budget,
                               const SharedSolver& shared, int max_tokens) {
  const Shape& shape = workload.shape();
  const int n = max_tokens > 0 ? std::min(max_tokens, shape.tokens) : shape.tokens;
  if (layers.empty()) throw std::invalid_argument("check_shared_cache: no layer");
  if (budget < 1 || budget > n) {
    throw std::invalid_argument("check_shared_cache: budget " + std::to_string(budget) + " outside [1, " +
                                std::to_string(n) + "]");
  }
  const int heads = shape.kv_heads;
  const long long total = (long long)budget * heads;
  const int largest = greedy::largest_static_budget(n, total, heads);
  CheckResult result;
  Series over_uniform_static{"allocation", "optimal static allocation", "layer",
                             "sum over KV heads of retained mass, / uniform budgets (ratio)", {}, {},
                             SeriesStyle::categorical, {},
                             "A layer's cache split across its KV heads: static and shared against uniform"};
  Series over_uniform_shared = over_uniform_static;
  over_uniform_shared.label = "one cache shared over time";
  double static_over_uniform = 0, shared_over_static = 0;
  long long breaks = 0;
  std::string first_break;
  for (int layer : layers) {
    std::vector<Eigen::MatrixXd> gains;
    std::vector<std::vector<double>> curves;
    double uniform = 0, slack = 0;
    for (int kv = 0; kv < heads; ++kv) {
      gains.push_back(greedy::gain_matrix(greedy::first_tokens(greedy::head_group(workload, layer, kv), n)));
      const auto stored = greedy::TriangularGains<double>::from_dense(gains.back(), "check_shared_cache");
      std::vector<double> curve;
      for (const greedy::CurveOptimum& p : greedy::shortest_path_curve(stored, largest).points) curve.push_back(p.value);
      uniform += curve[std::size_t(budget) - 1];
      slack += Tol<double>::sum(std::size_t(n) * std::size_t(n)) * std::max(1.0, curve.back());
      curves.push_back(std::move(curve));
    }
    const double fixed = greedy::allocate_budget(curves, total, "check_shared_cache").value;
    const double together = shared(gains, total);
    ++result.instances;
    static_over_uniform += fixed / uniform / double(layers.size());
    shared_over_static += together / fixed / double(layers.size());
    over_uniform_static.x.push_back(double(over_uniform_static.x.size()));
    over_uniform_static.x_names.push_back("L" + std::to_string(layer));
    over_uniform_static.y.push_back(fixed / uniform);
    over_uniform_shared.x = over_uniform_static.x;
    over_uniform_shared.x_names = over_uniform_static.x_names;
    over_uniform_shared.y.push_back(together / uniform);
    if (std::min(fixed - uniform, together - fixed) < -slack) {
      ++breaks;
      if (first_break.empty()) {
        first_break = " The order breaks first at layer " + std::to_string(layer) + ": uniform " +
                      format_number(uniform) + ", static " + format_number(fixed) + ", shared " +
                      format_number(together) + "; the ratios are then not to be trusted.";
      }
    }
  }
  conclude_measurement(result);
  result.measurements.push_back(
      {"static_over_uniform", static_over_uniform, "mean over layers of the optimal static allocation / uniform"});
  result.measurements.push_back(
      {"shared_over_static", shared_over_static, "mean over layers of the shared optimum / optimal static allocation"});
  result.measurements.push_back(
      {"chain_breaks", double(breaks), "layers where uniform <= static <= shared breaks beyond rounding"});
  result.key_number = "static +" + format_number(100 * (static_over_uniform - 1)) + "% over uniform, shared +" +
                      format_number(100 * (shared_over_static - 1)) + "% over static";
  result.series.push_back(std::move(over_uniform_static));
  result.series.push_back(std::move(over_uniform_shared));
  result.notes = "k = " + std::to_string(budget) + " per KV head (" + std::to_string(total) + " slots per layer of " +
                 std::to_string(heads) + " KV heads), first " + std::to_string(n) + " tokens." + first_break;
  return result;
}

}  // namespace subevict::proofs_checks
