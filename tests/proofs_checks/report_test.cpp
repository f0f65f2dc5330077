// Tests proofs_checks/report.hpp: results.json parses and holds every field, every measurement
// report.md prints is the formatted value of the same (check, name) in results.json, and the
// report directory is written whole.
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
  const std::regex heading("^### `([^`]+)`: .*");
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
                          "error", "outcome", "key_number", "instances", "hypotheses_held", "violations", "worst_slack",
                          "violation_rate", "measurements", "counterexample", "series", "notes"}) {
    EXPECT_TRUE(c.contains(key)) << key;
  }
  EXPECT_EQ(c["outcome"], "violated");
  EXPECT_EQ(c["measurements"]["unbounded"]["value"], "inf");
  EXPECT_EQ(doc["summary"]["violated"], 1);
  EXPECT_EQ(doc["summary"]["held"], 1);
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

TEST(Report, UnwritableDirectoryThrowsAndLeavesNothing) {
  EXPECT_THROW(write_report("/proc/subevict_no_such/report", sample_runs(), {"w", 1, 1, 0.2}), std::exception);
}

}  // namespace
}  // namespace subevict::proofs_checks
