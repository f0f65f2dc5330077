#pragma once
/// \file
/// The report of a `verify` run: results.json (every CheckInfo and CheckResult field, measurements
/// by name), report.md (a table, one section per check with the same numbers, and a plain summary
/// of which claims held), and one gnuplot figure per distinct Series::plot, as SVG and PNG.
///
/// Every number report.md prints is format_number(v) of a value v stored in results.json, so a
/// reader can trace it by (check id, measurement name).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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
};

/// A double as JSON: a number when finite, else the string "inf", "-inf" or "nan" (JSON has no
/// infinities).
nlohmann::json json_number(double value);

/// {"settings", "checks": [{id, reference, statement, hypotheses, conclusion, families, source,
/// seconds, error, outcome, key_number, instances, hypotheses_held, violations, worst_slack,
/// violation_rate: {lower, upper}, measurements: {name: {value, description}}, counterexample:
/// null or {description, numbers: {name: {value, description}}}, series: [...], notes}],
/// "summary": {held, violated, hypotheses_not_met, inconclusive, errors}}.
nlohmann::json results_json(const std::vector<CheckRun>& runs, const RunSettings& settings);

/// report.md. `figures` lists the figure stems that were drawn; `plot_note` (when not empty) says
/// why figures are missing (e.g. gnuplot not installed).
std::string report_markdown(const std::vector<CheckRun>& runs, const RunSettings& settings,
                            const std::vector<std::string>& figures, const std::string& plot_note);

/// The distinct Series::plot names, in order of first appearance.
std::vector<std::string> plot_names(const std::vector<CheckRun>& runs);

/// A gnuplot script that draws every series of `plot` into PLOT.svg and PLOT.png (data inline).
std::string gnuplot_script(const std::vector<CheckRun>& runs, const std::string& plot);

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
