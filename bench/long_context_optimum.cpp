// The exact offline eviction optimum at long context, side by side in one run: the explicit
// network simplex (greedy/eviction/optimum/offline_optimum.hpp) against the implicit-arc column
// generation on stored gains (implicit_flow.hpp) and on streamed gains (streamed_flow.hpp) on one
// LLM-like head, one row per (n, solver). A plain program
// printing a Markdown table (bench/results/greedy_long_context_optimum.md); progress on stderr.
//
//   long_context_optimum --tokens 1024,4096 --solvers simplex,implicit,streamed [--storage double|float]
//                        [--budget 0.2] [--budgets 0.04,0.1,0.2,0.6 | --budget-curve K]
//                        [--gap 1e-4] [--threads 2] [--preset llama2-7b] [--layer 0] [--head 0]
//                        [--seed 1] [--rows-last N [--row-gains]]
//
// --rows-last N restricts every solver's gains to the last N rows (greedy/eviction/process/
// query_rows.hpp: the row-restricted optimum of a question and answer at the end of the context);
// --row-gains computes the implicit solver's restricted gains row by row (row_gain_matrix) instead
// of the whole head's blocks, then zeroing.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <ctime>
#include <iostream>
#include <string>
#include <vector>

#include "bench/process_usage.hpp"
#include "core/generator.hpp"
#include "greedy/eviction/optimum/implicit_flow.hpp"
#include "greedy/eviction/optimum/offline_optimum.hpp"
#include "greedy/eviction/optimum/streamed_flow.hpp"
#include "greedy/eviction/process/query_rows.hpp"

namespace {

using namespace subevict;
using namespace subevict::greedy;
using bench::cpu_seconds;
using bench::peak_rss_mb;

int budget_of(double ratio, int n) {
  return ratio >= 1.0 ? int(ratio) : std::max(1, int(std::lround(ratio * n)));
}

void row(int n, const std::string& solver, const std::string& k, double wall, double cpu,
         const ScheduleSummary& s, const std::string& extra) {
  std::printf("| %d | %s | %s | %.3f | %.3f | %.9f | %.9f | %.1e | %s | %llu | %.0f | %s |\n", n,
              solver.c_str(), k.c_str(), wall, cpu, s.value, s.upper_bound,
              (s.upper_bound - s.value) / std::max(1.0, s.upper_bound), to_string(s.status).c_str(),
              static_cast<unsigned long long>(s.model_size), peak_rss_mb(), extra.c_str());
  std::fflush(stdout);
}

/// Times prepare() (the gains: stored, or the streamed normalizers; it returns a note) and
/// solve(options) (the column generation), with rounds on stderr, and prints the rows. step_mass:
/// ImplicitFlowOptions::step_mass (else the value comes from the flow's arcs).
void run_column_generation(
    int n, const std::vector<int>& budgets, double gap, bool step_mass, const std::string& label,
    const std::function<std::string()>& prepare,
    const std::function<std::vector<ImplicitFlowResult>(const ImplicitFlowOptions&)>& solve) {
  const auto wall0 = std::chrono::steady_clock::now();
  const double cpu0 = cpu_seconds();
  const std::string prepared = prepare();
  const double gains_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  std::fprintf(stderr, "n = %d: gains %s in %.1f s\n", n, prepared.c_str(), gains_s);
  ImplicitFlowOptions options;
  options.relative_gap = gap;
  int rounds = 0;
  options.step_mass = step_mass;
  options.on_round = [&](const ImplicitFlowRound& r) {
    ++rounds;
    if (budgets.size() > 1) return;
    std::fprintf(stderr, "  round %d: %zu arcs (+%zu), value %.9f, bound %.9f, gap %.1e, %.1f s\n",
                 r.round, r.arcs, r.added, r.value, r.upper_bound,
                 (r.upper_bound - r.value) / std::max(1.0, r.upper_bound), r.seconds);
  };
  const auto results = solve(options);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  const double cpu = cpu_seconds() - cpu0;
  if (results.size() == 1) {
    row(n, label, std::to_string(budgets[0]), wall, cpu, results[0].summary,
        "gains " + std::to_string(gains_s).substr(0, 5) + " s, rounds " + std::to_string(rounds) +
            ", pivots " + std::to_string(results[0].summary.nodes));
    return;
  }
  for (const auto& r : results) {
    std::fprintf(stderr, "  k = %d: OPT = %.9f (bound %.9f, %.3f s)\n", r.budget, r.summary.value,
                 r.summary.upper_bound, r.summary.seconds);
  }
  const auto& last = results.back().summary;
  row(n, label, std::to_string(budgets.size()) + " budgets", wall, cpu, last,
      "gains " + std::to_string(gains_s).substr(0, 5) + " s, rounds " + std::to_string(rounds) +
          " in all; value/bound columns: last budget");
}

/// The mask of the last `last` rows of n (empty for 0: every row).
std::vector<char> last_rows(int n, int last) {
  if (last <= 0) return {};
  std::vector<int> rows;
  for (int i = std::max(0, n - last); i < n; ++i) rows.push_back(i);
  return query_row_mask(rows, n, "--rows-last");
}

template <class Scalar>
void run_implicit(const HeadGroup& group, int n, const std::vector<int>& budgets, double gap,
                  const std::string& label, const std::vector<char>& rows, bool row_gains) {
  std::optional<TriangularGains<Scalar>> gains;
  run_column_generation(
      n, budgets, gap, budgets.size() == 1, label,  // a curve reports values only
      [&] {
        if (row_gains && !rows.empty()) {
          gains.emplace(row_gain_matrix<Scalar>(group, rows));
        } else {
          gains.emplace(triangular_gain_matrix<Scalar>(group));
          if (!rows.empty()) restrict_to_rows(*gains, rows);
        }
        return "stored (" + std::to_string(long(gains->bytes() / 1000000)) + " MB)";
      },
      [&](const ImplicitFlowOptions& options) { return implicit_flow_optima(*gains, budgets, options); });
}

void run_streamed(const HeadGroup& group, int n, const std::vector<int>& budgets, double gap, int threads,
                  const std::vector<char>& rows, const std::string& note) {
  std::optional<StreamedGains> gains;
  run_column_generation(
      // Step masses would cost one more pass over the gains; the value comes from the flow's arcs.
      n, budgets, gap, false, "streamed gains (" + std::to_string(threads) + " threads)" + note,
      [&] {
        gains.emplace(group, threads);
        if (!rows.empty()) gains->restrict_to_rows(rows);
        return std::string("normalizers (streamed)");
      },
      [&](const ImplicitFlowOptions& options) { return streamed_flow_optima(*gains, budgets, options); });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The exact offline eviction optimum at long context: explicit vs implicit arcs"};
  std::vector<int> tokens{1024, 4096};
  std::vector<std::string> solvers{"simplex", "implicit"};
  std::string storage = "double", preset = "llama2-7b";
  double budget = 0.2, gap = 0.0;
  std::vector<double> budgets;
  int curve = 0, layer = 0, head = 0, threads = 2, rows_last = 0;
  bool row_gains = false;
  std::uint64_t seed = 1;
  app.add_option("--tokens", tokens)->delimiter(',');
  app.add_option("--solvers", solvers)->delimiter(',');
  app.add_option("--storage", storage)->check(CLI::IsMember({"double", "float"}));
  app.add_option("--budget", budget);
  app.add_option("--budgets", budgets)->delimiter(',');
  app.add_option("--budget-curve", curve, "every k = 1..K in one call (implicit only)");
  app.add_option("--gap", gap);
  app.add_option("--threads", threads, "threads of the streamed solver's passes")->check(CLI::PositiveNumber);
  app.add_option("--preset", preset);
  app.add_option("--layer", layer);
  app.add_option("--head", head);
  app.add_option("--seed", seed);
  app.add_option("--rows-last", rows_last, "restrict the gains to the last N rows (0: every row)");
  app.add_flag("--row-gains", row_gains, "with --rows-last: the implicit solver's gains row by row");
  CLI11_PARSE(app, argc, argv);

  std::printf("| n | solver | k | wall s | CPU s | value | upper bound | relative gap | status | arcs kept | peak RSS MB | notes |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int n : tokens) {
    const Workload workload = generate_workload(spec_from_preset(preset, n, layer + 1, seed));
    const HeadGroup group = head_group(workload, layer, head);
    const std::vector<char> rows = last_rows(n, rows_last);
    const std::string note = rows.empty() ? "" : ", rows: last " + std::to_string(std::min(rows_last, n));
    std::vector<int> ks;
    if (curve > 0) {
      for (int k = 1; k <= curve; ++k) ks.push_back(k);
    } else if (!budgets.empty()) {
      for (double b : budgets) ks.push_back(budget_of(b, n));
    } else {
      ks.push_back(budget_of(budget, n));
    }
    for (const std::string& solver : solvers) {
      if (solver == "simplex") {
        for (int k : ks) {
          const auto wall0 = std::chrono::steady_clock::now();
          const double cpu0 = cpu_seconds();
          Eigen::MatrixXd gains = gain_matrix(group);
          if (!rows.empty()) restrict_to_rows(gains, rows);
          const ScheduleSummary s = offline_optimum(gains, k);
          row(n, "network simplex (explicit arcs)" + note, std::to_string(k),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count(),
              cpu_seconds() - cpu0, s, "");
        }
      } else if (solver == "implicit") {
        if (storage == "float") {
          run_implicit<float>(group, n, ks, gap, "implicit arcs, float gains" + note + (row_gains ? " by row" : ""), rows, row_gains);
        } else {
          run_implicit<double>(group, n, ks, gap, "implicit arcs, double gains" + note + (row_gains ? " by row" : ""), rows, row_gains);
        }
      } else if (solver == "streamed") {
        run_streamed(group, n, ks, gap, threads, rows, note);
      } else {
        std::cerr << "unknown solver " << solver << " (expected simplex, implicit or streamed)\n";
        return 2;
      }
    }
  }
  return 0;
}
