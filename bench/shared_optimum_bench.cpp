// One cache shared by a layer's KV heads (greedy/eviction/optimum/shared_optimum.hpp) against the
// uniform split and the optimal static allocation (budget_allocation.hpp over the heads' exact
// curves from shortest_path_curve.hpp), on one generated layer of SmolLM2-135M's shape (9 query
// heads, 3 KV heads, d = 64). A plain program printing a Markdown table
// (bench/results/shared_optimum.md).
//
//   shared_optimum_bench [--tokens 1024,2048] [--budgets 0.05,0.1,0.2] [--seed 1]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <vector>

#include "bench/process_usage.hpp"
#include "core/generator.hpp"
#include "greedy/eviction/evaluation/budget_allocation.hpp"
#include "greedy/eviction/optimum/shared_optimum.hpp"
#include "greedy/eviction/optimum/shortest_path_curve.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/process/triangular_gains.hpp"

namespace {

using namespace subevict;
using namespace subevict::greedy;
using bench::peak_rss_mb;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"One cache shared by a layer's KV heads against uniform and static splits"};
  std::vector<int> tokens{1024, 2048};
  std::vector<double> ratios{0.05, 0.1, 0.2};
  std::uint64_t seed = 1;
  app.add_option("--tokens", tokens)->delimiter(',');
  app.add_option("--budgets", ratios, "budget per KV head as a share of the tokens")->delimiter(',');
  app.add_option("--seed", seed);
  CLI11_PARSE(app, argc, argv);

  std::printf("| n | k per KV head | total T | uniform | static | shared | static / uniform | shared / static | "
              "curves s | shared s | shared certified gap | arcs | peak RSS MB |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int n : tokens) {
    WorkloadSpec spec;
    spec.shape = Shape{1, 9, 3, n, 64};
    spec.seed = seed;
    const Workload workload = generate_workload(spec);
    std::vector<Eigen::MatrixXd> gains;
    for (int kv = 0; kv < 3; ++kv) gains.push_back(gain_matrix(head_group(workload, 0, kv)));
    for (double ratio : ratios) {
      const int k = std::max(1, int(std::lround(ratio * n)));
      const long long total = 3LL * k;
      const int largest = int(std::min<long long>(n, total - 2));
      auto start = std::chrono::steady_clock::now();
      std::vector<std::vector<double>> curves;
      double uniform = 0;
      for (const Eigen::MatrixXd& w : gains) {
        std::vector<double> curve;
        const auto stored = TriangularGains<double>::from_dense(w, "bench");
        for (const CurveOptimum& p : shortest_path_curve(stored, largest).points) curve.push_back(p.value);
        uniform += curve[std::size_t(k) - 1];
        curves.push_back(std::move(curve));
      }
      const double fixed = allocate_budget(curves, total).value;
      const double curves_s = seconds_since(start);
      std::fprintf(stderr, "n = %d, k = %d: curves in %.1f s, shared optimum ...\n", n, k, curves_s);
      start = std::chrono::steady_clock::now();
      const SharedOptimum shared = shared_optimum(gains, total);
      const double shared_s = seconds_since(start);
      std::printf("| %d | %d | %lld | %.6f | %.6f | %.6f | %.5f | %.5f | %.1f | %.1f | %.1e | %zu | %.0f |\n", n, k,
                  total, uniform, fixed, shared.value, fixed / uniform, shared.value / fixed, curves_s, shared_s,
                  (shared.upper_bound - shared.value) / shared.upper_bound, shared.arcs, peak_rss_mb());
      std::fflush(stdout);
    }
  }
  return 0;
}
