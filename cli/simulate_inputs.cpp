// `subevict simulate`: its options read and checked, and its workload generated or read
// (cli/simulate_inputs.hpp).

#include "cli/simulate_inputs.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "cli/json_output.hpp"
#include "core/generator.hpp"
#include "core/index_set.hpp"
#include "core/input_error.hpp"
#include "core/number_text.hpp"
#include "core/progress.hpp"
#include "core/workload_io.hpp"
#include "kernels/generate.hpp"

namespace subevict::cli {
namespace {

/// Checks the options that need neither the policies nor the workload; returns --optimum's mode.
greedy::OptimumMode check_run_options(const SimulateArgs& args) {
  if (args.output.empty()) throw CLI::RequiredError("-o,--output");
  if (args.preset.empty() == args.workload.empty()) {
    throw InputError("simulate", "input", "exactly one of --preset and --workload");
  }
  require_output_directory(args.json, "--json");
  const greedy::OptimumMode optimum = greedy::parse_optimum_mode(args.optimum, "simulate", "--optimum");
  if (!(std::isfinite(args.gap) && args.gap > 0.0)) {
    throw InputError("simulate", "--gap", "a finite relative gap > 0", significant_digits(args.gap, 10));
  }
  if (args.budget_curve < 0) {
    throw InputError("simulate", "--budget-curve", "an integer K >= 1 (0: no curve)",
                     std::to_string(args.budget_curve));
  }
  if (args.budget_curve > 0 && optimum != greedy::OptimumMode::kFlow && optimum != greedy::OptimumMode::kCertified) {
    throw InputError("simulate", "--budget-curve", "--optimum flow or certified (the curve is the optimum's)",
                     "--optimum " + args.optimum);
  }
  if (args.threads < 0) throw InputError("simulate", "--threads", "an integer >= 0", std::to_string(args.threads));
  if (args.horizon < 1) throw InputError("simulate", "--horizon", "an integer >= 1", std::to_string(args.horizon));
  return optimum;
}

/// --share's rules (the scope's defaults without --share-rules), after refusing what --share does
/// not run; empty without --share, where --share-rules and --curves are refused.
std::vector<greedy::ShareRule> read_share_rules(const SimulateArgs& args) {
  if (args.share.empty()) {
    if (!args.share_rules.empty() || !args.curves.empty()) {
      throw InputError("simulate", args.curves.empty() ? "--share-rules" : "--curves", "--share layer|model with it",
                       "no --share");
    }
    return {};
  }
  if (args.share != "layer" && args.share != "model") {
    throw InputError("simulate", "--share", "layer or model", args.share);
  }
  const auto refuse = [&](bool given, const std::string& option) {
    if (given) throw InputError("simulate", option, "not given with --share (it runs one budget)", option);
  };
  refuse(!args.budgets.empty(), "--budgets");
  refuse(args.budget_curve > 0, "--budget-curve");
  refuse(!args.decisions.empty(), "--decisions");
  refuse(args.schedules, "--schedules");
  refuse(args.heads != "all", "--heads");
  if (!(args.shared_seconds >= 0.0) || !std::isfinite(args.shared_seconds)) {
    throw InputError("simulate", "--shared-seconds", "seconds >= 0 (0: no limit)",
                     significant_digits(args.shared_seconds, 6));
  }
  return greedy::parse_share_rules(
      args.share_rules.empty() ? greedy::default_share_rules(args.share == "model") : args.share_rules,
      "simulate", "--share-rules");
}

/// The --decisions files, read, to evaluate at `main_budget`; throws InputError for two files of one label.
RecordedInputs read_recorded(const SimulateArgs& args, double main_budget) {
  RecordedInputs recorded;
  recorded.budget = main_budget;
  recorded.admission =
      args.decisions_to_process ? greedy::ScheduleAdmission::kToProcess : greedy::ScheduleAdmission::kExact;
  for (const std::string& file : args.decisions) {
    const std::string label = greedy::decisions_label(file);
    if (std::find(recorded.labels.begin(), recorded.labels.end(), label) != recorded.labels.end()) {
      throw InputError("simulate", "--decisions", "files with distinct names (each is the policy recorded:NAME)", file);
    }
    recorded.files.push_back(greedy::read_decisions(file));
    recorded.labels.push_back(label);
  }
  return recorded;
}

/// The --workload file, or the --preset workload generated on `backend`, with the --layers set.
/// No line for a quick one: only the heartbeat (every 30 s) shows that a long read or generation
/// (minutes at 128k tokens) is alive.
SimulateWorkload read_or_generate(const SimulateArgs& args, kernels::Backend backend) {
  SimulateWorkload out;
  Progress loading("simulate: " + std::string(args.workload.empty() ? "generating" : "reading") + " the workload", 1,
                   "workload", args.quiet);
  if (!args.workload.empty()) {
    ReadOptions read_options;
    read_options.allow_nonfinite = args.allow_nonfinite;
    out.w = read_workload(args.workload, read_options);
    out.layers = parse_index_set(args.layers, out.w.shape().layers, {"simulate", "--layers", "layers"});
    return out;
  }
  // The layer set is read against the preset's layers; the layers up to the last one are
  // generated (a generated layer does not depend on how many follow it).
  const WorkloadSpec model = spec_from_preset(args.preset, args.tokens, 0, args.seed);
  out.layers = parse_index_set(args.layers, model.shape.layers, {"simulate", "--layers", "layers"});
  const WorkloadSpec spec = spec_from_preset(args.preset, args.tokens, out.layers.back() + 1, args.seed);
  const std::vector<int> kv = parse_index_set(args.heads, spec.shape.kv_heads, {"simulate", "--heads", "KV heads"});
  // On the reference backend only the selected KV heads are generated (the others stay 0 and
  // are never read); another backend's batched policies run on every head.
  out.w = backend == kernels::Backend::kReference && int(kv.size()) < spec.shape.kv_heads
              ? generate_kv_heads(spec, 0, spec.shape.layers, kv, 0)
              : kernels::generate_workload(spec, backend);
  return out;
}

/// Refuses what needs the stored gains for heads beyond greedy::kStoredGainsTokens, where the
/// optimum streams them (docs/offline_optimum.md "Streamed gains"), naming the flag and why.
void check_stored_gains_limit(const SimulateArgs& args, greedy::OptimumMode optimum, int tokens) {
  if (tokens <= greedy::kStoredGainsTokens) return;
  const std::string limit = std::to_string(greedy::kStoredGainsTokens), got = std::to_string(tokens) + " tokens";
  if (optimum == greedy::OptimumMode::kOracle) {
    throw InputError("simulate", "--optimum",
                     "flow, certified or none beyond " + limit + " tokens (the oracle sorts rows of the stored gains)",
                     "oracle at " + got);
  }
  if (args.budget_curve > 0) {
    throw InputError("simulate", "--budget-curve", "at most " + limit + " tokens (the curve prices the stored gains)",
                     got);
  }
}

/// Checks the request against the loaded workload (load_simulate_workload's contract).
void check_workload(const SimulateArgs& args, const SimulateInputs& inputs, const SimulateWorkload& loaded) {
  const Shape& shape = loaded.w.shape();
  if (args.allow_nonfinite) {
    require_finite(loaded.w, loaded.layers, loaded.kv, args.workload,
                   "in the selected layers and KV heads (--allow-nonfinite accepts the file, but eviction needs "
                   "finite attention: leave the layer or head out with --layers or --heads)");
  }
  for (double b : inputs.budgets) {
    const int k = simulate_budget(b).resolve(shape.tokens, 0);
    for (const auto& spec : inputs.specs) greedy::check_policy_budget(spec, shape.tokens, k, "simulate", "--policies");
  }
  for (const auto& file : inputs.recorded.files) greedy::check_decisions_fit(file, shape, loaded.layers);
  if (args.budget_curve > shape.tokens) {
    throw InputError("simulate", "--budget-curve", "K <= " + std::to_string(shape.tokens) + " (the tokens)",
                     std::to_string(args.budget_curve));
  }
  check_stored_gains_limit(args, inputs.optimum, shape.tokens);
}

}  // namespace

SimulateInputs read_simulate_inputs(const SimulateArgs& args) {
  SimulateInputs inputs;
  inputs.optimum = check_run_options(args);
  inputs.specs = greedy::parse_policy_list(args.policies, "simulate", "--policies", args.horizon);
  inputs.share_rules = read_share_rules(args);
  inputs.backend = args.backend.empty() ? kernels::fastest_backend() : kernels::parse_backend(args.backend);
  kernels::require_available(inputs.backend);
  inputs.main_budget = greedy::parse_budget_value(args.budget, "simulate");
  std::set<double> budget_set{inputs.main_budget};
  for (double b : greedy::parse_budget_list(args.budgets, "simulate")) budget_set.insert(b);
  inputs.budgets.assign(budget_set.begin(), budget_set.end());
  inputs.recorded = read_recorded(args, inputs.main_budget);
  return inputs;
}

SimulateWorkload load_simulate_workload(const SimulateArgs& args, const SimulateInputs& inputs) {
  SimulateWorkload loaded = read_or_generate(args, inputs.backend);
  const Shape& shape = loaded.w.shape();
  if (!args.workload.empty() && args.tokens != 0 && args.tokens != shape.tokens) {
    throw InputError(args.workload, "--tokens", std::to_string(shape.tokens) + " (the file's) or 0",
                     std::to_string(args.tokens));
  }
  loaded.kv = parse_index_set(args.heads, shape.kv_heads, {"simulate", "--heads", "KV heads"});
  check_workload(args, inputs, loaded);
  return loaded;
}

}  // namespace subevict::cli
