#include "greedy/eviction/budgets/budget_curve.hpp"

#include <chrono>
#include <cmath>
#include <numeric>

#include "core/input_error.hpp"
#include "core/number_text.hpp"
#include "greedy/eviction/evaluation/head_evaluation.hpp"
#include "greedy/eviction/optimum/implicit_flow.hpp"
#include "greedy/eviction/optimum/shortest_path_curve.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/process/head_group_sha256.hpp"
#include "greedy/eviction/process/triangular_gains.hpp"

namespace subevict::greedy {
namespace {

template <class Scalar>
std::vector<BudgetCurvePoint> curve_points(const HeadGroup& group, int max_budget, double relative_gap,
                                           const std::function<void(int)>& on_points, int threads) {
  const TriangularGains<Scalar> gains = triangular_gain_matrix<Scalar>(group);
  std::vector<BudgetCurvePoint> out;
  if (relative_gap == 0.0) {  // exact: successive shortest paths (bench/results/budget_curve.md)
    ShortestPathCurveOptions options;
    options.on_budget = on_points;
    options.threads = threads;
    for (const CurveOptimum& p : shortest_path_curve(gains, max_budget, options).points) {
      out.push_back(BudgetCurvePoint{p.budget, p.value, p.upper_bound, ScheduleStatus::kOptimal});
    }
    return out;
  }
  std::vector<int> budgets(static_cast<std::size_t>(max_budget));
  std::iota(budgets.begin(), budgets.end(), 1);
  ImplicitFlowOptions options;
  options.relative_gap = relative_gap;
  options.step_mass = false;     // values only: Σ W_jj + Σ C_j(e_j) from the flow's arcs
  options.process_form = false;  // the schedules are not kept
  if (on_points) options.on_budget = [&on_points](std::size_t done) { on_points(static_cast<int>(done)); };
  for (const ImplicitFlowResult& r : implicit_flow_optima(gains, budgets, options)) {
    out.push_back(BudgetCurvePoint{r.budget, r.summary.value, r.summary.upper_bound, r.summary.status});
  }
  return out;
}

}  // namespace

BudgetCurve optimum_budget_curve(const Workload& workload, int layer, int kv_head, int max_budget,
                                 double relative_gap, const std::function<void(int)>& on_points, int threads) {
  const int n = workload.shape().tokens;
  if (max_budget < 1 || max_budget > n) {
    throw InputError("budget curve", "largest budget K", "an integer in [1, " + std::to_string(n) + "] (the tokens)",
                     std::to_string(max_budget));
  }
  if (n > kStoredGainsTokens) {
    throw InputError("budget curve", "tokens",
                     "at most " + std::to_string(kStoredGainsTokens) +
                         " (the curve prices every budget against the stored gains; streamed gains would "
                         "recompute the attention for every pricing pass of every budget)",
                     std::to_string(n));
  }
  if (!std::isfinite(relative_gap) || relative_gap < 0.0) {
    throw InputError("budget curve", "gap", "a finite value >= 0", significant_digits(relative_gap, 10));
  }
  if (threads < 1) throw InputError("budget curve", "threads", "an integer >= 1", std::to_string(threads));
  const auto start = std::chrono::steady_clock::now();
  const HeadGroup group = head_group(workload, layer, kv_head);
  BudgetCurve out;
  out.layer = layer;
  out.kv_head = kv_head;
  out.heads = group.group_size();
  out.tokens = n;
  out.head_sha256 = head_group_sha256(group);
  out.points = n <= kDoubleGainsTokens ? curve_points<double>(group, max_budget, relative_gap, on_points, threads)
                                       : curve_points<float>(group, max_budget, relative_gap, on_points, threads);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace subevict::greedy
