// `subevict simulate`: eviction policies on every selected (layer, KV head) of a workload against
// the exact offline optimum and the per-step oracle (theory.md §§2, 5), as CSV, JSON and plots.
// This file holds the options and the order of the work: the inputs (cli/simulate_inputs.hpp),
// the cells (cli/simulate_cells.hpp), the files (cli/simulate_outputs.hpp, with the units of the
// masses) and what is printed (cli/simulate_report.hpp); --share runs cli/share_run.hpp instead.
// Budgets are read as cli/simulate_args.hpp says.

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "cli/output_directory.hpp"
#include "cli/share_run.hpp"
#include "cli/simulate_args.hpp"
#include "cli/simulate_cells.hpp"
#include "cli/simulate_inputs.hpp"
#include "cli/simulate_outputs.hpp"
#include "cli/simulate_report.hpp"

namespace subevict::cli {
namespace {

/// --share: the adaptive budget rules at the main budget on every KV head of the selected layers.
void run_share_request(const SimulateArgs& args, const SimulateInputs& inputs, const SimulateWorkload& loaded,
                       int threads) {
  ShareRequest request;
  request.model = args.share == "model";
  request.rules = inputs.share_rules;
  request.scorers = inputs.specs;
  request.budget = simulate_budget(inputs.main_budget).resolve(loaded.w.shape().tokens, 0);
  request.budget_text = args.budget;
  request.curves = args.curves;
  request.shared_seconds = args.shared_seconds;
  request.threads = threads;
  request.quiet = args.quiet;
  request.seed = args.seed;
  request.output = args.output;
  request.json = args.json;
  run_share(loaded.w, loaded.layers, request);
}

void run_simulate(const SimulateArgs& args) {
  if (args.list_policies) {
    print_policies();
    return;
  }
  // Everything cheap is checked before any work or output.
  const SimulateInputs inputs = read_simulate_inputs(args);
  const SimulateWorkload loaded = load_simulate_workload(args, inputs);
  const int threads = args.threads == 0 ? int(std::max(1u, std::thread::hardware_concurrency())) : args.threads;
  if (!args.share.empty()) {
    run_share_request(args, inputs, loaded, threads);
    return;
  }
  std::vector<std::pair<int, int>> heads;
  for (int l : loaded.layers)
    for (int h : loaded.kv) heads.emplace_back(l, h);
  SimulateArgs run_args = args;
  run_args.threads = threads;
  const BatchedRuns batched = run_batched(loaded.w, inputs.specs, inputs.budgets, inputs.backend);
  std::vector<greedy::BudgetCurve> curves;
  const std::vector<Cell> cells =
      run_cells(loaded.w, heads, inputs.budgets, inputs.specs, run_args, batched, inputs.recorded, curves);
  const Outputs outputs = build_outputs(cells, curves, inputs.specs, inputs.budgets, inputs.main_budget, loaded.w,
                                        loaded.layers, loaded.kv, args);
  std::map<std::string, std::string> files = outputs.files;
  files["results.json"] = outputs.doc.dump(2) + "\n";
  const std::string written = publish_directory(args.output, files, !args.no_plots);
  if (!args.json.empty()) write_json(args.json, outputs.doc);
  print_simulate_report(loaded.w.shape(), loaded.layers, loaded.kv, inputs.budgets, inputs.main_budget, cells,
                        outputs.doc, args.optimum, written);
  // policy <= OPT <= sum U <= n cannot break on correct numbers: the outputs stay for inspection,
  // the exit status says that they are wrong.
  const nlohmann::json& violations = outputs.doc["violations"];
  if (!violations.empty()) {
    std::cerr << "subevict: error: simulate: policy <= OPT_irreversible <= sum U_i <= n violated " << violations.size()
              << " time(s) (results.json \"violations\"), first: " << violations.front().get<std::string>() << "\n";
    throw CLI::RuntimeError(1);
  }
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "simulate",
      "Run eviction policies per (layer, KV head) against the offline optimum and the per-step oracle; exits 1, "
      "after writing the outputs, when policy <= OPT <= sum U_i <= n is violated (a wrong number, never a finding)");
  cmd->add_option("--preset", args->preset, "Generate an LLM-like workload of this model shape");
  cmd->add_option("--workload", args->workload, "Read a workload: FILE.safetensors or a q/k/v.npy directory");
  cmd->add_option("--tokens", args->tokens, "Tokens of a generated workload (0: the preset's default)");
  cmd->add_option("--layers", args->layers,
                  "Layers to run: a list of layers and ranges such as 0,14,20-29, or all; a single number N is "
                  "layer N alone (not the first N layers: write 0-3 for those); a preset generates layers 0 up "
                  "to the last one listed")
      ->capture_default_str();
  cmd->add_option("--heads", args->heads,
                  "KV heads to run, in the same syntax (e.g. 1 or 0,2-3); a preset generates only these on the "
                  "reference backend")
      ->capture_default_str();
  cmd->add_option("--budget", args->budget,
                  "Budget of the per-step outputs: a ratio in (0, 1) of the sequence length, or an integer size")
      ->capture_default_str();
  cmd->add_option("--budgets", args->budgets,
                  "Further budgets for the budget curve, comma-separated (e.g. 0.04,0.1,0.2,0.6)");
  cmd->add_option("--policies", args->policies,
                  "Policies, comma-separated, each NAME or NAME:KEY=VALUE,... (e.g. h2o:heavy=52,recent=50,local); "
                  "--list-policies shows every name, key and default")
      ->capture_default_str();
  cmd->add_flag("--list-policies", args->list_policies,
                "List the policies with their parameters and defaults, and exit");
  cmd->add_option("--optimum", args->optimum,
                  "none | flow (exact offline optimum and oracle) | certified (a feasible schedule and a certified "
                  "upper bound per budget, stopping at --gap) | oracle (per-step U_i only). Beyond 32768 tokens the "
                  "optimum streams the head's attention instead of storing it, and there is no oracle")
      ->capture_default_str();
  cmd->add_option("--gap", args->gap, "Relative gap (upper - lower) / upper at which --optimum certified stops")
      ->capture_default_str();
  cmd->add_option("--budget-curve", args->budget_curve,
                  "Also compute OPT(k) for every k = 1..K per head in one solve (budget_curve.csv, and the "
                  "retained-vs-budget plot); needs --optimum flow or certified");
  cmd->add_option("--seed", args->seed, "Seed of the generator and of randomized policies")->capture_default_str();
  cmd->add_option("--horizon", args->horizon, "Lookahead window L of the lookahead policy")->capture_default_str();
  cmd->add_option("--threads", args->threads, "Worker threads over heads (0: all cores)")->capture_default_str();
  cmd->add_option("-o,--output", args->output, "Output directory (required)");
  cmd->add_option("--json", args->json, "Also write results.json to this file");
  cmd->add_flag("--no-plots", args->no_plots, "Skip the gnuplot plots");
  cmd->add_flag("--quiet", args->quiet, "No progress on stderr");
  cmd->add_flag("--allow-nonfinite", args->allow_nonfinite,
                "Read a --workload file holding NaN/Inf; the selected layers and KV heads must still be finite");
  cmd->add_option("--backend", args->backend,
                  "reference | portable | cuda (default: the fastest available): runs h2o, local, streamingllm, "
                  "l2norm and tova batched over all heads; other policies, the oracle and the optimum always run "
                  "on the reference; output formats are identical");
  cmd->add_option("--decisions", args->decisions,
                  "Evaluate a recorded eviction schedule (.npy: eviction steps or keep masks, docs/eviction.md) as "
                  "policy recorded:NAME at the main budget, against the same optimum; repeatable");
  cmd->add_flag("--decisions-to-process", args->decisions_to_process,
                "Convert a recorded schedule that evicts before the cache is full or several tokens in one step to "
                "the process form (keeps every token at least as long) instead of rejecting it");
  cmd->add_option("--share", args->share,
                  "layer or model: run adaptive budget rules (--share-rules) with each scorer of --policies on one "
                  "cache per layer or for the whole model, against the uniform, static and shared optima");
  cmd->add_option("--share-rules", args->share_rules,
                  "uniform, adakv[:alpha_safeguard=A], pyramidkv[:window_size=W,beta=B] (model only), "
                  "duo[:head_compression_ratio=R,sink_size=S,recent_size=N,calibration=C] (default: all the scope "
                  "allows)");
  cmd->add_option("--shared-seconds", args->shared_seconds,
                  "With --share, where the shared optimum needs the column generation (the explicit network does not "
                  "fit 8 GB): stop after the round past this many seconds with its certified interval (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--curves", args->curves,
                  "With --share: read the static optimum's curves from this budget_curve.csv instead of computing "
                  "them");
  cmd->add_flag("--schedules", args->schedules,
                "Also write every policy's and the optimum's eviction schedule (schedule_*.npy) and each policy's "
                "per-step overlap with the optimum's cache (overlap.csv and summary columns)");
  cmd->callback([args]() { run_simulate(*args); });
}

}  // namespace subevict::cli
