// `subevict verify`: runs the registry of checks (proofs_checks/registry.hpp) on the built-in
// LLM-like workload or an imported one, prints a table and writes report/ (report.md,
// results.json, plots).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "core/generator.hpp"
#include "core/input_error.hpp"
#include "core/progress.hpp"
#include "core/workload_io.hpp"
#include "core/workload_stats.hpp"
#include "proofs_checks/format.hpp"
#include "proofs_checks/registry.hpp"
#include "proofs_checks/report.hpp"
#include "proofs_checks/runner.hpp"
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
  int tokens = 1024;
  std::uint64_t seed = 7;
  double effort = 1.0;
  double budget_ratio = 0.2;
  std::string preset = "llama2-7b";
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
  std::printf("%-32s %s\n", "id", "reference");
  for (const auto& c : pc::all_checks()) {
    const pc::CheckInfo i = c->info();
    std::printf("%-32s %s\n", i.id.c_str(), i.reference.c_str());
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

/// The workload's statistics per head, measured once for every structure check, with progress.
std::vector<HeadStatistics> measure_structure(const Workload& workload, bool quiet) {
  Progress progress("verify: measuring attention", (long long)workload.shape().layers * workload.shape().q_heads,
                    "heads", quiet);
  InspectOptions options;
  options.progress = [&progress](int, int) { progress.advance(); };
  return inspect_workload(workload, options);
}

void run_verify(VerifyArgs args, const Given& given) {
  if (!args.config.empty()) apply_config(args, given);
  validate(args, given);
  require_output_directory(args.json, "--json");
  const std::vector<std::unique_ptr<pc::Check>> checks = select_checks(args.checks);
  Workload workload;
  std::string description;
  if (!args.workload.empty()) {
    workload = read_workload(args.workload);
    description = "imported " + args.workload + " (" + to_string(workload.shape()) + ")";
  } else {
    workload = generate_workload(spec_from_preset(args.preset, args.tokens, 1, args.seed));
    description = "built-in LLM-like " + args.preset + ", " + to_string(workload.shape()) + ", seed " +
                  std::to_string(args.seed);
  }
  std::cout << "workload: " << description << "\n\n";
  pc::CheckContext context;
  context.workload = &workload;
  context.seed = args.seed;
  context.effort = args.effort;
  context.budget_ratio = args.budget_ratio;
  std::vector<HeadStatistics> head_statistics;
  if (uses_structure_checks(checks)) {
    head_statistics = measure_structure(workload, args.quiet);
    context.head_statistics = &head_statistics;
  }
  std::vector<const pc::Check*> pointers;
  for (const auto& c : checks) pointers.push_back(c.get());
  std::printf("%-32s %-19s %s\n", "check", "status", "key number");
  const std::vector<pc::CheckRun> runs = pc::run_checks(pointers, context, [](const pc::CheckRun& run) {
    std::printf("%-32s %-19s %s\n", run.info.id.c_str(), pc::outcome_name(run.result.outcome),
                run.result.key_number.c_str());
    std::fflush(stdout);
  });
  const pc::RunSettings settings{description, args.seed, args.effort, args.budget_ratio,
                                 per_layer_statistics(head_statistics)};
  const std::string note = pc::write_report(args.output, runs, settings);
  if (!note.empty()) std::cerr << "subevict: warning: " << note << "\n";
  if (!args.json.empty()) write_json(args.json, pc::results_json(runs, settings));
  int violated = 0, errors = 0;
  for (const pc::CheckRun& run : runs) {
    violated += run.result.outcome == pc::Outcome::violated ? 1 : 0;
    errors += run.error.empty() ? 0 : 1;
  }
  std::cout << "\n" << runs.size() << " checks, " << violated << " violated; report written to " << args.output << "\n";
  if (errors > 0) {
    std::cerr << "subevict: error: " << errors << " check(s) stopped with an error (see " << args.output
              << "/report.md)\n";
    throw CLI::RuntimeError(2);
  }
  if (args.fail_on_violation && violated > 0) throw CLI::RuntimeError(1);
}

}  // namespace

void add_verify_command(CLI::App& app) {
  auto args = std::make_shared<VerifyArgs>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "Run every check of the theory (the registry) and write report/ (report.md, results.json, plots)");
  cmd->add_option("-o,--output", args->output, "Report directory")->capture_default_str();
  cmd->add_flag("--list", args->list, "List the registered checks and exit");
  cmd->add_flag("--quiet", args->quiet, "No progress on stderr");
  CLI::Option* check = cmd->add_option("--check", args->checks, "Run only this check (repeatable)");
  cmd->add_option("--config", args->config,
                  "JSON file with keys tokens, seed, effort, budget_ratio, preset, checks (the command line wins)");
  cmd->add_option("--workload", args->workload, "Imported workload (FILE.safetensors from scripts/export_qkv.py, or a q/k/v.npy directory)");
  cmd->add_option("--json", args->json, "Also write results.json to this file");
  cmd->add_flag("--fail-on-violation", args->fail_on_violation, "Exit with status 1 if any check is violated");
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
