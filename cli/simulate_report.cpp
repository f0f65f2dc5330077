// `subevict simulate`: what it prints on stdout (cli/simulate_report.hpp).

#include "cli/simulate_report.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <utility>

#include "core/index_set.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"

namespace subevict::cli {
namespace {

/// The headline table: per series of `doc`'s "aggregate" at `main_budget`, its mean retained mass,
/// its ratio to OPT (or to OPT's interval) and the heads it left uncompressed.
void print_table(const std::vector<Cell>& cells, const nlohmann::json& doc, double main_budget) {
  std::map<std::string, double> at_main;  // series -> mean retained mass at the main budget
  for (const auto& a : doc["aggregate"]) {
    if (a["budget"].get<double>() == main_budget) at_main[a["policy"].get<std::string>()] = a["mean_retained_mass"];
  }
  const bool all_exact = at_main.count("OPT") && !std::any_of(cells.begin(), cells.end(), [](const Cell& c) {
    return c.has_interval && !c.has_optimum;
  });
  for (const auto& a : doc["aggregate"]) {
    if (a["budget"].get<double>() != main_budget) continue;
    const std::string name = a["policy"].get<std::string>();
    const double mass = a["mean_retained_mass"].get<double>();
    const int skipped = a["uncompressed_heads"].get<int>();
    std::string ratio;  // policy / OPT: a value when OPT is exact on every head, else the certified interval
    if (name.rfind("OPT", 0) != 0 && name != "sum_U") {
      if (all_exact) {
        ratio = "  policy/OPT " + significant_digits(mass / at_main["OPT"], 6);
      } else if (at_main.count("OPT_lower")) {
        ratio = "  policy/OPT in [" + significant_digits(mass / at_main["OPT_upper"], 6) + ", " +
                significant_digits(mass / at_main["OPT_lower"], 6) + "]";
      }
    }
    std::printf("  %-16s %.6f%s%s\n", name.c_str(), mass, ratio.c_str(),
                skipped > 0 ? ("  (" + std::to_string(skipped) + " heads not compressed)").c_str() : "");
  }
}

/// Says which recorded schedules were evaluated in converted form (--decisions-to-process).
void print_conversions(const std::vector<Cell>& cells) {
  std::map<std::string, std::pair<int, int>> converted;  // label -> (heads, tokens changed)
  for (const Cell& c : cells) {
    for (const auto& [label, tokens] : c.converted) {
      converted[label].first += 1;
      converted[label].second += tokens;
    }
  }
  for (const auto& [label, count] : converted) {
    std::cout << label << ": not a process schedule on " << count.first << " head(s); evaluated after conversion "
              << "to the process form (" << count.second << " tokens kept longer; --decisions-to-process)\n";
  }
}

}  // namespace

void print_policies() {
  std::cout << "policies (NAME or NAME:KEY=VALUE,...; docs/eviction.md):\n";
  int key_width = 0, value_width = 0;  // the columns fit the longest key and default
  for (const std::string& name : greedy::spec_policy_names()) {
    for (const auto& p : greedy::policy_parameters(name)) {
      key_width = std::max(key_width, int(p.key.size()));
      value_width = std::max(value_width, int(p.default_value.size()));
    }
  }
  for (const std::string& name : greedy::spec_policy_names()) {
    const auto parameters = greedy::policy_parameters(name);
    std::cout << "  " << name << (parameters.empty() ? "  (no parameters)" : "") << "\n";
    for (const auto& p : parameters) {
      std::printf("      %-*s default %-*s %s\n", key_width, p.key.c_str(), value_width, p.default_value.c_str(),
                  p.meaning.c_str());
    }
  }
}

void print_simulate_report(const Shape& shape, const std::vector<int>& layers, const std::vector<int>& kv,
                           const std::vector<double>& budgets, double main_budget, const std::vector<Cell>& cells,
                           const nlohmann::json& doc, const std::string& optimum, const std::string& written) {
  std::cout << "simulate: " << to_string(shape) << "; layers " << format_index_set(layers) << ", KV heads "
            << format_index_set(kv) << ": " << layers.size() * kv.size() << " (layer, KV head) groups, budgets";
  for (double b : budgets) std::cout << ' ' << simulate_number(b);
  std::cout << "\nmean retained mass at budget " << simulate_number(main_budget) << ":\n";
  print_table(cells, doc, main_budget);
  std::cout << "policy <= OPT_irreversible <= sum U_i <= n: "
            << (doc["decomposition_holds"].get<bool>() ? "holds on every head" : "VIOLATED")
            << (optimum == "flow" ? "" : " (checked for the parts computed)") << "\n"
            << "wrote " << written << "\n";
  print_conversions(cells);
}

}  // namespace subevict::cli
