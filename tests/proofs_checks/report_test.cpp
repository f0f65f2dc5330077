// Tests proofs_checks/report.hpp and summary.hpp: results.json parses and holds every field, every
// measurement report.md prints is the formatted value of the same (check, name) in results.json,
// claims, measurements and errata are counted apart (a measurement is never a claim that held), and
// the report directory is written whole.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <sstream>

#include "proofs_checks/format.hpp"
#include "proofs_checks/report.hpp"
#include "proofs_checks/static_greedy_checks.hpp"
#include "proofs_checks/summary.hpp"

namespace subevict::proofs_checks {
namespace {

namespace fs = std::filesystem;

std::vector<CheckRun> sample_runs() {
  std::vector<CheckRun> runs;
  for (const auto& check : static_greedy_checks()) {
    if (check->info().id != "greedy.nwf_tightness") continue;
    CheckContext context;
    runs.push_back({check->info(), check->run(context), 0.25, ""});
  }
  CheckRun broken;
  broken.info = {"test.violated", "none", "a claim | with a pipe", "h", "c", {"adversarial"}, "proofs_checks/report.cpp"};
  broken.result.instances = 3;
  broken.result.hypotheses_held = 2;
  broken.result.violations = 1;
  broken.result.worst_slack = -0.123456789;
  broken.result.measurements = {{"min_slack", -0.123456789, "smallest slack"},
                                {"unbounded", std::numeric_limits<double>::infinity(), "an infinite value"},
                                {"tiny", 1.5e-300, "a tiny value"}};
  broken.result.counterexample = Counterexample{"f(S) = 1 < 2", {{"value", 1, "f(S)"}, {"bound", 2, "the bound"}}};
  broken.result.series = {{"test_plot", "line", "x", "y", {1, 2, 3}, {1, 4, 9}}};
  conclude(broken.result);
  broken.result.key_number = "min slack " + format_number(broken.result.worst_slack) + " at |S| = 2";
  runs.push_back(broken);
  return runs;
}

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Every (check id, measurement name, printed value) of report.md's measurement tables.
std::vector<std::tuple<std::string, std::string, std::string>> printed_measurements(const std::string& md) {
  std::vector<std::tuple<std::string, std::string, std::string>> out;
  const std::regex heading("^### `([^`]+)` \\((claim|measurement|erratum)\\): .*");
  const std::regex row("^\\| `([a-z0-9_]+)` \\| ([^ |]+) \\| .*");
  std::istringstream in(md);
  std::string line, current;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, heading)) current = m[1];
    else if (!current.empty() && std::regex_match(line, m, row)) out.emplace_back(current, m[1], m[2]);
  }
  return out;
}

std::string json_text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : format_number(value.get<double>());
}

TEST(Report, EveryPrintedMeasurementIsInResultsJson) {
  const std::vector<CheckRun> runs = sample_runs();
  const RunSettings settings{"test workload", 3, 0.5, 0.2};
  const nlohmann::json doc = nlohmann::json::parse(results_json(runs, settings).dump());
  const std::string md = report_markdown(runs, settings, {}, "");
  const auto printed = printed_measurements(md);
  ASSERT_GE(printed.size(), 8u);
  std::map<std::string, const nlohmann::json*> by_id;
  for (const nlohmann::json& c : doc["checks"]) by_id[c["id"]] = &c;
  for (const auto& [id, name, value] : printed) {
    ASSERT_TRUE(by_id.count(id)) << id;
    const nlohmann::json& c = *by_id[id];
    const nlohmann::json* entry = nullptr;
    if (c["measurements"].contains(name)) entry = &c["measurements"][name];
    else if (!c["counterexample"].is_null() && c["counterexample"]["numbers"].contains(name))
      entry = &c["counterexample"]["numbers"][name];
    ASSERT_NE(entry, nullptr) << id << "." << name;
    EXPECT_EQ(json_text((*entry)["value"]), value) << id << "." << name;
  }
  for (const nlohmann::json& c : doc["checks"]) EXPECT_NE(md.find(c["key_number"].get<std::string>()), std::string::npos);
}

TEST(Report, ResultsJsonHoldsEveryField) {
  const nlohmann::json doc = nlohmann::json::parse(results_json(sample_runs(), {"w", 1, 1, 0.2}).dump());
  const nlohmann::json& c = doc["checks"][1];
  for (const char* key : {"id", "reference", "statement", "hypotheses", "conclusion", "families", "source", "seconds",
                          "kind", "error", "outcome", "key_number", "instances", "hypotheses_held", "violations", "worst_slack",
                          "violation_rate", "measurements", "counterexample", "series", "notes"}) {
    EXPECT_TRUE(c.contains(key)) << key;
  }
  EXPECT_EQ(c["outcome"], "violated");
  EXPECT_EQ(c["kind"], "claim");
  EXPECT_EQ(c["measurements"]["unbounded"]["value"], "inf");
  EXPECT_EQ(doc["summary"]["claims"]["violated"], 1);
  EXPECT_EQ(doc["summary"]["claims"]["held"], 1);
  EXPECT_EQ(c["series"][0]["y"][2], 9.0);
}

TEST(Report, SummarySaysWhatHeldAndWhatDidNot) {
  const std::string md = report_markdown(sample_runs(), {"w", 1, 1, 0.2}, {}, "gnuplot missing");
  const auto held = md.find("### Claims that held"), failed = md.find("### Claims that did not hold");
  ASSERT_NE(held, std::string::npos);
  ASSERT_NE(failed, std::string::npos);
  EXPECT_NE(md.find("`greedy.nwf_tightness`", held), std::string::npos);
  EXPECT_GT(md.find("`test.violated` (", held), failed);
  EXPECT_NE(md.find("gnuplot missing"), std::string::npos);
  EXPECT_NE(md.find("at \\|S\\| = 2 |"), std::string::npos);  // escaped in the table
}

/// A run of kind `kind` with outcome `outcome`, as a check of that kind would report it: a claim or an
/// erratum through conclude() from its counts, a measurement through conclude_measurement().
CheckRun run_of(const std::string& id, Kind kind, Outcome outcome) {
  CheckRun run;
  run.info = {id, "ref", "statement " + id, "h", "c", {"random small"}, "proofs_checks/report.cpp", kind};
  CheckResult& r = run.result;
  r.instances = 4;
  if (kind == Kind::measurement) {
    conclude_measurement(r);
    r.measurements = {{"value", 0.5, "a measured number"}};
  } else {
    r.hypotheses_held = outcome == Outcome::hypotheses_not_met ? 0 : 4;
    r.violations = outcome == Outcome::violated ? 1 : 0;
    conclude(r);
    if (outcome == Outcome::inconclusive) r.outcome = Outcome::inconclusive;
  }
  EXPECT_EQ(r.outcome, outcome) << id;
  r.key_number = "key of " + id;
  return run;
}

/// Four claims (2 held, 1 violated, 1 hypotheses not met), two measurements whose numbers came
/// out fine, three errata (confirmed, corrected form violated, not confirmed).
std::vector<CheckRun> mixed_runs() {
  return {run_of("c.held1", Kind::claim, Outcome::held),
          run_of("m.one", Kind::measurement, Outcome::measured),
          run_of("c.held2", Kind::claim, Outcome::held),
          run_of("c.violated", Kind::claim, Outcome::violated),
          run_of("c.not_met", Kind::claim, Outcome::hypotheses_not_met),
          run_of("m.two", Kind::measurement, Outcome::measured),
          run_of("e.confirmed", Kind::erratum, Outcome::held),
          run_of("e.violated", Kind::erratum, Outcome::violated),
          run_of("e.undecided", Kind::erratum, Outcome::inconclusive)};
}

TEST(Summary, CountsClaimsMeasurementsAndErrataApart) {
  const RunSummary s = summarize(mixed_runs());
  EXPECT_EQ(s.claims_held, 2);  // neither a measurement nor a confirmed erratum counts as a held claim
  EXPECT_EQ(s.claims_violated, 1);
  EXPECT_EQ(s.claims_hypotheses_not_met, 1);
  EXPECT_EQ(s.claims_inconclusive, 0);
  EXPECT_EQ(s.measured, 2);
  EXPECT_EQ(s.errata_confirmed, 1);
  EXPECT_EQ(s.errata_violated, 1);
  EXPECT_EQ(s.errata_not_confirmed, 1);
  EXPECT_EQ(s.claims() + s.measurements() + s.errata(), 9);
  EXPECT_EQ(s.failures(), 2);  // the violated claim and the erratum whose correction failed
  const std::string line = summary_line(s);
  EXPECT_EQ(line.rfind("4 claims: 2 held, 1 violated, 1 hypotheses not met; 2 measurements; 1 erratum confirmed", 0),
            0u)
      << line;
  EXPECT_NE(line.find("1 erratum with the corrected form violated"), std::string::npos) << line;
  EXPECT_NE(line.find("1 erratum not confirmed"), std::string::npos) << line;

  // Measurements alone never fail a run, whatever their numbers.
  EXPECT_EQ(summarize({run_of("m.one", Kind::measurement, Outcome::measured)}).failures(), 0);
  EXPECT_EQ(summarize({run_of("c.v", Kind::claim, Outcome::violated)}).failures(), 1);
  EXPECT_EQ(summarize({run_of("e.u", Kind::erratum, Outcome::inconclusive)}).failures(), 0);
}

TEST(Summary, AMeasurementReportedAsHeldIsRefused) {
  std::vector<CheckRun> runs = mixed_runs();
  runs[1].result.outcome = Outcome::held;  // m.one pretending to be a claim that held
  EXPECT_THROW(summarize(runs), std::logic_error);
  EXPECT_THROW(results_json(runs, {"w", 1, 1, 0.2, {}}), std::logic_error);
}

TEST(Report, JsonAndMarkdownCountEachKindApart) {
  const std::vector<CheckRun> runs = mixed_runs();
  const nlohmann::json doc = nlohmann::json::parse(results_json(runs, {"w", 1, 1, 0.2, {}}).dump());
  const nlohmann::json& sum = doc["summary"];
  EXPECT_EQ(sum["claims"]["held"], 2);
  EXPECT_EQ(sum["claims"]["violated"], 1);
  EXPECT_EQ(sum["claims"]["hypotheses_not_met"], 1);
  EXPECT_EQ(sum["claims"]["inconclusive"], 0);
  EXPECT_EQ(sum["measurements"]["measured"], 2);
  EXPECT_EQ(sum["errata"]["confirmed"], 1);
  EXPECT_EQ(sum["errata"]["corrected_form_violated"], 1);
  EXPECT_EQ(sum["errata"]["not_confirmed"], 1);
  std::map<std::string, std::pair<std::string, std::string>> by_id;
  for (const nlohmann::json& c : doc["checks"]) by_id[c["id"]] = {c["kind"], c["outcome"]};
  EXPECT_EQ(by_id["m.one"], std::make_pair(std::string("measurement"), std::string("measured")));
  EXPECT_EQ(by_id["e.confirmed"], std::make_pair(std::string("erratum"), std::string("confirmed")));
  EXPECT_EQ(by_id["c.held1"], std::make_pair(std::string("claim"), std::string("held")));

  const std::string md = report_markdown(runs, {"w", 1, 1, 0.2, {}}, {}, "");
  EXPECT_NE(md.find("| check | kind | status | key number |"), std::string::npos);
  EXPECT_NE(md.find("| `m.one` | measurement | measured | key of m.one |"), std::string::npos) << md;
  EXPECT_NE(md.find("| `e.confirmed` | erratum | confirmed | key of e.confirmed |"), std::string::npos) << md;
  EXPECT_NE(md.find(summary_line(summarize(runs)) + "."), std::string::npos);
  // The section of claims that held lists exactly the two claims, not the measurements or errata.
  const auto held = md.find("### Claims that held"), next = md.find("### Claims that did not hold");
  ASSERT_NE(held, std::string::npos);
  ASSERT_NE(next, std::string::npos);
  const std::string held_section = md.substr(held, next - held);
  EXPECT_NE(held_section.find("`c.held1`"), std::string::npos);
  EXPECT_NE(held_section.find("`c.held2`"), std::string::npos);
  for (const char* other : {"`m.one`", "`m.two`", "`e.confirmed`"})
    EXPECT_EQ(held_section.find(other), std::string::npos) << other;
  const auto measurements = md.find("### Measurements"), errata = md.find("### Errata confirmed");
  ASSERT_NE(measurements, std::string::npos);
  ASSERT_NE(errata, std::string::npos);
  EXPECT_NE(md.substr(measurements, errata - measurements).find("`m.two`"), std::string::npos);
  EXPECT_NE(md.find("### `m.one` (measurement): measured"), std::string::npos);
  EXPECT_NE(md.find("- Measures: statement m.one"), std::string::npos);
}

TEST(Report, WritesTheWholeDirectoryAndReplacesAnOldOne) {
  const fs::path dir = fs::temp_directory_path() / ("subevict_report_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::vector<CheckRun> runs = sample_runs();
  for (int pass = 0; pass < 2; ++pass) {
    const std::string note = write_report((dir / "report").string(), runs, {"w", 1, 1, 0.2});
    EXPECT_TRUE(fs::exists(dir / "report" / "report.md"));
    EXPECT_TRUE(fs::exists(dir / "report" / "results.json"));
    EXPECT_TRUE(fs::exists(dir / "report" / "test_plot.gp"));
    if (note.empty()) {
      for (const char* f : {"test_plot.svg", "test_plot.png", "greedy_ratio_vs_k.svg", "greedy_ratio_vs_k.png"})
        EXPECT_GT(fs::file_size(dir / "report" / f), 0u) << f;
    }
    int entries = 0;
    for (const auto& e : fs::directory_iterator(dir)) entries += e.path().filename() == "report" ? 0 : 1;
    EXPECT_EQ(entries, 0) << "a temporary directory was left behind";
  }
  const nlohmann::json doc = nlohmann::json::parse(read(dir / "report" / "results.json"));
  EXPECT_EQ(doc["checks"].size(), runs.size());
  fs::remove_all(dir);
}

TEST(Report, PerLayerStructureIsATableAFigureAndJson) {
  RunSettings settings{"w", 1, 1, 0.2, {}};
  for (int l = 0; l < 3; ++l) {
    LayerStatistics layer;
    layer.layer = l;
    layer.heads = 4;
    layer.sink_head_rate = 0.25 * l;
    layer.mean.sparsity = 0.5 + 0.125 * l;
    layer.mean.first_token_mass = 0.0625 * l;
    settings.layers.push_back(layer);
  }
  const std::vector<CheckRun> runs = sample_runs();
  const nlohmann::json doc = results_json(runs, settings);
  ASSERT_EQ(doc["layers"].size(), 3u);
  EXPECT_EQ(doc["layers"][2]["sink_head_rate"], 0.5);
  EXPECT_EQ(doc["layers"][2]["sparsity"], 0.75);
  EXPECT_EQ(doc["layers"][1]["first_token_mass"], 0.0625);
  const std::string md = report_markdown(runs, settings, {"structure_by_layer"}, "");
  EXPECT_NE(md.find("## The workload, layer by layer"), std::string::npos);
  EXPECT_NE(md.find("| 2 | " + format_number(0.75) + " | " + format_number(0.125) + " | " + format_number(0.5) + " |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("![structure_by_layer](structure_by_layer.svg)"), std::string::npos);
  // Without per-layer statistics (a verify run without structure checks) there is no section.
  EXPECT_EQ(report_markdown(runs, {"w", 1, 1, 0.2, {}}, {}, "").find("layer by layer"), std::string::npos);
  EXPECT_TRUE(results_json(runs, {"w", 1, 1, 0.2, {}})["layers"].empty());

  const fs::path dir = fs::temp_directory_path() / ("subevict_report_layers_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string note = write_report(dir.string(), runs, settings);
  EXPECT_TRUE(fs::exists(dir / "structure_by_layer.gp"));
  if (note.empty()) EXPECT_GT(fs::file_size(dir / "structure_by_layer.png"), 0u);
  fs::remove_all(dir);
}

TEST(Report, PerHeadAndPerLayerFiguresAreCategorical) {
  // Two checks' per-head series in one figure: x are flat head indices named by x_names, given in
  // different orders; a threshold; a label shared by both checks.
  std::vector<CheckRun> runs(2);
  runs[0].info.id = "first.check";
  runs[0].result.series = {
      {"per_head", "h2o", "(layer, KV head) group", "policy / OPT (ratio)", {9, 1}, {0.5, 0.75},
       SeriesStyle::categorical, {"L1 H1", "L0 H1"}, "Policies per group"},
      {"per_head", "threshold 0.6", "(layer, KV head) group", "policy / OPT (ratio)", {}, {0.6}, SeriesStyle::threshold}};
  runs[1].info.id = "second.check";
  runs[1].result.series = {{"per_head", "h2o", "g", "r", {1, 4}, {0.25, 1}, SeriesStyle::categorical, {"L0 H1", "L0 H4"}}};
  const plot::Figure f = check_figure(runs, "per_head");
  EXPECT_EQ(f.x_axis, plot::XAxis::categorical);
  EXPECT_EQ(f.title, "Policies per group");
  EXPECT_EQ(f.x_label, "(layer, KV head) group");
  EXPECT_EQ(f.categories, (std::vector<std::string>{"L0 H1", "L0 H4", "L1 H1"}));
  ASSERT_EQ(f.series.size(), 3u);
  EXPECT_EQ(f.series[0].label, "h2o (first.check)");
  EXPECT_EQ(f.series[0].mark, plot::Mark::points);
  EXPECT_EQ(f.series[0].x, (std::vector<double>{0, 2}));
  EXPECT_EQ(f.series[0].y, (std::vector<double>{0.75, 0.5}));
  EXPECT_EQ(f.series[1].mark, plot::Mark::threshold);
  EXPECT_EQ(f.series[1].label, "threshold 0.6");
  EXPECT_EQ(f.series[2].label, "h2o (second.check)");
  EXPECT_EQ(f.series[2].x, (std::vector<double>{0, 1}));
  const std::string gp = plot::gnuplot_script(f);
  EXPECT_EQ(gp.find("linespoints"), std::string::npos) << gp;
  EXPECT_NE(gp.find("set xtics ('L0 H1' 0, 'L0 H4' 1, 'L1 H1' 2)"), std::string::npos) << gp;

  // A line series keeps its numeric axis; without a title the figure says y against x.
  const plot::Figure k = check_figure(sample_runs(), "greedy_ratio_vs_k");
  EXPECT_EQ(k.x_axis, plot::XAxis::linear);
  EXPECT_EQ(k.series.front().mark, plot::Mark::lines);
  EXPECT_NE(plot::gnuplot_script(k).find("with linespoints"), std::string::npos);
  EXPECT_EQ(check_figure(sample_runs(), "test_plot").title, "y against x");
  // Points sharing an x (instances with one parameter value) are drawn as their minimum.
  std::vector<CheckRun> repeated(1);
  repeated[0].result.series = {{"r", "slack", "R", "e-folds", {1, 2, 1}, {5, 3, 4}}};
  const plot::Figure lowest = check_figure(repeated, "r");
  EXPECT_EQ(lowest.series[0].x, (std::vector<double>{1, 2}));
  EXPECT_EQ(lowest.series[0].y, (std::vector<double>{4, 3}));
  EXPECT_EQ(lowest.series[0].label, "slack (min at each x)");

  std::vector<LayerStatistics> layers(2);
  layers[0].layer = 0;
  layers[1].layer = 5;
  layers[1].mean.sparsity = 0.75;
  const plot::Figure by_layer = layer_figure(layers);
  EXPECT_EQ(by_layer.x_axis, plot::XAxis::categorical);
  EXPECT_EQ(by_layer.categories, (std::vector<std::string>{"0", "5"}));
  EXPECT_EQ(by_layer.series.size(), 5u);
  for (const plot::Series& s : by_layer.series) EXPECT_EQ(s.mark, plot::Mark::points) << s.label;
  EXPECT_EQ(by_layer.series[0].y[1], 0.75);
  EXPECT_EQ(plot::gnuplot_script(by_layer).find("linespoints"), std::string::npos);
}

TEST(Report, UnwritableDirectoryThrowsAndLeavesNothing) {
  EXPECT_THROW(write_report("/proc/subevict_no_such/report", sample_runs(), {"w", 1, 1, 0.2}), std::exception);
}

}  // namespace
}  // namespace subevict::proofs_checks
