// `verify`: the registry of checks on a workload, with the results as the dict that `subevict
// verify --json` writes (proofs_checks::results_json, parsed by Python's json module).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <set>

#include "bindings.hpp"
#include "core/generator.hpp"
#include "core/index_set.hpp"
#include "core/input_error.hpp"
#include "core/workload_stats.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"
#include "proofs_checks/offline_gap.hpp"
#include "proofs_checks/registry.hpp"
#include "proofs_checks/report.hpp"
#include "proofs_checks/runner.hpp"
#include "proofs_checks/workload_checks.hpp"

namespace subevict::python {

using namespace nb::literals;
namespace pc = proofs_checks;

namespace {

std::string run_verify(const Workload& workload, const std::string& description, std::vector<int> layers,
                       const std::vector<std::string>& check_ids, const std::vector<std::string>& policy_texts,
                       std::uint64_t seed, double effort, double budget_ratio, const std::optional<std::string>& output) {
  if (!(effort > 0) || !(effort <= 100)) {
    throw InputError("verify", "effort", "a number in (0, 100]", std::to_string(effort));
  }
  if (!(budget_ratio > 0) || !(budget_ratio <= 1)) {
    throw InputError("verify", "budget_ratio", "a number in (0, 1]", std::to_string(budget_ratio));
  }
  std::sort(layers.begin(), layers.end());
  layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
  if (layers.empty()) throw InputError("verify", "layers", "at least one layer");
  for (int l : layers) {
    if (l < 0 || l >= workload.shape().layers) {
      throw InputError("verify", "layers", "layers in [0, " + std::to_string(workload.shape().layers) + ")",
                       std::to_string(l));
    }
  }
  std::vector<std::unique_ptr<pc::Check>> all = pc::all_checks();
  std::vector<const pc::Check*> checks;
  std::set<std::string> known;
  for (const auto& c : all) known.insert(c->info().id);
  for (const std::string& id : check_ids) {
    if (!known.count(id)) throw InputError("verify", "checks", "registered check ids (check_ids())", id);
  }
  for (const auto& c : all) {
    if (check_ids.empty() || std::find(check_ids.begin(), check_ids.end(), c->info().id) != check_ids.end()) {
      checks.push_back(c.get());
    }
  }
  std::vector<greedy::PolicySpec> policies;
  std::set<std::string> labels;
  for (const std::string& text : policy_texts) {
    for (greedy::PolicySpec& spec : greedy::parse_policy_list(text, "verify", "policies", 16)) {
      if (!labels.insert(spec.label()).second) {
        throw InputError("verify", "policies", "each policy once", spec.label() + " (listed twice)");
      }
      policies.push_back(std::move(spec));
    }
  }
  const int offline_tokens = std::min(workload.shape().tokens, pc::kMaxOfflineTokens);
  for (const greedy::PolicySpec& spec : policies) {
    greedy::check_policy_budget(spec, offline_tokens,
                                pc::offline_comparison_budget(workload.shape().tokens, budget_ratio), "verify",
                                "policies");
  }
  pc::CheckContext context;
  context.workload = &workload;
  context.seed = seed;
  context.effort = effort;
  context.budget_ratio = budget_ratio;
  context.layers = layers;
  context.policies = policies;
  std::vector<HeadStatistics> head_statistics;
  std::set<std::string> structure;
  for (const auto& c : pc::workload_checks()) structure.insert(c->info().id);
  bool measure = false;
  for (const pc::Check* c : checks) measure = measure || structure.count(c->info().id) > 0;
  if (measure) {
    InspectOptions options;
    options.layers = layers;
    head_statistics = inspect_workload(workload, options);
    context.head_statistics = &head_statistics;
  }
  const std::vector<pc::CheckRun> runs = pc::run_checks(checks, context);
  pc::RunSettings settings{description, seed, effort, budget_ratio, per_layer_statistics(head_statistics)};
  settings.checked_layers = layers;
  for (const greedy::PolicySpec& spec : policies) settings.policies.push_back(spec.label());
  if (output) (void)pc::write_report(*output, runs, settings);
  return pc::results_json(runs, settings).dump();
}

}  // namespace

void bind_verify(nb::module_& m) {
  m.def(
      "_verify",
      [](const Workload* workload, const std::string& preset, int tokens, std::optional<std::vector<int>> layers,
         const std::vector<std::string>& checks, const std::vector<std::string>& policies, std::uint64_t seed,
         double effort, double budget_ratio, std::optional<std::string> output, std::optional<std::string> source) {
        nb::gil_scoped_release release;
        if (workload != nullptr) {
          std::vector<int> chosen = layers.value_or(std::vector<int>{});
          if (!layers) {
            for (int l = 0; l < workload->shape().layers; ++l) chosen.push_back(l);
          }
          std::string description = "imported " + source.value_or("Python workload") + " (" +
                                    to_string(workload->shape()) + ")";
          if (chosen.size() < std::size_t(workload->shape().layers)) {
            description += ", layers " + format_index_set(chosen);
          }
          return run_verify(*workload, description, chosen, checks, policies, seed, effort, budget_ratio, output);
        }
        if (tokens < 2) throw InputError("verify", "tokens", "an integer >= 2", std::to_string(tokens));
        std::vector<int> chosen = layers.value_or(std::vector<int>{0});
        if (chosen.empty()) throw InputError("verify", "layers", "at least one layer");
        const int model_layers = spec_from_preset(preset, tokens, 0, seed).shape.layers;
        for (int l : chosen) {
          if (l < 0 || l >= model_layers) {
            throw InputError("verify", "layers", "layers in [0, " + std::to_string(model_layers) + ")",
                             std::to_string(l));
          }
        }
        const int last = *std::max_element(chosen.begin(), chosen.end());
        const Workload generated = generate_workload(spec_from_preset(preset, tokens, last + 1, seed));
        std::string description = "built-in LLM-like " + preset + ", " + to_string(generated.shape()) + ", seed " +
                                  std::to_string(seed);
        if (chosen.size() < std::size_t(generated.shape().layers)) {
          description += ", layers " + format_index_set(chosen);
        }
        return run_verify(generated, description, chosen, checks, policies, seed, effort, budget_ratio, output);
      },
      "workload"_a.none(), "preset"_a, "tokens"_a, "layers"_a.none(), "checks"_a, "policies"_a, "seed"_a,
      "effort"_a, "budget_ratio"_a, "output"_a.none(), "source"_a.none(),
      "The engine of subevict.verify: results.json as a string.");
  m.def(
      "check_ids",
      []() {
        std::vector<std::string> ids;
        for (const auto& c : pc::all_checks()) ids.push_back(c->info().id);
        return ids;
      },
      "The registered checks' ids (subevict verify --list).");
}

}  // namespace subevict::python
