// `subevict simulate --share`: the share study of the library (greedy/eviction/budgets/
// share_study.hpp) on the selected layers, written as share.csv and results.json and printed as
// totals (cli/share_run.hpp).

#include "cli/share_run.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/csv_field.hpp"
#include "cli/json_output.hpp"
#include "cli/output_directory.hpp"
#include "core/number_text.hpp"
#include "greedy/eviction/budgets/share_study.hpp"

namespace subevict::cli {
namespace {

std::string fmt(double x) { return significant_digits(x, 10); }

/// A row of the outputs: a unit, a layer within the model, or the sum over the layers.
struct Row {
  std::string name;
  std::vector<int> heads;
  std::optional<double> shared, bound;
  std::vector<std::size_t> units;  ///< the whole units the row covers (none: a layer within the model)
};

/// Each unit, and with the model scope each layer too (its part of the model's numbers); with the
/// layer scope over several layers, their sum.
std::vector<Row> output_rows(const greedy::ShareStudy& study, const std::vector<int>& layers) {
  const auto& heads = study.shares.heads;
  const auto& units = study.shares.units;
  const auto& optima = study.optima;
  std::vector<Row> rows;
  for (std::size_t u = 0; u < units.size(); ++u) {
    rows.push_back({study.model ? "model" : "layer " + std::to_string(heads[std::size_t(units[u].front())].first),
                    units[u], optima.shared[u], optima.shared_bound[u], {u}});
  }
  if (study.model && layers.size() > 1) {
    for (int l : layers) {
      Row r{"layer " + std::to_string(l), {}, std::nullopt, std::nullopt, {}};
      for (std::size_t x = 0; x < heads.size(); ++x) {
        if (heads[x].first == l) r.heads.push_back(int(x));
      }
      rows.push_back(std::move(r));
    }
  }
  if (!study.model && units.size() > 1) {
    Row all{"all layers", {}, 0.0, 0.0, {}};
    for (std::size_t x = 0; x < heads.size(); ++x) all.heads.push_back(int(x));
    for (std::size_t u = 0; u < units.size(); ++u) {
      all.units.push_back(u);
      const auto& s = optima.shared[u];
      const auto& b = optima.shared_bound[u];
      all.shared = all.shared && s ? std::optional<double>(*all.shared + *s) : std::nullopt;
      all.bound = all.bound && b ? std::optional<double>(*all.bound + *b) : std::nullopt;
    }
    rows.push_back(std::move(all));
  }
  return rows;
}

double sum(const std::vector<double>& v, const std::vector<int>& idx) {
  double s = 0.0;
  for (int x : idx) s += v[std::size_t(x)];
  return s;
}

/// A ratio against the shared optimum is taken against its certified upper bound (its value where
/// it is exact, within rounding): it can only be understated.
std::string ratio(double a, std::optional<double> b) { return b && *b > 0 ? fmt(a / *b) : std::string(); }

/// The slots of `row` in `run`: the peak over steps of the cache its units hold; a layer within
/// the model reports its mean occupancy instead (the model's peak is not a layer's).
long long row_slots(const greedy::ShareRuleRun& run, const Row& row) {
  long long slots = 0;
  for (std::size_t u : row.units) slots += run.peak[u];
  if (row.units.empty()) {
    double mean = 0.0;
    for (int x : row.heads) mean += run.mean_slots[std::size_t(x)];
    slots = (long long)std::llround(mean);
  }
  return slots;
}

/// share.csv and results.json.
std::map<std::string, std::string> output_files(const greedy::ShareStudy& study, const std::vector<Row>& rows,
                                                nlohmann::json& doc) {
  const auto& heads = study.shares.heads;
  const auto& optima = study.optima;
  const int k = study.budget;
  std::string csv = "unit,rule,scorer,retained,uniform_opt,static_opt,shared_opt,shared_bound,slots,total,over_uniform,over_static,over_shared\n";
  for (const greedy::ShareRuleRun& run : study.runs) {
    nlohmann::json entry{{"rule", run.rule}, {"scorer", run.scorer}, {"note", run.note}, {"units", nlohmann::json::array()}};
    for (const Row& row : rows) {
      const double mass = sum(run.mass, row.heads), uniform = sum(optima.uniform, row.heads),
                   fixed = sum(optima.fixed, row.heads);
      const long long slots = row_slots(run, row);
      csv += csv_field(row.name) + "," + csv_field(run.rule) + "," + csv_field(run.scorer) + "," + fmt(mass) + "," +
             fmt(uniform) + "," + fmt(fixed) + "," + (row.shared ? fmt(*row.shared) : "") + "," +
             (row.bound ? fmt(*row.bound) : "") + "," + std::to_string(slots) + "," +
             std::to_string((long long)row.heads.size() * k) + "," + ratio(mass, uniform) + "," + ratio(mass, fixed) +
             "," + ratio(mass, row.bound) + "\n";
      entry["units"].push_back({{"unit", row.name}, {"retained", mass}, {"uniform_opt", uniform}, {"static_opt", fixed},
                                {"shared_opt", row.shared ? nlohmann::json(*row.shared) : nlohmann::json(nullptr)},
                                {"shared_bound", row.bound ? nlohmann::json(*row.bound) : nlohmann::json(nullptr)},
                                {"slots", slots}});
    }
    nlohmann::json per_head = nlohmann::json::array();
    for (std::size_t x = 0; x < heads.size(); ++x) {
      per_head.push_back({{"layer", heads[x].first}, {"kv_head", heads[x].second}, {"retained", run.mass[x]},
                          {"mean_slots", run.mean_slots[x]}});
    }
    entry["heads"] = per_head;
    doc["runs"].push_back(entry);
  }
  nlohmann::json optimum_heads = nlohmann::json::array();
  for (std::size_t x = 0; x < heads.size(); ++x) {
    optimum_heads.push_back({{"layer", heads[x].first}, {"kv_head", heads[x].second},
                             {"uniform_opt", optima.uniform[x]}, {"static_budget", optima.allocation[x]},
                             {"static_opt", optima.fixed[x]}});
  }
  for (std::size_t u = 0; u < study.shares.units.size(); ++u) {
    for (std::size_t e = 0; e < optima.shared_slots[u].size(); ++e) {
      optimum_heads[std::size_t(study.shares.units[u][e])]["shared_mean_slots"] = optima.shared_slots[u][e];
    }
  }
  doc["optimum_heads"] = optimum_heads;
  return {{"share.csv", csv}, {"results.json", doc.dump(2) + "\n"}};
}

/// The totals on stdout: the three optima and every run's ratios to them.
void print_totals(const greedy::ShareStudy& study, const std::vector<Row>& rows, const Shape& shape,
                  const std::vector<int>& layers, const ShareRequest& request) {
  const auto& optima = study.optima;
  const long long count = (long long)study.shares.heads.size();
  const int k = study.budget;
  std::cout << "simulate --share " << (study.model ? "model" : "layer") << ": " << to_string(shape) << "; layers "
            << layers.size() << " x " << shape.kv_heads << " KV heads, k = " << k << " per head ("
            << request.budget_text << "), "
            << (study.model ? "one cache of " + std::to_string(count * k)
                            : std::to_string((long long)shape.kv_heads * k) + " slots per layer")
            << "\n";
  const Row& total = rows.size() > study.shares.units.size() && !study.model ? rows.back() : rows.front();
  const double uniform = sum(optima.uniform, total.heads), fixed = sum(optima.fixed, total.heads);
  std::printf("  optima: uniform %.6g, static %.6g (+%.3f%%)%s, shared %s\n", uniform, fixed,
              100.0 * (fixed / uniform - 1.0),
              optima.capped ? (" [k_h <= " + std::to_string(optima.curve_length) + ": a lower bound]").c_str() : "",
              total.shared ? (significant_digits(*total.shared, 7) + " (+" +
                              significant_digits(100.0 * (*total.shared / fixed - 1.0), 3) + "% over static" +
                              (optima.shared_note.empty() ? ")" : "; " + optima.shared_note + ")"))
                                 .c_str()
                           : optima.shared_note.c_str());
  std::printf("  %-34s %-22s %12s %12s %12s\n", "rule", "scorer", "/uniform OPT", "/static OPT", "/shared OPT");
  for (const greedy::ShareRuleRun& run : study.runs) {
    const double mass = sum(run.mass, total.heads);
    std::printf("  %-34s %-22s %12s %12s %12s  %s\n", run.rule.c_str(), run.scorer.c_str(),
                ratio(mass, uniform).c_str(), ratio(mass, fixed).c_str(), ratio(mass, total.bound).c_str(),
                run.note.c_str());
  }
}

}  // namespace

void run_share(const Workload& w, const std::vector<int>& layers, const ShareRequest& request) {
  greedy::ShareStudyOptions options;
  options.model = request.model;
  options.budget = request.budget;
  options.curves = request.curves;
  options.shared_seconds = request.shared_seconds;
  options.threads = request.threads;
  options.quiet = request.quiet;
  options.progress_label = "simulate --share";
  options.seed = request.seed;
  options.source = "simulate";
  options.policies_field = "--policies";
  options.rules_field = "--share-rules";
  options.shared_seconds_field = "--shared-seconds";
  const greedy::ShareStudy study = greedy::share_study(w, layers, request.rules, request.scorers, options);
  const std::vector<Row> rows = output_rows(study, layers);
  nlohmann::json doc;
  doc["scope"] = study.model ? "model" : "layer";
  doc["budget"] = study.budget;
  doc["tokens"] = w.shape().tokens;
  doc["curve_length"] = study.optima.curve_length;
  doc["static_capped"] = study.optima.capped;
  doc["shared_note"] = study.optima.shared_note;
  const std::map<std::string, std::string> files = output_files(study, rows, doc);
  const std::string written = publish_directory(request.output, files, false);
  if (!request.json.empty()) write_json(request.json, doc);
  print_totals(study, rows, w.shape(), layers, request);
  std::cout << "wrote " << written << "\n";
}

}  // namespace subevict::cli
