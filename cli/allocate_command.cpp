// `subevict allocate`: the optimal static split of a total cache budget over KV heads, from the
// exact budget curves `simulate --budget-curve K` wrote (greedy/eviction/evaluation/
// budget_allocation.hpp): per head, per layer (every head of a layer the same budget), or into two
// classes (streaming heads and full heads), against the uniform budget.
#include <algorithm>
#include <climits>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/output_directory.hpp"
#include "core/input_error.hpp"
#include "core/number_text.hpp"
#include "core/plot.hpp"
#include "greedy/eviction/budgets/budget_allocation.hpp"
#include "greedy/eviction/budgets/budget_curve_csv.hpp"

namespace subevict::cli {
namespace {

struct AllocateArgs {
  std::string curves, output, by = "head";
  std::string budget_text, low_text;  ///< as typed, so that an error names them
  int budget = 0;   ///< the mean budget per head (total = budget x heads)
  int low = 0;      ///< classes: the streaming heads' budget (0: not given)
  bool no_plots = false;
};

/// `text` (option `option`) as a budget of slots >= 1; throws InputError naming the value
/// otherwise (0, negative, not an integer, beyond the int range).
int parse_slots(const std::string& text, const std::string& option, const std::string& meaning) {
  const std::optional<int> v = whole_number<int>(text);
  if (!v || *v < 1) {
    throw InputError("allocate", option, "an integer in [1, " + std::to_string(INT_MAX) + "] (" + meaning + ")", text);
  }
  return *v;
}

/// The allocation of the chosen form.
greedy::BudgetAllocation allocate(const AllocateArgs& args, const std::vector<std::vector<double>>& curves,
                                  const std::vector<int>& layer_of, long long total) {
  if (args.by == "head") return greedy::allocate_budget(curves, total, "allocate");
  if (args.by == "layer") {
    std::map<int, int> index;  // layer -> its group number, in order of first appearance
    std::vector<int> group;
    for (int layer : layer_of) group.push_back(index.emplace(layer, int(index.size())).first->second);
    return greedy::allocate_layer_budgets(curves, group, total, "allocate");
  }
  return greedy::allocate_two_classes(curves, args.low, total, "allocate");
}

/// The heatmap of the budgets: layer (rows) x KV head (columns).
plot::Heatmap budget_heatmap(const std::vector<greedy::ReadBudgetCurve>& read, const std::vector<int>& budgets,
                             const std::string& by, int mean) {
  std::vector<int> layers, heads;
  for (const auto& c : read) {
    if (std::find(layers.begin(), layers.end(), c.layer) == layers.end()) layers.push_back(c.layer);
    if (std::find(heads.begin(), heads.end(), c.kv_head) == heads.end()) heads.push_back(c.kv_head);
  }
  std::sort(layers.begin(), layers.end());
  std::sort(heads.begin(), heads.end());
  plot::Heatmap h;
  h.name = "allocation";
  h.title = "Optimal static budgets (by " + by + ", mean " + std::to_string(mean) + " per KV head)";
  h.x_label = "KV head";
  h.y_label = "layer";
  h.value_label = "budget (slots)";
  for (int kv : heads) h.columns.push_back(std::to_string(kv));
  for (int layer : layers) h.rows.push_back(std::to_string(layer));
  h.values.assign(layers.size(), std::vector<double>(heads.size(), NAN));
  for (std::size_t i = 0; i < read.size(); ++i) {
    const auto r = std::find(layers.begin(), layers.end(), read[i].layer) - layers.begin();
    const auto c = std::find(heads.begin(), heads.end(), read[i].kv_head) - heads.begin();
    h.values[std::size_t(r)][std::size_t(c)] = budgets[i];
  }
  return h;
}

void run(const AllocateArgs& args) {
  const std::vector<greedy::ReadBudgetCurve> read = greedy::read_budget_curve_csv(args.curves);
  std::vector<std::vector<double>> curves;
  std::vector<int> layer_of;
  for (const auto& c : read) {
    if (!c.exact) {
      throw InputError(args.curves, "curve of layer " + std::to_string(c.layer) + " KV head " + std::to_string(c.kv_head),
                       "exact points (status optimal: simulate --budget-curve K --optimum flow)",
                       "certified intervals");
    }
    curves.push_back(c.lower);
    layer_of.push_back(c.layer);
  }
  const long long heads = (long long)curves.size();
  const long long total = (long long)args.budget * heads;
  const greedy::BudgetAllocation best = allocate(args, curves, layer_of, total);
  // The uniform budget: every head args.budget (when every curve reaches it).
  double uniform = 0;
  bool uniform_defined = true;
  for (const auto& c : curves) {
    uniform_defined = uniform_defined && args.budget <= int(c.size());
    if (uniform_defined) uniform += c[std::size_t(args.budget) - 1];
  }

  std::ostringstream csv;
  csv << "layer,kv_head,budget,optimum,uniform_budget,uniform_optimum\n";
  std::map<int, long long> per_layer;  // layer -> its heads' slots
  for (std::size_t h = 0; h < read.size(); ++h) {
    const int k = best.budgets[h];
    const double value = curves[h][std::size_t(k) - 1];
    csv << read[h].layer << ',' << read[h].kv_head << ',' << k << ',' << significant_digits(value, 17) << ','
        << args.budget << ','
        << (args.budget <= int(curves[h].size()) ? significant_digits(curves[h][std::size_t(args.budget) - 1], 17) : "")
        << '\n';
    per_layer[read[h].layer] += k;
  }
  long long used = 0;
  for (int k : best.budgets) used += k;
  nlohmann::json json = {{"curves", args.curves}, {"by", args.by}, {"heads", heads}, {"mean_budget", args.budget},
                         {"total", total}, {"used", used}, {"value", best.value}};
  if (args.by == "classes") json["low"] = args.low;
  if (uniform_defined) json["uniform_value"] = uniform;

  std::cout << "allocate: " << heads << " KV heads, " << total << " slots (mean " << args.budget << " per head), by "
            << args.by << (args.by == "classes" ? " (streaming heads " + std::to_string(args.low) + ")" : "") << "\n";
  if (uniform_defined) {
    std::cout << "  uniform budget " << args.budget << ": sum OPT = " << significant_digits(uniform, 8) << "\n";
  }
  std::cout << "  optimal static allocation: sum OPT = " << significant_digits(best.value, 8);
  if (uniform_defined && uniform > 0) {
    std::cout << " (" << (best.value >= uniform ? "+" : "") << significant_digits(100.0 * (best.value / uniform - 1), 3)
              << "% over uniform)";
  }
  std::cout << "\n";
  if (used < total) std::cout << "  " << total - used << " slots unused (two classes fill whole full heads only)\n";
  std::cout << "  per layer: slots (mean per KV head)\n";
  for (const auto& [layer, slots] : per_layer) {
    const long long in_layer = std::count(layer_of.begin(), layer_of.end(), layer);
    std::cout << "    layer " << layer << ": " << slots << " ("
              << significant_digits(double(slots) / double(in_layer), 4) << ")\n";
  }
  std::map<std::string, std::string> files = {{"allocation.csv", csv.str()}, {"allocation.json", json.dump(1) + "\n"}};
  for (auto& [name, text] : plot::heatmap_files(budget_heatmap(read, best.budgets, args.by, args.budget))) {
    files[name] = text;
  }
  std::cout << "wrote " << publish_directory(args.output, files, !args.no_plots) << "\n";
}

}  // namespace

void add_allocate_command(CLI::App& app) {
  auto args = std::make_shared<AllocateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "allocate",
      "The optimal static split of a total cache budget over KV heads from exact budget curves "
      "(simulate --budget-curve K): per head, per layer or into two classes, against the uniform budget");
  cmd->add_option("curves", args->curves, "budget_curve.csv written by simulate --budget-curve K")->required();
  cmd->add_option("--budget", args->budget_text, "Mean budget per KV head: the total is this times the heads")
      ->type_name("INT")
      ->required();
  cmd->add_option("--by", args->by,
                  "head: each head its own budget; layer: every head of a layer the same (a layer schedule); "
                  "classes: each head --low slots or the curves' largest budget (streaming and full heads)")
      ->check(CLI::IsMember({"head", "layer", "classes"}))
      ->capture_default_str();
  cmd->add_option("--low", args->low_text, "With --by classes: the streaming heads' budget")->type_name("INT");
  cmd->add_option("-o,--output", args->output, "Output directory (allocation.csv, allocation.json, heatmap)")
      ->required();
  cmd->add_flag("--no-plots", args->no_plots, "Write the heatmap's data and script but do not draw it");
  cmd->callback([args]() {
    args->budget = parse_slots(args->budget_text, "--budget", "the mean budget per KV head");
    if ((args->by == "classes") != !args->low_text.empty()) {
      throw InputError("allocate", "--low", "a budget >= 1 with --by classes, and only then",
                       args->by == "classes" ? "none" : args->low_text + " with --by " + args->by);
    }
    if (!args->low_text.empty()) args->low = parse_slots(args->low_text, "--low", "the streaming heads' budget");
    run(*args);
  });
}

}  // namespace subevict::cli
