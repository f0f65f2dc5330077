// The budget curve OPT(1..K) of one LLM-like head, side by side in one run: successive shortest
// paths (greedy/eviction/optimum/shortest_path_curve.hpp) against the column generation raised
// budget by budget (implicit_flow_optima), with the largest difference between the two at any
// budget. A plain program printing a Markdown table (bench/results/budget_curve.md); progress on
// stderr.
//
//   budget_curve_bench --tokens 1024,4096 [--curve 0.5] [--solvers paths,columns] [--storage double|float]
//                      [--preset llama2-7b] [--layer 0] [--head 0] [--seed 1] [--threads 1,2]
//
// --threads: the shortest paths run once per count (ShortestPathCurveOptions::threads), each a row.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <numeric>
#include <string>
#include <vector>

#include "bench/process_usage.hpp"
#include "core/generator.hpp"
#include "greedy/eviction/optimum/implicit_flow.hpp"
#include "greedy/eviction/optimum/shortest_path_curve.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/process/triangular_gains.hpp"

namespace {

using namespace subevict;
using namespace subevict::greedy;
using bench::cpu_seconds;
using bench::peak_rss_mb;
using bench::timed;

template <class Scalar>
void run(const HeadGroup& group, int n, int max_budget, const std::vector<std::string>& solver_names,
         const std::vector<int>& thread_counts) {
  // "paths" once per thread count ("paths/2" on 2 threads), then the other solvers.
  std::vector<std::string> solvers;
  for (const std::string& solver : solver_names) {
    if (solver != "paths") {
      solvers.push_back(solver);
      continue;
    }
    for (int threads : thread_counts) solvers.push_back(threads == 1 ? "paths" : "paths/" + std::to_string(threads));
  }
  TriangularGains<Scalar> gains;
  const auto [gains_s, gains_cpu] = timed([&] { gains = triangular_gain_matrix<Scalar>(group); });
  std::fprintf(stderr, "n = %d: gains in %.1f s\n", n, gains_s);
  std::vector<double> first_row;  // the first row's values, which every later row is compared with
  for (const std::string& solver : solvers) {
    std::vector<double> paths_value, columns_value;
    std::string notes;
    double largest_gap = 0.0, last_value = 0.0;
    std::pair<double, double> t;
    if (solver.rfind("paths", 0) == 0) {
      ShortestPathCurveOptions options;
      options.threads = solver == "paths" ? 1 : std::stoi(solver.substr(6));
      const auto start = std::chrono::steady_clock::now();
      auto last_report = start;
      options.on_budget = [&](int done) {
        const auto now = std::chrono::steady_clock::now();
        if (done == max_budget || now - last_report > std::chrono::seconds(5)) {
          last_report = now;
          std::fprintf(stderr, "  %s: %d/%d budgets, %.1f s\n", solver.c_str(), done, max_budget,
                       std::chrono::duration<double>(now - start).count());
        }
      };
      ShortestPathCurve curve;
      t = timed([&] { curve = shortest_path_curve(gains, max_budget, options); });
      for (const CurveOptimum& p : curve.points) {
        paths_value.push_back(p.value);
        largest_gap = std::max(largest_gap, (p.upper_bound - p.value) / std::max(1.0, p.upper_bound));
      }
      last_value = curve.points.back().value;
      const ShortestPathCurveStats& s = curve.stats;
      notes = "augmentations " + std::to_string(s.augmentations) + ", first budget's pricing passes " +
              std::to_string(s.pricing_passes) + ", nodes settled " + std::to_string(s.nodes_settled) +
              ", token blocks skipped " + std::to_string(s.blocks_skipped) + ", queued " +
              std::to_string(s.blocks_queued) + ", walked " + std::to_string(s.blocks_walked);
    } else if (solver == "columns") {
      std::vector<int> budgets(static_cast<std::size_t>(max_budget));
      std::iota(budgets.begin(), budgets.end(), 1);
      ImplicitFlowOptions options;
      options.step_mass = false;
      options.process_form = false;
      std::vector<ImplicitFlowResult> results;
      t = timed([&] { results = implicit_flow_optima(gains, budgets, options); });
      for (const ImplicitFlowResult& r : results) {
        columns_value.push_back(r.summary.value);
        largest_gap = std::max(largest_gap, (r.summary.upper_bound - r.summary.value) /
                                                std::max(1.0, r.summary.upper_bound));
      }
      last_value = results.back().summary.value;
      notes = "network simplex raised budget by budget";
    } else {
      std::fprintf(stderr, "unknown solver %s (expected paths or columns)\n", solver.c_str());
      std::exit(2);
    }
    std::string agreement = "-";
    const std::vector<double>& values = paths_value.empty() ? columns_value : paths_value;
    if (first_row.empty()) {
      first_row = values;
    } else {
      double worst = 0.0;
      for (std::size_t k = 0; k < values.size(); ++k) {
        worst = std::max(worst, std::abs(values[k] - first_row[k]) / std::max(1.0, first_row[k]));
      }
      char text[32];
      std::snprintf(text, sizeof text, "%.1e", worst);
      agreement = text;
    }
    std::printf("| %d | %d | %s | %.2f | %.2f | %.2f | %.9f | %.1e | %s | %.0f | %s |\n", n, max_budget,
                solver.c_str(), gains_s, t.first, t.second, last_value, largest_gap, agreement.c_str(),
                peak_rss_mb(), notes.c_str());
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The budget curve of one head: successive shortest paths against the column generation"};
  std::vector<int> tokens{1024, 4096};
  std::vector<std::string> solvers{"paths", "columns"};
  std::string storage = "double", preset = "llama2-7b";
  double curve = 0.5;
  int layer = 0, head = 0;
  std::uint64_t seed = 1;
  std::vector<int> threads{1};
  app.add_option("--tokens", tokens)->delimiter(',');
  app.add_option("--threads", threads, "thread counts of the shortest paths, a row each")->delimiter(',');
  app.add_option("--curve", curve, "largest budget as a share of n (or a count when >= 1)");
  app.add_option("--solvers", solvers)->delimiter(',');
  app.add_option("--storage", storage)->check(CLI::IsMember({"double", "float"}));
  app.add_option("--preset", preset);
  app.add_option("--layer", layer);
  app.add_option("--head", head);
  app.add_option("--seed", seed);
  CLI11_PARSE(app, argc, argv);

  std::printf("| n | K | solver | gains s | curve wall s | curve CPU s | OPT(K) | largest certified gap | "
              "largest difference to the first row | peak RSS MB | notes |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int n : tokens) {
    const Workload workload = generate_workload(spec_from_preset(preset, n, layer + 1, seed));
    const HeadGroup group = head_group(workload, layer, head);
    const int max_budget = curve >= 1.0 ? std::min(n, int(curve)) : std::max(1, int(std::lround(curve * n)));
    if (storage == "float") {
      run<float>(group, n, max_budget, solvers, threads);
    } else {
      run<double>(group, n, max_budget, solvers, threads);
    }
  }
  return 0;
}
