// `subevict simulate`: eviction policies on every selected (layer, KV head) of a workload against
// the exact offline optimum and the per-step oracle (theory.md §§2, 5), as CSV, JSON and plots.
//
// Units: every mass is the mean over the g query heads of a KV head (so a step contributes at
// most 1 and a run at most n); the optimum and the oracle are computed on the group's summed
// attention and divided by g. Budgets: a value in (0, 1) is a ratio of the sequence length n
// (k = max(1, round(ratio n))); a value >= 1 must be an integer and is an absolute size.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "cli/output_directory.hpp"
#include "core/atomic_file.hpp"
#include "core/generator.hpp"
#include "core/input_error.hpp"
#include "core/number_text.hpp"
#include "core/progress.hpp"
#include "core/workload_io.hpp"
#include "greedy/cache_schedule.hpp"
#include "greedy/head_evaluation.hpp"
#include "greedy/head_group.hpp"
#include "greedy/lookahead.hpp"
#include "greedy/offline_optimum.hpp"
#include "greedy/policy_registry.hpp"
#include "greedy/simulator.hpp"
#include "greedy/step_oracle.hpp"
#include "kernels/batched_simulation.hpp"
#include "kernels/generate.hpp"

namespace subevict::cli {
namespace {

namespace fs = std::filesystem;
using greedy::Trace;

struct SimulateArgs {
  std::string preset;
  std::string workload;
  int tokens = 0;
  int layers = 1;
  std::string heads;  // comma list of KV heads; empty = all
  std::string budget = "0.2";  // as typed, so that an error names it
  std::string budgets;
  std::string policies = "h2o,local,streamingllm,l2norm,tova,random";
  std::string optimum = "flow";
  std::uint64_t seed = 0;
  int horizon = 16;
  int threads = 1;
  std::string output;
  std::string json;
  bool no_plots = false;
  bool quiet = false;
  std::string backend;  // empty: the fastest available
};

/// Batched traces of the five batched policies by (policy, budget value), on a non-reference backend.
using BatchedRuns = std::map<std::pair<std::string, double>, kernels::BatchedSimulation>;

/// One (layer, KV head, budget) cell: every policy's trace, the optimum and the oracle.
struct Cell : greedy::HeadEvaluation {
  double budget_value = 0.0;  // as given
};

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

int parse_int(const std::string& text, const std::string& field) {
  try {
    std::size_t used = 0;
    const int v = std::stoi(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw InputError("simulate", field, "an integer", text);
}

double parse_budget_value(const std::string& text) {
  double v = 0.0;
  try {
    std::size_t used = 0;
    v = std::stod(text, &used);
    if (used != text.size()) v = -1.0;
  } catch (const std::exception&) {
    v = -1.0;
  }
  try {
    (void)greedy::budget_from_value(v, "simulate");
  } catch (const InputError&) {
    throw InputError("simulate", "budget", greedy::kBudgetExpectation, text);
  }
  return v;
}

greedy::Budget to_budget(double v) { return greedy::budget_from_value(v, "simulate"); }

std::string fmt(double x) { return significant_digits(x, 10); }

/// Runs the cells of the selected heads on `threads` workers (results in a fixed order).
std::vector<Cell> run_cells(const Workload& w, const std::vector<std::pair<int, int>>& heads,
                            const std::vector<double>& budgets, const std::vector<std::string>& names,
                            const SimulateArgs& args, const BatchedRuns& batched) {
  const int n = w.shape().tokens;
  std::vector<Cell> cells(heads.size() * budgets.size());
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex mutex;
  Progress progress("simulate", (long long)cells.size(), "(layer, KV head, budget) cells", args.quiet);
  auto worker = [&]() {
    for (std::size_t c; (c = next++) < cells.size();) {
      try {
        const auto [layer, kv] = heads[c / budgets.size()];
        Cell& cell = cells[c];
        cell.budget_value = budgets[c % budgets.size()];
        greedy::HeadEvaluationOptions options;
        options.budget = to_budget(cell.budget_value).resolve(n, 0);
        options.seed = args.seed;
        options.horizon = args.horizon;
        options.optimum = greedy::parse_optimum_mode(args.optimum, "simulate");
        std::vector<std::string> rest;  // the policies the reference simulator runs
        for (const auto& name : names) {
          if (!batched.count({name, cell.budget_value})) rest.push_back(name);
        }
        static_cast<greedy::HeadEvaluation&>(cell) = greedy::evaluate_head(w, layer, kv, rest, options);
        std::vector<Trace> ordered;
        std::size_t from_rest = 0;
        for (const auto& name : names) {
          const auto it = batched.find({name, cell.budget_value});
          ordered.push_back(it != batched.end() ? it->second.trace(layer, kv) : std::move(cell.traces[from_rest++]));
        }
        cell.traces = std::move(ordered);
        progress.advance(1, "(layer " + std::to_string(layer) + ", KV head " + std::to_string(kv) + ", budget " +
                                fmt(cell.budget_value) + ")");
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!failure) failure = std::current_exception();
        next = cells.size();
      }
    }
  };
  const int threads = std::max(1, args.threads);
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  return cells;
}

/// The files of one run, by name, and the JSON document.
struct Outputs {
  std::map<std::string, std::string> files;
  nlohmann::json doc;
};

Outputs build_outputs(const std::vector<Cell>& cells, const std::vector<std::string>& names,
                      const std::vector<double>& budgets, double main_budget, const Workload& w,
                      const SimulateArgs& args) {
  Outputs out;
  const double tol = 1e-9;
  std::ostringstream summary, steps;
  summary << "layer,kv_head,budget,budget_size,policy,oracle_policy,total_retained_mass,"
             "mean_retained_mass,mean_output_error,optimum_total,oracle_total,gap_to_optimum\n";
  steps << "layer,kv_head,budget,step,policy,retained_mass\n";
  nlohmann::json per_head = nlohmann::json::array();
  std::vector<std::string> violations;
  // Aggregates: mean over heads of the mean retained mass, per (policy, budget).
  std::map<std::pair<std::string, double>, std::pair<double, int>> aggregate;
  std::map<std::pair<std::string, double>, int> uncompressed;  // heads a policy did not compress
  for (const Cell& c : cells) {
    const double g = c.heads, n = c.tokens;
    const double opt = c.has_optimum ? c.optimum.value / g : NAN;
    const double orc = c.has_oracle ? c.oracle.total / g : NAN;
    nlohmann::json head = {{"layer", c.layer}, {"kv_head", c.kv_head}, {"budget", c.budget_value},
                           {"budget_size", c.budget}, {"group_size", c.heads}};
    if (c.has_optimum) {
      head["optimum"] = {{"total", opt}, {"upper_bound", c.optimum.upper_bound / g},
                         {"seconds", c.optimum.seconds}, {"arcs", c.optimum.model_size}};
    }
    if (c.has_oracle) head["oracle_total"] = orc;
    head["policies"] = nlohmann::json::object();
    const std::string where = "layer " + std::to_string(c.layer) + " KV head " +
                              std::to_string(c.kv_head) + " budget " + fmt(c.budget_value);
    for (const Trace& t : c.traces) {
      const double total = t.total_retained_mass() / g;
      const double err = greedy::mean_output_error(t);
      summary << c.layer << ',' << c.kv_head << ',' << fmt(c.budget_value) << ',' << c.budget << ','
              << t.policy << ',' << (t.oracle ? 1 : 0) << ',' << fmt(total) << ','
              << fmt(total / n) << ',' << fmt(err) << ',' << (c.has_optimum ? fmt(opt) : "") << ','
              << (c.has_oracle ? fmt(orc) : "") << ',' << (c.has_optimum ? fmt(opt - total) : "")
              << '\n';
      head["policies"][t.policy] = {{"total_retained_mass", total},
                                    {"mean_retained_mass", total / n},
                                    {"mean_output_error", err},
                                    {"oracle_policy", t.oracle},
                                    {"compressed", t.budget == c.budget}};
      auto& a = aggregate[{t.policy, c.budget_value}];
      a.first += total / n;
      a.second += 1;
      if (t.budget != c.budget) ++uncompressed[{t.policy, c.budget_value}];
      // policy <= OPT only for runs that used the budget (l2norm's skipped layers keep all).
      if (c.has_optimum && t.budget == c.budget && total > opt + tol * std::max(1.0, opt)) {
        violations.push_back(t.policy + " > OPT at " + where);
      }
      if (c.budget_value == main_budget) {
        for (const auto& s : t.steps) {
          steps << c.layer << ',' << c.kv_head << ',' << fmt(c.budget_value) << ',' << s.step << ','
                << t.policy << ',' << fmt(s.retained_mass) << '\n';
        }
      }
    }
    if (c.has_optimum) {
      auto& a = aggregate[{"OPT", c.budget_value}];
      a.first += opt / n;
      a.second += 1;
    }
    if (c.has_oracle) {
      auto& a = aggregate[{"sum_U", c.budget_value}];
      a.first += orc / n;
      a.second += 1;
    }
    if (c.has_optimum && opt > orc + tol * std::max(1.0, orc)) violations.push_back("OPT > sum U at " + where);
    if (c.has_oracle && orc > n + tol * n) violations.push_back("sum U > n at " + where);
    if (c.budget_value == main_budget) {
      for (int i = 0; i < c.tokens; ++i) {
        const std::string prefix = std::to_string(c.layer) + ',' + std::to_string(c.kv_head) + ',' +
                                   fmt(c.budget_value) + ',' + std::to_string(i) + ',';
        if (c.has_optimum) steps << prefix << "OPT," << fmt(c.optimum.step_mass[i] / g) << '\n';
        if (c.has_oracle) steps << prefix << "U," << fmt(c.oracle.per_step[i] / g) << '\n';
      }
    }
    per_head.push_back(head);
  }
  out.files["summary.csv"] = summary.str();
  out.files["steps.csv"] = steps.str();

  nlohmann::json agg = nlohmann::json::array();
  for (const auto& [key, value] : aggregate) {
    agg.push_back({{"policy", key.first}, {"budget", key.second},
                   {"mean_retained_mass", value.first / value.second}, {"heads", value.second},
                   {"uncompressed_heads", uncompressed.count(key) ? uncompressed.at(key) : 0}});
  }
  const bool holds = violations.empty();
  out.doc = {{"command", "simulate"},
             {"source", args.workload.empty() ? "preset " + args.preset : args.workload},
             {"shape", to_json(w.shape())},
             {"seed", args.seed},
             {"budgets", budgets},
             {"budget_rule", "values in (0, 1) are ratios of the sequence length, values >= 1 absolute sizes"},
             {"main_budget", main_budget},
             {"policies", names},
             {"optimum", args.optimum},
             {"units", "retained attention mass, mean over the query heads of each KV head; totals sum over steps"},
             {"decomposition", "policy <= OPT_irreversible <= sum_i U_i <= n"},
             {"decomposition_holds", holds},
             {"violations", violations},
             {"aggregate", agg},
             {"heads", per_head}};

  // Plot data: mean over heads per step (main budget) and per budget.
  std::map<std::string, std::vector<double>> per_step;
  int heads_main = 0;
  for (const Cell& c : cells) {
    if (c.budget_value != main_budget) continue;
    ++heads_main;
    auto add = [&](const std::string& name, int i, double v) {
      auto& vec = per_step[name];
      vec.resize(c.tokens, 0.0);
      vec[i] += v;
    };
    for (const Trace& t : c.traces)
      for (const auto& s : t.steps) add(t.policy, s.step, s.retained_mass);
    for (int i = 0; c.has_optimum && i < c.tokens; ++i) add("OPT", i, c.optimum.step_mass[i] / c.heads);
  }
  std::ostringstream step_dat, budget_dat, gap_dat;
  std::vector<std::string> series;
  for (const auto& [name, v] : per_step) series.push_back(name);
  step_dat << "step";
  for (const auto& s : series) step_dat << ' ' << s;
  step_dat << '\n';
  const std::size_t steps_n = per_step.empty() ? 0 : per_step.begin()->second.size();
  for (std::size_t i = 0; i < steps_n; ++i) {
    step_dat << i;
    for (const auto& s : series) step_dat << ' ' << fmt(per_step[s][i] / std::max(1, heads_main));
    step_dat << '\n';
  }
  std::vector<std::string> curve = names;
  if (args.optimum == "flow") curve.push_back("OPT");
  if (args.optimum != "none") curve.push_back("sum_U");
  budget_dat << "budget";
  for (const auto& s : curve) budget_dat << ' ' << s;
  budget_dat << '\n';
  for (double b : budgets) {
    budget_dat << fmt(b < 1.0 ? b : b / double(w.shape().tokens));
    for (const auto& s : curve) {
      const auto it = aggregate.find({s, b});
      budget_dat << ' ' << (it == aggregate.end() ? "nan" : fmt(it->second.first / it->second.second));
    }
    budget_dat << '\n';
  }
  gap_dat << "# policy gap_to_optimum(mean retained mass)\n";
  const auto opt_main = aggregate.find({"OPT", main_budget});
  for (const auto& name : names) {
    const auto it = aggregate.find({name, main_budget});
    if (opt_main == aggregate.end() || it == aggregate.end()) continue;
    gap_dat << '"' << name << "\" "
            << fmt(opt_main->second.first / opt_main->second.second - it->second.first / it->second.second)
            << '\n';
  }
  out.files["retained_per_step.dat"] = step_dat.str();
  out.files["retained_vs_budget.dat"] = budget_dat.str();
  out.files["gap_to_optimum.dat"] = gap_dat.str();

  std::ostringstream gp;
  for (const auto& [terminal, ext] : {std::pair{"svg size 900,540", "svg"},
                                      std::pair{"pngcairo size 900,540", "png"}}) {
    gp << "set terminal " << terminal << "\nset key outside right\nset grid\n"
       << "set output 'retained_per_step." << ext << "'\n"
       << "set title 'Retained attention mass per step (budget " << fmt(main_budget) << ", mean over heads)'\n"
       << "set xlabel 'step'\nset ylabel 'retained mass'\n"
       << "plot for [c=2:" << series.size() + 1 << "] 'retained_per_step.dat' using 1:c with lines title columnhead(c)\n"
       << "set output 'retained_vs_budget." << ext << "'\n"
       << "set title 'Mean retained mass vs budget (ratio of n)'\nset xlabel 'budget / n'\nset logscale x\n"
       << "plot for [c=2:" << curve.size() + 1 << "] 'retained_vs_budget.dat' using 1:c with linespoints title columnhead(c)\n"
       << "unset logscale x\n";
    if (opt_main != aggregate.end()) {
      gp << "set output 'gap_to_optimum." << ext << "'\n"
         << "set title 'Gap to the offline optimum (mean retained mass, budget " << fmt(main_budget) << ")'\n"
         << "set style fill solid 0.6\nset boxwidth 0.6\nset xlabel ''\nset ylabel 'OPT - policy'\nset xtics rotate by -30\n"
         << "plot 'gap_to_optimum.dat' using 0:2:xtic(1) with boxes notitle\nunset xtics\nset xtics\n";
    }
    gp << "unset output\n";
  }
  out.files["plots.gp"] = gp.str();
  return out;
}

void run_simulate(const SimulateArgs& args) {
  // Validate everything cheap before any work or output.
  if (args.preset.empty() == args.workload.empty()) {
    throw InputError("simulate", "input", "exactly one of --preset and --workload");
  }
  require_output_directory(args.json, "--json");
  if (args.optimum != "none" && args.optimum != "flow" && args.optimum != "oracle") {
    throw InputError("simulate", "--optimum", "none, flow or oracle", args.optimum);
  }
  if (args.threads < 0) throw InputError("simulate", "--threads", "an integer >= 0", std::to_string(args.threads));
  const std::vector<std::string> names = split(args.policies);
  if (names.empty()) throw InputError("simulate", "--policies", "at least one policy name");
  for (const auto& name : names) (void)greedy::make_named_policy(name, args.horizon);  // unknown names throw here
  const kernels::Backend backend =
      args.backend.empty() ? kernels::fastest_backend() : kernels::parse_backend(args.backend);
  kernels::require_available(backend);
  const double main_budget = parse_budget_value(args.budget);
  std::set<double> budget_set{main_budget};
  for (const auto& b : split(args.budgets)) budget_set.insert(parse_budget_value(b));
  const std::vector<double> budgets(budget_set.begin(), budget_set.end());

  Workload w;
  if (!args.workload.empty()) {
    w = read_workload(args.workload);
  } else {
    w = kernels::generate_workload(spec_from_preset(args.preset, args.tokens, args.layers, args.seed), backend);
  }
  const Shape& shape = w.shape();
  if (!args.workload.empty() && args.tokens != 0 && args.tokens != shape.tokens) {
    throw InputError(args.workload, "--tokens", std::to_string(shape.tokens) + " (the file's) or 0",
                     std::to_string(args.tokens));
  }
  const int layers = args.layers <= 0 ? shape.layers : args.layers;
  if (layers > shape.layers) {
    throw InputError("simulate", "--layers", "at most " + std::to_string(shape.layers), std::to_string(layers));
  }
  std::vector<int> kv;
  for (const auto& h : split(args.heads)) {
    const int v = parse_int(h, "--heads");
    if (v < 0 || v >= shape.kv_heads) {
      throw InputError("simulate", "--heads", "KV heads in [0, " + std::to_string(shape.kv_heads) + ")", h);
    }
    if (std::find(kv.begin(), kv.end(), v) != kv.end()) {
      throw InputError("simulate", "--heads", "each KV head once", h + " (listed twice)");
    }
    kv.push_back(v);
  }
  if (kv.empty()) {
    for (int h = 0; h < shape.kv_heads; ++h) kv.push_back(h);
  }
  for (double b : budgets) (void)to_budget(b).resolve(shape.tokens, 0);
  std::vector<std::pair<int, int>> heads;
  for (int l = 0; l < layers; ++l)
    for (int h : kv) heads.emplace_back(l, h);
  const int threads = args.threads == 0 ? int(std::max(1u, std::thread::hardware_concurrency())) : args.threads;
  SimulateArgs run_args = args;
  run_args.threads = threads;

  BatchedRuns batched;
  if (backend != kernels::Backend::kReference) {
    for (const auto& name : names) {
      if (!kernels::is_batched_policy(name)) continue;
      for (double b : budgets) {
        kernels::BatchedOptions options;
        options.policy = kernels::parse_batched_policy(name);
        options.budget = to_budget(b).resolve(shape.tokens, 0);
        batched.emplace(std::pair{name, b}, kernels::simulate_batched(w, options, backend));
      }
    }
  }
  const std::vector<Cell> cells = run_cells(w, heads, budgets, names, run_args, batched);
  const Outputs outputs = build_outputs(cells, names, budgets, main_budget, w, args);
  std::map<std::string, std::string> files = outputs.files;
  files["results.json"] = outputs.doc.dump(2) + "\n";
  publish_directory(args.output, files, !args.no_plots);
  if (!args.json.empty()) write_json(args.json, outputs.doc);

  // The headline table: aggregated mean retained mass per policy at the main budget.
  std::cout << "simulate: " << to_string(shape) << ", " << heads.size() << " (layer, KV head) groups, budgets";
  for (double b : budgets) std::cout << ' ' << fmt(b);
  std::cout << "\nmean retained mass at budget " << fmt(main_budget) << ":\n";
  for (const auto& a : outputs.doc["aggregate"]) {
    if (a["budget"].get<double>() == main_budget) {
      const int skipped = a["uncompressed_heads"].get<int>();
      std::printf("  %-16s %.6f%s\n", a["policy"].get<std::string>().c_str(),
                  a["mean_retained_mass"].get<double>(),
                  skipped > 0 ? ("  (" + std::to_string(skipped) + " heads not compressed)").c_str() : "");
    }
  }
  std::cout << "policy <= OPT_irreversible <= sum U_i <= n: "
            << (outputs.doc["decomposition_holds"].get<bool>() ? "holds on every head" : "VIOLATED")
            << (args.optimum == "flow" ? "" : " (checked for the parts computed)") << "\n"
            << "wrote " << args.output << "/{summary.csv,steps.csv,results.json"
            << (args.no_plots ? "" : ",plots") << "}\n";
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "simulate", "Run eviction policies per (layer, KV head) against the offline optimum and the per-step oracle");
  cmd->add_option("--preset", args->preset, "Generate an LLM-like workload of this model shape");
  cmd->add_option("--workload", args->workload, "Read a workload: FILE.safetensors or a q/k/v.npy directory");
  cmd->add_option("--tokens", args->tokens, "Tokens of a generated workload (0: the preset's default)");
  cmd->add_option("--layers", args->layers, "Run the first L layers (0: all); a preset generates L")
      ->capture_default_str();
  cmd->add_option("--heads", args->heads, "KV heads to run, comma-separated (default: all)");
  cmd->add_option("--budget", args->budget,
                  "Budget of the per-step outputs: a ratio in (0, 1) of the sequence length, or an integer size")
      ->capture_default_str();
  cmd->add_option("--budgets", args->budgets, "Further budgets for the budget curve, comma-separated (e.g. 0.04,0.1,0.2,0.6)");
  cmd->add_option("--policies", args->policies, "Policies, comma-separated (policy names, or lookahead)")
      ->capture_default_str();
  cmd->add_option("--optimum", args->optimum, "none | flow (offline optimum and oracle) | oracle (per-step U_i only)")
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "Seed of the generator and of randomized policies")->capture_default_str();
  cmd->add_option("--horizon", args->horizon, "Lookahead window L of the lookahead policy")->capture_default_str();
  cmd->add_option("--threads", args->threads, "Worker threads over heads (0: all cores)")->capture_default_str();
  cmd->add_option("-o,--output", args->output, "Output directory")->required();
  cmd->add_option("--json", args->json, "Also write results.json to this file");
  cmd->add_flag("--no-plots", args->no_plots, "Skip the gnuplot plots");
  cmd->add_flag("--quiet", args->quiet, "No progress on stderr");
  cmd->add_option("--backend", args->backend,
                  "reference | portable | cuda (default: the fastest available): runs h2o, local, streamingllm, "
                  "l2norm and tova batched over all heads; other policies, the oracle and the optimum always run "
                  "on the reference; output formats are identical");
  cmd->callback([args]() { run_simulate(*args); });
}

}  // namespace subevict::cli
