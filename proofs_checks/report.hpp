#pragma once
/// \file
/// The report of a `verify` run: results.json (every CheckInfo and CheckResult field, measurements
/// by name), report.md (a table with each check's kind and status, one section per check with the
/// same numbers, and a plain summary that counts claims, measurements and errata apart:
/// summary.hpp), and one figure per distinct Series::plot (core/plot.hpp: SVG, PNG, data, script).
///
/// Every number report.md prints is format_number(v) of a value v stored in results.json, so a
/// reader can trace it by (check id, measurement name).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/plot.hpp"
#include "proofs_checks/runner.hpp"

namespace subevict::proofs_checks {

/// What the run was given, recorded at the top of both files.
struct RunSettings {
  std::string workload;  ///< e.g. "built-in LLM-like llama2-7b, 1 layer(s) ..., seed 7" or the file path
  std::uint64_t seed = 0;
  double effort = 1;
  double budget_ratio = 0.2;
  /// The workload's structure per layer (core/workload_stats.hpp), shown as a table and a figure
  /// in report.md and under "layers" in results.json; empty: no such section.
  std::vector<LayerStatistics> layers;
  /// The layers the checks read (CheckContext::layers resolved), recorded as settings.layers and
  /// settings.layers_text (core/index_set.hpp) in results.json and in report.md's header.
  std::vector<int> checked_layers{};
  /// The labels of the policies h2o.greedy_vs_offline_optimum compared (verify --policy); empty: its
  /// default set. Recorded as settings.policies ("default" when empty) in both files.
  std::vector<std::string> policies{};
};

/// A double as JSON: a number when finite, else the string "inf", "-inf" or "nan" (JSON has no
/// infinities).
nlohmann::json json_number(double value);

/// {"settings", "checks": [{id, reference, statement, hypotheses, conclusion, families, source,
/// kind ("claim", "measurement", "erratum"), seconds, error, outcome (status_name: "held",
/// "violated", "hypotheses not met", "inconclusive", "measured", or "confirmed" for an erratum),
/// key_number, instances, hypotheses_held, violations, worst_slack, violation_rate: {lower, upper},
/// measurements: {name: {value, description}}, counterexample: null or {description, numbers:
/// {name: {value, description}}}, series: [...], notes}], "summary": {claims: {held, violated,
/// hypotheses_not_met, inconclusive}, measurements: {measured, inconclusive}, errata: {confirmed,
/// corrected_form_violated, not_confirmed}, errors, line (summary_line)}}. Throws std::logic_error
/// for a run whose outcome its kind does not allow (summarize).
nlohmann::json results_json(const std::vector<CheckRun>& runs, const RunSettings& settings);

/// report.md. `figures` lists the figure stems that were drawn; `plot_note` (when not empty) says
/// why figures are missing (e.g. gnuplot not installed).
std::string report_markdown(const std::vector<CheckRun>& runs, const RunSettings& settings,
                            const std::vector<std::string>& figures, const std::string& plot_note);

/// The distinct Series::plot names, in order of first appearance.
std::vector<std::string> plot_names(const std::vector<CheckRun>& runs);

/// The figure `plot` (core/plot.hpp) of every series with that Series::plot, in run order: the
/// title, axis labels and styles of the series (SeriesStyle), a categorical x axis when any series
/// is categorical; a legend entry is the series' label, followed by the check's id where two
/// series of the figure share a label.
plot::Figure check_figure(const std::vector<CheckRun>& runs, const std::string& plot);

/// The figure "structure_by_layer": the RunSettings::layers statistics (sparsity, mass on token 0,
/// sink-head rate, top-10% share, recent mass) as points per layer on a categorical axis.
plot::Figure layer_figure(const std::vector<LayerStatistics>& layers);

/// Writes report.md, results.json, the plots and their scripts (PLOT.gp) into `directory`
/// (created with its parents if missing). Everything is first written into a fresh temporary
/// directory beside it; then the temporary directory is renamed to `directory` when that does not
/// exist, or its files are moved in one by one with report.md last, so a report.md never describes
/// files that are not there yet. gnuplot missing or failing is not an error: report.md says so.
/// Throws InputError(directory, "output directory", ...) when nothing can be written; a failure
/// leaves `directory` as it was. Returns the note about plots ("" when all figures were drawn).
std::string write_report(const std::string& directory, const std::vector<CheckRun>& runs,
                         const RunSettings& settings);

}  // namespace subevict::proofs_checks
