// `subevict simulate`: the files of one run (cli/simulate_outputs.hpp).

#include "cli/simulate_outputs.hpp"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <sstream>
#include <utility>

#include "cli/csv_field.hpp"
#include "cli/json_output.hpp"
#include "cli/simulate_figures.hpp"
#include "cli/simulate_means.hpp"
#include "core/index_set.hpp"
#include "core/npy.hpp"
#include "core/plot.hpp"
#include "greedy/eviction/budgets/budget_curve_csv.hpp"
#include "greedy/eviction/evaluation/mass_order.hpp"
#include "greedy/eviction/evaluation/recorded_decisions.hpp"

namespace subevict::cli {
namespace {

using greedy::Trace;

/// A number as the CSV files write it.
std::string fmt(double x) { return simulate_number(x); }

/// One cell's masses in the outputs' units (each divided by the group size g); NAN where not computed.
struct CellMasses {
  double g = 1.0, n = 0.0;
  double opt = NAN;  ///< OPT (exact)
  double orc = NAN;  ///< sum U
  /// The certified interval [lower, upper] around OPT (lower = upper = OPT's value up to the
  /// certificate's rounding when exact).
  double lower = NAN, upper = NAN;
};

CellMasses cell_masses(const Cell& c) {
  CellMasses m;
  m.g = c.heads;
  m.n = c.tokens;
  if (c.has_optimum) m.opt = c.optimum.value / m.g;
  if (c.has_oracle) m.orc = c.oracle.total / m.g;
  if (c.has_interval) {
    m.lower = c.optimum.value / m.g;
    m.upper = c.optimum.upper_bound / m.g;
  }
  return m;
}

/// The optimum's side of the order on the cell: OPT (or its interval), sum U and n.
greedy::HeadMasses optimum_masses(const Cell& c, const CellMasses& m) {
  greedy::HeadMasses masses;
  if (c.has_optimum) {
    masses.optimum = m.opt;
  } else if (c.has_interval) {
    masses.optimum = m.lower;
    masses.optimum_upper = m.upper;
  }
  if (c.has_oracle) masses.oracle = m.orc;
  masses.tokens = m.n;
  return masses;
}

/// The overlap of the cell's trace `ti` with the optimum's cache (--schedules), or null.
const greedy::ScheduleOverlap* overlap_of(const Cell& c, std::size_t ti) {
  return ti < c.overlaps.size() ? &c.overlaps[ti] : nullptr;
}

/// The series of the outputs, in order (every policy's label, then every recorded schedule's),
/// and results.json's "policy_parameters" (numbers as numbers).
std::pair<std::vector<std::string>, nlohmann::json> policy_catalogue(const std::vector<greedy::PolicySpec>& specs,
                                                                     const SimulateArgs& args, double main_budget) {
  std::vector<std::string> names;
  nlohmann::json parameters = nlohmann::json::object();
  for (const auto& spec : specs) {
    names.push_back(spec.label());
    nlohmann::json values = nlohmann::json::object();
    for (const auto& [key, text] : greedy::effective_parameters(spec)) {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      values[key] = end == text.c_str() + text.size() && !text.empty() ? nlohmann::json(v) : nlohmann::json(text);
    }
    parameters[spec.label()] = {{"name", spec.name}, {"parameters", values}};
  }
  for (const std::string& file : args.decisions) {
    names.push_back(greedy::decisions_label(file));
    parameters[names.back()] = {{"name", "recorded"},
                                {"file", file},
                                {"admission", args.decisions_to_process ? "to-process" : "exact"},
                                {"budget", main_budget}};
  }
  return {names, parameters};
}

/// summary.csv: a row per (cell, trace); with `schedules`, the overlap columns.
std::string summary_csv(const std::vector<Cell>& cells, bool schedules) {
  std::ostringstream out;
  out << "layer,kv_head,budget,budget_size,policy,oracle_policy,total_retained_mass,"
         "mean_retained_mass,mean_output_error,optimum_total,oracle_total,gap_to_optimum,optimum_lower_bound,"
         "optimum_upper_bound"
      << (schedules ? ",mean_jaccard_to_optimum,mean_policy_only_mass,mean_optimum_only_mass" : "") << "\n";
  for (const Cell& c : cells) {
    const CellMasses m = cell_masses(c);
    for (std::size_t ti = 0; ti < c.traces.size(); ++ti) {
      const Trace& t = c.traces[ti];
      const double total = t.total_retained_mass() / m.g;
      const greedy::ScheduleOverlap* o = overlap_of(c, ti);
      out << c.layer << ',' << c.kv_head << ',' << fmt(c.budget_value) << ',' << c.budget << ','
          << csv_field(t.policy) << ',' << (t.oracle ? 1 : 0) << ',' << fmt(total) << ',' << fmt(total / m.n)
          << ',' << fmt(greedy::mean_output_error(t)) << ',' << (c.has_optimum ? fmt(m.opt) : "") << ','
          << (c.has_oracle ? fmt(m.orc) : "") << ',' << (c.has_optimum ? fmt(m.opt - total) : "") << ','
          << (c.has_interval ? fmt(m.lower) : "") << ',' << (c.has_interval ? fmt(m.upper) : "");
      if (schedules) {
        out << ',' << (o ? fmt(o->mean_jaccard()) : "") << ',' << (o ? fmt(o->mean_only_first_mass() / m.g) : "")
            << ',' << (o ? fmt(o->mean_only_second_mass() / m.g) : "");
      }
      out << '\n';
    }
  }
  return out.str();
}

/// heads.csv: a row per (layer, KV head) (its cell at the first budget) with its wall times.
std::string heads_csv(const std::vector<Cell>& cells, const std::vector<double>& budgets) {
  std::ostringstream out;
  out << "layer,kv_head,tokens,budgets,seconds,optimum_seconds\n";
  for (const Cell& c : cells) {
    if (c.budget_value != budgets.front()) continue;
    out << c.layer << ',' << c.kv_head << ',' << c.tokens << ',' << budgets.size() << ','
        << significant_digits(c.head_seconds, 4) << ',' << significant_digits(c.optimum_seconds, 4) << '\n';
  }
  return out.str();
}

/// steps.csv: at the main budget, every trace's retained mass per step, then OPT's and U_i per step.
std::string steps_csv(const std::vector<Cell>& cells, double main_budget) {
  std::ostringstream out;
  out << "layer,kv_head,budget,step,policy,retained_mass\n";
  for (const Cell& c : cells) {
    if (c.budget_value != main_budget) continue;
    for (const Trace& t : c.traces) {
      for (const auto& s : t.steps) {
        out << c.layer << ',' << c.kv_head << ',' << fmt(c.budget_value) << ',' << s.step << ','
            << csv_field(t.policy) << ',' << fmt(s.retained_mass) << '\n';
      }
    }
    const double g = c.heads;
    for (int i = 0; i < c.tokens; ++i) {
      const std::string prefix = std::to_string(c.layer) + ',' + std::to_string(c.kv_head) + ',' +
                                 fmt(c.budget_value) + ',' + std::to_string(i) + ',';
      if (c.has_optimum) out << prefix << "OPT," << fmt(c.optimum.step_mass[i] / g) << '\n';
      if (c.has_oracle) out << prefix << "U," << fmt(c.oracle.per_step[i] / g) << '\n';
    }
  }
  return out.str();
}

/// overlap.csv: at the main budget, each trace's overlap with the optimum's cache per step.
std::string overlap_csv(const std::vector<Cell>& cells, double main_budget) {
  std::ostringstream out;
  out << "layer,kv_head,budget,step,policy,jaccard_to_optimum,policy_only_mass,optimum_only_mass\n";
  for (const Cell& c : cells) {
    if (c.budget_value != main_budget) continue;
    const double g = c.heads;
    for (std::size_t ti = 0; ti < c.traces.size(); ++ti) {
      const greedy::ScheduleOverlap* o = overlap_of(c, ti);
      for (int i = 0; o && i < c.tokens; ++i) {
        out << c.layer << ',' << c.kv_head << ',' << fmt(c.budget_value) << ',' << i << ','
            << csv_field(c.traces[ti].policy) << ',' << fmt(o->jaccard[i]) << ',' << fmt(o->only_first_mass[i] / g)
            << ',' << fmt(o->only_second_mass[i] / g) << '\n';
      }
    }
  }
  return out.str();
}

/// The cell's entry of results.json's "heads": its optimum, oracle and every trace's metrics.
nlohmann::json head_json(const Cell& c) {
  const CellMasses m = cell_masses(c);
  nlohmann::json head = {{"layer", c.layer}, {"kv_head", c.kv_head}, {"budget", c.budget_value},
                         {"budget_size", c.budget}, {"group_size", c.heads}};
  if (c.has_interval) {
    head["optimum"] = {{"status", greedy::to_string(c.optimum.status)}, {"lower_bound", m.lower},
                       {"upper_bound", m.upper}, {"seconds", c.optimum.seconds}, {"arcs", c.optimum.model_size}};
    if (c.has_optimum) head["optimum"]["total"] = m.opt;
  }
  if (c.has_oracle) head["oracle_total"] = m.orc;
  head["policies"] = nlohmann::json::object();
  for (std::size_t ti = 0; ti < c.traces.size(); ++ti) {
    const Trace& t = c.traces[ti];
    const double total = t.total_retained_mass() / m.g;
    nlohmann::json& entry = head["policies"][t.policy];
    entry = {{"total_retained_mass", total},
             {"mean_retained_mass", total / m.n},
             {"mean_output_error", greedy::mean_output_error(t)},
             {"oracle_policy", t.oracle},
             {"compressed", t.budget == c.budget}};
    // Overlap with the optimum's cache, in the units of the masses (mean over the group's heads).
    if (const greedy::ScheduleOverlap* o = overlap_of(c, ti)) {
      entry["overlap_with_optimum"] = {{"mean_jaccard", o->mean_jaccard()},
                                       {"mean_policy_only_mass", o->mean_only_first_mass() / m.g},
                                       {"mean_optimum_only_mass", o->mean_only_second_mass() / m.g}};
    }
    if (const auto conv = c.converted.find(t.policy); conv != c.converted.end()) {
      entry["converted_tokens"] = conv->second;
    }
  }
  return head;
}

/// Where policy <= OPT <= sum U <= n breaks, cell by cell: each policy that compressed the head to
/// the budget against the optimum (l2norm's skipped layers keep all), then OPT <= sum U <= n once
/// per cell, at the slack of the cell's gains.
std::vector<std::string> order_violations(const std::vector<Cell>& cells) {
  std::vector<std::string> violations;
  for (const Cell& c : cells) {
    const double tol = greedy::mass_order_slack(c.float_gains);
    const CellMasses m = cell_masses(c);
    const greedy::HeadMasses optimum = optimum_masses(c, m);
    const std::string where = "layer " + std::to_string(c.layer) + " KV head " + std::to_string(c.kv_head) +
                              " budget " + fmt(c.budget_value);
    for (const Trace& t : c.traces) {
      if (t.budget != c.budget) continue;
      greedy::HeadMasses masses = optimum;
      masses.policy_name = t.policy;
      masses.policy = t.total_retained_mass() / m.g;
      masses.oracle.reset();
      for (const std::string& v : greedy::mass_order_violations(masses, tol)) violations.push_back(v + " at " + where);
    }
    for (const std::string& v : greedy::mass_order_violations(optimum, tol)) violations.push_back(v + " at " + where);
  }
  return violations;
}

/// --schedules: adds schedule_<series>_budget_<b>.npy to `files` per (series, budget), every
/// trace's and OPT's eviction steps in the decisions-file layout (recorded_decisions.hpp), the
/// series made file-name safe (and unique); returns results.json's "schedule_files".
nlohmann::json add_schedule_files(const std::vector<Cell>& cells, const Shape& shape,
                                  std::map<std::string, std::string>& files) {
  std::map<std::pair<std::string, double>, greedy::ScheduleArray> schedules;
  const auto record = [&](const std::string& series, const Cell& c, const std::vector<int>& last_step) {
    auto it = schedules.find({series, c.budget_value});
    if (it == schedules.end()) {
      it = schedules.emplace(std::pair{series, c.budget_value},
                             greedy::ScheduleArray(shape.layers, shape.kv_heads, shape.tokens)).first;
    }
    it->second.set(c.layer, c.kv_head, last_step);
  };
  for (const Cell& c : cells) {
    for (const Trace& t : c.traces) record(t.policy, c, t.last_step());
    if (c.has_optimum) record("OPT", c, c.optimum.last_step);
  }
  nlohmann::json listed = nlohmann::json::array();
  std::set<std::string> used;
  for (const auto& [key, array] : schedules) {
    std::string safe;
    for (char ch : key.first) safe += std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-' ? ch : '_';
    std::string name = "schedule_" + safe + "_budget_" + fmt(key.second) + ".npy";
    for (int copy = 2; used.count(name); ++copy) {
      name = "schedule_" + safe + "_" + std::to_string(copy) + "_budget_" + fmt(key.second) + ".npy";
    }
    used.insert(name);
    files[name] = npy_file_bytes(name, TensorView<std::int64_t>{array.shape(), array.steps});
    listed.push_back({{"policy", key.first}, {"budget", key.second}, {"file", name}});
  }
  return listed;
}

}  // namespace

Outputs build_outputs(const std::vector<Cell>& cells, const std::vector<greedy::BudgetCurve>& curves,
                      const std::vector<greedy::PolicySpec>& specs, const std::vector<double>& budgets,
                      double main_budget, const Workload& w, const std::vector<int>& layers,
                      const std::vector<int>& kv_heads, const SimulateArgs& args) {
  const auto [names, parameters] = policy_catalogue(specs, args, main_budget);
  Outputs out;
  out.files["summary.csv"] = summary_csv(cells, args.schedules);
  out.files["heads.csv"] = heads_csv(cells, budgets);
  if (!curves.empty()) out.files["budget_curve.csv"] = greedy::budget_curve_csv(curves);
  out.files["steps.csv"] = steps_csv(cells, main_budget);
  nlohmann::json schedule_files = nlohmann::json::array();
  if (args.schedules) {
    if (args.optimum == "flow") out.files["overlap.csv"] = overlap_csv(cells, main_budget);
    schedule_files = add_schedule_files(cells, w.shape(), out.files);
  }
  const CellMeans means = cell_means(cells, args.optimum == "certified");
  nlohmann::json per_head = nlohmann::json::array();
  for (const Cell& c : cells) per_head.push_back(head_json(c));
  const std::vector<std::string> violations = order_violations(cells);
  out.doc = {{"command", "simulate"},
             {"source", args.workload.empty() ? "preset " + args.preset : args.workload},
             {"shape", to_json(w.shape())},
             {"seed", args.seed},
             {"budgets", budgets},
             {"budget_rule", "values in (0, 1) are ratios of the sequence length, values >= 1 absolute sizes"},
             {"main_budget", main_budget},
             {"layers", layers},
             {"layers_text", format_index_set(layers)},
             {"kv_heads", kv_heads},
             {"policies", names},
             {"policy_parameters", parameters},
             {"optimum", args.optimum},
             {"optimum_gap", args.optimum == "certified" ? nlohmann::json(args.gap) : nlohmann::json(nullptr)},
             {"budget_curve", args.budget_curve},
             {"units", "retained attention mass, mean over the query heads of each KV head; totals sum over steps"},
             {"decomposition", "policy <= OPT_irreversible <= sum_i U_i <= n"},
             {"decomposition_holds", violations.empty()},
             {"violations", violations},
             {"aggregate", means_json(means)},
             {"schedule_files", schedule_files},
             {"schedule_format", "int64 (layers, kv_heads, n): for each token the step at which it was evicted, n = "
                                 "never, -1 = head not simulated (docs/eviction.md, recorded decisions)"},
             {"heads", per_head}};
  const Aggregate curve_points = budget_curve_means(curves);
  for (const plot::Figure& figure :
       simulate_figures(cells, names, main_budget, w.shape().tokens, means.mean, curve_points)) {
    for (auto& [name, text] : plot::figure_files(figure)) out.files[name] = std::move(text);
  }
  return out;
}

}  // namespace subevict::cli
