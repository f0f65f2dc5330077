// One cache shared by the KV heads of L generated layers of SmolLM2-135M's shape (9 query heads,
// 3 KV heads, d = 64) against the uniform split and the optimal static allocation
// (budget_allocation.hpp over the heads' exact curves from shortest_path_curve.hpp): the explicit
// network (greedy/eviction/optimum/shared_optimum.hpp, where it fits --explicit-gb) and the column
// generation (shared_columns.hpp, certified to --gap) side by side. A plain program printing a
// Markdown table (bench/results/shared_optimum.md).
//
//   shared_optimum_bench [--tokens 1024,2048] [--budgets 0.05,0.1,0.2] [--layers 1] [--gap 1e-4]
//                        [--explicit-gb 8] [--skip-static] [--seed 1]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <vector>

#include "bench/process_usage.hpp"
#include "core/generator.hpp"
#include "greedy/eviction/budgets/budget_allocation.hpp"
#include "greedy/eviction/optimum/shared_columns.hpp"
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
  int layers = 1;
  double gap = 1e-4, explicit_gb = 8.0;
  bool skip_static = false;
  app.add_option("--tokens", tokens)->delimiter(',');
  app.add_option("--budgets", ratios, "budget per KV head as a share of the tokens")->delimiter(',');
  app.add_option("--layers", layers, "generated layers whose KV heads share the cache");
  app.add_option("--gap", gap, "relative gap at which the column generation stops");
  app.add_option("--explicit-gb", explicit_gb, "skip the explicit network beyond this estimate (60 bytes an arc)");
  app.add_option("--seed", seed);
  app.add_flag("--skip-static", skip_static, "skip the curves, the uniform and static columns (many heads)");
  CLI11_PARSE(app, argc, argv);

  std::printf("| n | heads | k per KV head | total T | uniform | static | shared (explicit) | shared (columns) | "
              "static / uniform | shared / static | curves s | explicit s | columns s | columns rounds | "
              "columns certified gap | peak RSS MB |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int n : tokens) {
    WorkloadSpec spec;
    spec.shape = Shape{layers, 9, 3, n, 64};
    spec.seed = seed;
    const Workload workload = generate_workload(spec);
    std::vector<TriangularGains<double>> stored;
    for (int l = 0; l < layers; ++l) {
      for (int kv = 0; kv < 3; ++kv) stored.push_back(triangular_gain_matrix<double>(head_group(workload, l, kv)));
    }
    std::vector<const TriangularGains<double>*> pointers;
    for (const auto& g : stored) pointers.push_back(&g);
    const int heads = int(stored.size());
    const bool fits = shared_network_bytes(std::size_t(heads), n) <= explicit_gb * 1e9;
    for (double ratio : ratios) {
      const int k = std::max(1, int(std::lround(ratio * n)));
      const long long total = (long long)heads * k;
      const int largest = largest_static_budget(n, total, heads);
      auto start = std::chrono::steady_clock::now();
      std::vector<std::vector<double>> curves;
      double uniform = skip_static ? NAN : 0.0;
      for (const auto& g : stored) {
        if (skip_static) break;
        std::vector<double> curve;
        for (const CurveOptimum& p : shortest_path_curve(g, largest).points) curve.push_back(p.value);
        uniform += curve[std::size_t(k) - 1];
        curves.push_back(std::move(curve));
      }
      const double fixed = skip_static ? NAN : allocate_budget(curves, total).value;
      const double curves_s = seconds_since(start);
      std::fprintf(stderr, "n = %d, %d heads, k = %d: curves in %.1f s, shared optimum ...\n", n, heads, k, curves_s);
      double explicit_value = NAN, explicit_s = NAN;
      if (fits) {
        std::vector<Eigen::MatrixXd> dense;
        for (int l = 0; l < layers; ++l) {
          for (int kv = 0; kv < 3; ++kv) dense.push_back(gain_matrix(head_group(workload, l, kv)));
        }
        start = std::chrono::steady_clock::now();
        explicit_value = shared_optimum(dense, total).value;
        explicit_s = seconds_since(start);
      }
      SharedColumnOptions options;
      options.relative_gap = gap;
      int rounds = 0;
      options.on_round = [&](const ImplicitFlowRound& r) {
        rounds = r.round;
        std::fprintf(stderr, "  round %d: %zu arcs, relative gap %.1e, %.1f s\n", r.round, r.arcs,
                     (r.upper_bound - r.value) / r.upper_bound, r.seconds);
      };
      start = std::chrono::steady_clock::now();
      const SharedOptimum columns = shared_optimum_columns(pointers, total, options);
      const double columns_s = seconds_since(start);
      std::printf("| %d | %d | %d | %lld | %.6f | %.6f | %.6f | %.6f | %.5f | %.5f | %.1f | %.1f | %.1f | %d | %.1e | %.0f |\n",
                  n, heads, k, total, uniform, fixed, explicit_value, columns.value, fixed / uniform,
                  columns.value / fixed, curves_s, explicit_s, columns_s, rounds,
                  (columns.upper_bound - columns.value) / columns.upper_bound, peak_rss_mb());
      std::fflush(stdout);
    }
  }
  return 0;
}
