// `subevict verify`: runs the registry of checks (proofs_checks/registry.hpp) on the built-in
// LLM-like workload or an imported one, prints a table and writes report/ (report.md,
// results.json, plots).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "core/generator.hpp"
#include "core/index_set.hpp"
#include "core/input_error.hpp"
#include "core/progress.hpp"
#include "core/workload_io.hpp"
#include "core/workload_stats.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"
#include "proofs_checks/format.hpp"
#include "proofs_checks/offline_gap.hpp"
#include "proofs_checks/registry.hpp"
#include "proofs_checks/report.hpp"
#include "proofs_checks/runner.hpp"
#include "proofs_checks/summary.hpp"
#include "proofs_checks/workload_checks.hpp"

namespace subevict::cli {
namespace {

namespace pc = proofs_checks;

struct VerifyArgs {
  std::string output = "report";
  bool list = false;
  bool quiet = false;
  std::vector<std::string> checks;
  std::string config;
  std::string workload;
  std::string json;
  bool fail_on_violation = false;
  bool allow_nonfinite = false;
  int tokens = 1024;
  std::uint64_t seed = 7;
  double effort = 1.0;
  double budget_ratio = 0.2;
  std::string preset = "llama2-7b";
  std::string layers;  // a layer set (core/index_set.hpp); empty: every layer of a file, layer 0 of a preset
  std::vector<std::string> policies;  // each a policy LIST (greedy/eviction/policies/policy_spec.hpp)
};

/// Which options were given on the command line (they override the config file).
struct Given {
  bool checks = false, tokens = false, seed = false, effort = false, budget_ratio = false, preset = false;
};

template <typename T>
T config_value(const nlohmann::json& value, const std::string& file, const std::string& key, const char* expected) {
  try {
    return value.get<T>();
  } catch (const nlohmann::json::exception&) {
    throw InputError(file, key, expected, value.dump());
  }
}

/// Applies the keys of the JSON config `file` that the command line did not set.
void apply_config(VerifyArgs& args, const Given& given) {
  std::ifstream in(args.config);
  if (!in) throw InputError(args.config, "config file", "a readable JSON file");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(args.config, "config file", "valid JSON", e.what());
  }
  if (!doc.is_object()) throw InputError(args.config, "config file", "a JSON object", doc.type_name());
  const char* keys = "one of tokens, seed, effort, budget_ratio, preset, checks";
  for (const auto& [key, value] : doc.items()) {
    if (key == "tokens") {
      if (!given.tokens) args.tokens = config_value<int>(value, args.config, key, "an integer");
    } else if (key == "seed") {
      if (!given.seed) args.seed = config_value<std::uint64_t>(value, args.config, key, "a non-negative integer");
    } else if (key == "effort") {
      if (!given.effort) args.effort = config_value<double>(value, args.config, key, "a number");
    } else if (key == "budget_ratio") {
      if (!given.budget_ratio) args.budget_ratio = config_value<double>(value, args.config, key, "a number");
    } else if (key == "preset") {
      if (!given.preset) args.preset = config_value<std::string>(value, args.config, key, "a preset name");
    } else if (key == "checks") {
      if (!given.checks) args.checks = config_value<std::vector<std::string>>(value, args.config, key, "an array of check ids");
    } else {
      throw InputError(args.config, "key \"" + key + "\"", keys);
    }
  }
}

void validate(const VerifyArgs& args, const Given& given) {
  if (!(args.effort > 0) || !(args.effort <= 100)) {
    throw InputError("verify", "--effort", "a number in (0, 100]", pc::format_number(args.effort));
  }
  if (!(args.budget_ratio > 0) || !(args.budget_ratio <= 1)) {
    throw InputError("verify", "--budget-ratio", "a number in (0, 1]", pc::format_number(args.budget_ratio));
  }
  if (args.tokens < 2) throw InputError("verify", "--tokens", "an integer >= 2", std::to_string(args.tokens));
  if (!args.workload.empty() && (given.tokens || given.preset)) {
    throw InputError("verify", "--workload", "no --tokens or --preset with an imported workload (its shape is the file's)");
  }
}

/// The selected checks in registry order; an unknown id is an error listing the valid ones.
std::vector<std::unique_ptr<pc::Check>> select_checks(const std::vector<std::string>& ids) {
  std::vector<std::unique_ptr<pc::Check>> all = pc::all_checks();
  if (ids.empty()) return all;
  std::set<std::string> known;
  for (const auto& c : all) known.insert(c->info().id);
  for (const std::string& id : ids) {
    if (known.count(id)) continue;
    std::string valid;
    for (const auto& c : all) valid += (valid.empty() ? "" : ", ") + c->info().id;
    throw InputError("verify", "--check", "a registered check id (" + valid + ")", id);
  }
  std::vector<std::unique_ptr<pc::Check>> chosen;
  for (auto& c : all) {
    if (std::find(ids.begin(), ids.end(), c->info().id) != ids.end()) chosen.push_back(std::move(c));
  }
  return chosen;
}

void print_list() {
  std::printf("%-32s %-12s %s\n", "id", "kind", "reference");
  for (const auto& c : pc::all_checks()) {
    const pc::CheckInfo i = c->info();
    std::printf("%-32s %-12s %s\n", i.id.c_str(), pc::kind_name(i.kind), i.reference.c_str());
  }
}

/// Whether any of `checks` is a structure check of the workload (proofs_checks/workload_checks.hpp).
bool uses_structure_checks(const std::vector<std::unique_ptr<pc::Check>>& checks) {
  std::set<std::string> structure;
  for (const auto& c : pc::workload_checks()) structure.insert(c->info().id);
  for (const auto& c : checks) {
    if (structure.count(c->info().id)) return true;
  }
  return false;
}

/// The layers verify reads in an imported workload: `chosen` (a layer set; empty: all), restricted
/// to layers with global causal attention, the attention H2O's claims are stated for. By default
/// the sliding-window layers are left out (stderr says which); naming one is an InputError.
std::vector<int> global_layers(const Workload& workload, const std::string& chosen) {
  const std::vector<int> layers = parse_index_set(chosen.empty() ? "all" : chosen, workload.shape().layers,
                                                  {"verify", "--layers", "layers"});
  std::vector<int> global, windowed;
  for (int l : layers) (workload.window(l) > 0 ? windowed : global).push_back(l);
  if (windowed.empty()) return layers;
  const std::string what = "layers " + format_index_set(windowed) + " attend over a sliding window of " +
                           std::to_string(workload.window(windowed.front())) + " keys";
  if (!chosen.empty() || global.empty()) {
    throw InputError("verify", "--layers",
                     "layers with global causal attention (the attention H2O's claims are stated for; "
                     "workload inspect and simulate measure the sliding-window layers)",
                     what);
  }
  std::cerr << "verify: " << what << "; the checks read the global layers " << format_index_set(global) << "\n";
  return global;
}

/// The statistics per head of `layers`, measured once for every structure check, with progress.
std::vector<HeadStatistics> measure_structure(const Workload& workload, const std::vector<int>& layers, bool quiet) {
  Progress progress("verify: measuring attention", (long long)layers.size() * workload.shape().q_heads, "heads", quiet);
  InspectOptions options;
  options.layers = layers;
  options.progress = [&progress](int, int) { progress.advance(); };
  return inspect_workload(workload, options);
}

/// The specs of every --policy value, in order; a label given twice (in one value or across
/// values) is an error naming it.
std::vector<greedy::PolicySpec> parse_policies(const std::vector<std::string>& values) {
  std::vector<greedy::PolicySpec> specs;
  std::set<std::string> labels;
  for (const std::string& value : values) {
    for (greedy::PolicySpec& spec : greedy::parse_policy_list(value, "verify", "--policy", 16)) {
      if (!labels.insert(spec.label()).second) {
        throw InputError("verify", "--policy", "each policy once", spec.label() + " (listed twice)");
      }
      specs.push_back(std::move(spec));
    }
  }
  return specs;
}

void run_verify(VerifyArgs args, const Given& given) {
  if (!args.config.empty()) apply_config(args, given);
  validate(args, given);
  require_output_directory(args.json, "--json");
  const std::vector<std::unique_ptr<pc::Check>> checks = select_checks(args.checks);
  const std::vector<greedy::PolicySpec> policies = parse_policies(args.policies);
  Workload workload;
  std::string description;
  std::vector<int> layers;  // the layers the checks read
  if (!args.workload.empty()) {
    ReadOptions read_options;
    read_options.allow_nonfinite = args.allow_nonfinite;
    workload = read_workload(args.workload, read_options);
    layers = global_layers(workload, args.layers);
    // The checks read the chosen layers: they cannot run on non-finite attention even when the file is accepted.
    if (args.allow_nonfinite) {
      std::vector<int> kv_heads(std::size_t(workload.shape().kv_heads));
      for (std::size_t h = 0; h < kv_heads.size(); ++h) kv_heads[h] = int(h);
      require_finite(workload, layers, kv_heads, args.workload,
                     "in the layers checked (--allow-nonfinite accepts the file, but the checks compute on the "
                     "attention of every layer they read: leave the layer out with --layers)");
    }
    description = "imported " + args.workload + " (" + to_string(workload.shape()) + ")";
  } else {
    // Layer 0 by default; a layer set is read against the preset's layers and the layers up to the
    // last one listed are generated (a generated layer does not depend on the layers after it).
    const int model_layers = spec_from_preset(args.preset, args.tokens, 0, args.seed).shape.layers;
    layers = parse_index_set(args.layers.empty() ? "0" : args.layers, model_layers, {"verify", "--layers", "layers"});
    workload = generate_workload(spec_from_preset(args.preset, args.tokens, layers.back() + 1, args.seed));
    description = "built-in LLM-like " + args.preset + ", " + to_string(workload.shape()) + ", seed " +
                  std::to_string(args.seed);
  }
  if (layers.size() < std::size_t(workload.shape().layers)) description += ", layers " + format_index_set(layers);
  const int offline_tokens = std::min(workload.shape().tokens, pc::kMaxOfflineTokens);
  for (const greedy::PolicySpec& spec : policies) {
    greedy::check_policy_budget(spec, offline_tokens,
                                pc::offline_comparison_budget(workload.shape().tokens, args.budget_ratio), "verify",
                                "--policy");
  }
  std::cout << "workload: " << description << "\n\n";
  pc::CheckContext context;
  context.workload = &workload;
  context.seed = args.seed;
  context.effort = args.effort;
  context.budget_ratio = args.budget_ratio;
  context.layers = layers;
  context.policies = policies;
  std::vector<HeadStatistics> head_statistics;
  if (uses_structure_checks(checks)) {
    head_statistics = measure_structure(workload, layers, args.quiet);
    context.head_statistics = &head_statistics;
  }
  std::vector<const pc::Check*> pointers;
  for (const auto& c : checks) pointers.push_back(c.get());
  std::printf("%-32s %-12s %-19s %s\n", "check", "kind", "status", "key number");
  const std::vector<pc::CheckRun> runs = pc::run_checks(pointers, context, [](const pc::CheckRun& run) {
    std::printf("%-32s %-12s %-19s %s\n", run.info.id.c_str(), pc::kind_name(run.info.kind),
                pc::status_name(run.info.kind, run.result.outcome), run.result.key_number.c_str());
    std::fflush(stdout);
  });
  pc::RunSettings settings{description, args.seed, args.effort, args.budget_ratio,
                           per_layer_statistics(head_statistics)};
  settings.checked_layers = layers;
  for (const greedy::PolicySpec& spec : policies) settings.policies.push_back(spec.label());
  const std::string note = pc::write_report(args.output, runs, settings);
  if (!note.empty()) std::cerr << "subevict: warning: " << note << "\n";
  if (!args.json.empty()) write_json(args.json, pc::results_json(runs, settings));
  const pc::RunSummary summary = pc::summarize(runs);
  std::cout << "\n" << pc::summary_line(summary) << "; report written to " << args.output << "\n";
  if (summary.errors > 0) {
    std::cerr << "subevict: error: " << summary.errors << " check(s) stopped with an error (see " << args.output
              << "/report.md)\n";
    throw CLI::RuntimeError(2);
  }
  if (args.fail_on_violation && summary.failures() > 0) throw CLI::RuntimeError(1);
}

}  // namespace

void add_verify_command(CLI::App& app) {
  auto args = std::make_shared<VerifyArgs>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "Run every check of the theory (the registry) and write report/ (report.md, results.json, plots)");
  cmd->add_option("-o,--output", args->output, "Report directory")->capture_default_str();
  cmd->add_flag("--list", args->list, "List the registered checks (id, kind, reference) and exit");
  cmd->add_flag("--quiet", args->quiet, "No progress on stderr");
  CLI::Option* check = cmd->add_option("--check", args->checks, "Run only this check (repeatable)");
  cmd->add_option("--config", args->config,
                  "JSON file with keys tokens, seed, effort, budget_ratio, preset, checks (the command line wins)");
  cmd->add_option("--workload", args->workload, "Imported workload (FILE.safetensors from scripts/export_qkv.py, or a q/k/v.npy directory)");
  cmd->add_option("--json", args->json, "Also write results.json to this file");
  cmd->add_flag("--allow-nonfinite", args->allow_nonfinite,
                "Read a --workload file holding NaN/Inf (verify still refuses one in a layer it checks)");
  cmd->add_option("--layers", args->layers,
                  "Layers the checks read: a list of layers and ranges such as 0,14,20-29, or all; a single number "
                  "N is layer N alone (default: every layer of --workload; layer 0 of the built-in workload, whose "
                  "layers up to the last one listed are generated)");
  cmd->add_option("--policy", args->policies,
                  "A policy h2o.greedy_vs_offline_optimum compares with the optimum, NAME or NAME:KEY=VALUE,... as "
                  "in simulate --policies (repeatable, or a comma list; default h2o, local, streamingllm, tova, "
                  "l2norm compressing every layer, random)");
  cmd->add_flag("--fail-on-violation", args->fail_on_violation, "Exit with status 1 if a claim is violated or an erratum's corrected form fails (never for a measurement)");
  CLI::Option* tokens = cmd->add_option("--tokens", args->tokens, "Tokens of the built-in workload")->capture_default_str();
  CLI::Option* seed = cmd->add_option("--seed", args->seed, "Seed of the workload and of every check")->capture_default_str();
  CLI::Option* effort = cmd->add_option("--effort", args->effort, "Scale of every check's instance count (1 = default)")
                            ->capture_default_str();
  CLI::Option* ratio = cmd->add_option("--budget-ratio", args->budget_ratio, "Cache budget as a fraction of the tokens")
                           ->capture_default_str();
  CLI::Option* preset = cmd->add_option("--preset", args->preset, "Model shape of the built-in workload")->capture_default_str();
  cmd->callback([=]() {
    if (args->list) {
      print_list();
      return;
    }
    const Given given{check->count() > 0, tokens->count() > 0, seed->count() > 0,
                      effort->count() > 0, ratio->count() > 0,  preset->count() > 0};
    run_verify(*args, given);
  });
}

}  // namespace subevict::cli
