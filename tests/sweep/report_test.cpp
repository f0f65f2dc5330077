// Tests sweep/report.hpp on hand-made rows whose aggregates are known in closed form.
#include <gtest/gtest.h>

#include <sstream>

#include "sweep/report.hpp"

namespace subevict::sweep {
namespace {

ResultRow make(const std::string& id, const std::string& preset, const std::string& policy, double ratio,
               double mass, std::optional<double> opt) {
  ResultRow r;
  r.id = id;
  r.params = "p" + id;
  r.preset = preset;
  r.tokens = 100;
  r.layers = 1;
  r.policy = policy;
  r.budget_kind = "ratio";
  r.budget_value = ratio;
  r.optimum = opt ? "flow" : "none";
  r.result.groups = 1;
  r.result.budget_size = int(ratio * 100);
  r.result.mean_retained_mass = mass;
  r.result.optimum_mean_retained_mass = opt;
  if (opt) r.result.ratio_to_optimum = mass / *opt;
  return r;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(Report, AggregatesAreMeansOverJobsAndTheCsvKeepsIdOrder) {
  // Two presets, two policies, budgets 0.25 and 0.5 (the second given as a size: 50 of n = 100).
  std::vector<ResultRow> rows = {
      make("01", "a", "h2o", 0.25, 0.5, 0.75), make("02", "b", "h2o", 0.25, 0.25, 0.75),
      make("03", "a", "local", 0.25, 0.125, 0.75), make("04", "b", "local", 0.25, 0.375, std::nullopt),
      make("05", "a", "h2o", 0.5, 1.0, 1.0)};
  rows[4].budget_kind = "size";
  rows[4].budget_value = 50;
  const auto files = build_report(rows);
  for (const char* name : {"sweep.csv", "summary.md", "retained_vs_budget.dat", "gap_to_optimum.dat",
                           "retained_vs_budget.gp", "gap_to_optimum.gp"}) {
    EXPECT_TRUE(files.count(name)) << name;
  }
  const auto csv = lines(files.at("sweep.csv"));
  ASSERT_EQ(csv.size(), 6u);
  for (std::size_t i = 1; i < csv.size(); ++i) EXPECT_EQ(csv[i].substr(0, 3), rows[i - 1].id + ",");
  // Empty cells for absent values: row 04 has neither OPT, sum U, ratio nor gap.
  EXPECT_EQ(csv[4].substr(csv[4].size() - 4), ",,,,");
  const auto curve = lines(files.at("retained_vs_budget.dat"));
  ASSERT_EQ(curve.size(), 3u);
  EXPECT_EQ(curve[0], "budget h2o local OPT");
  // h2o at 0.25: (0.5 + 0.25) / 2; local: (0.125 + 0.375) / 2; OPT: mean of three 0.75.
  EXPECT_EQ(curve[1], "0.25 0.375 0.25 0.75");
  EXPECT_EQ(curve[2], "0.5 1 nan 1");
  const auto gap = lines(files.at("gap_to_optimum.dat"));
  ASSERT_EQ(gap.size(), 3u);
  // preset a: h2o gaps 0.25 and 0 -> 0.125; local 0.625. preset b: h2o 0.5; local has no OPT.
  EXPECT_EQ(gap[1], "a 0.125 0.625");
  EXPECT_EQ(gap[2], "b 0.5 nan");
  // The budget curve joins points over a log budget axis; the gap figure is categorical: one bar per
  // policy in each preset's slot, tics named after the presets, never a line across presets.
  const std::string& curve_gp = files.at("retained_vs_budget.gp");
  EXPECT_NE(curve_gp.find("set logscale x"), std::string::npos);
  EXPECT_NE(curve_gp.find("using 1:2 with linespoints"), std::string::npos) << curve_gp;
  EXPECT_NE(curve_gp.find("set output 'retained_vs_budget.svg'"), std::string::npos);
  const std::string& gap_gp = files.at("gap_to_optimum.gp");
  EXPECT_NE(gap_gp.find("set xtics ('a' 0, 'b' 1)"), std::string::npos) << gap_gp;
  EXPECT_EQ(gap_gp.find("lines"), std::string::npos) << gap_gp;
  EXPECT_NE(gap_gp.find("using ($0-0.2):2:(0.38) with boxes"), std::string::npos) << gap_gp;
  EXPECT_NE(gap_gp.find("title 'local'"), std::string::npos);
  EXPECT_NE(gap_gp.find("set output 'gap_to_optimum.png'"), std::string::npos);
}

TEST(Report, WithoutAnOptimumThereIsNoGapFigure) {
  const auto files = build_report({make("01", "a", "h2o", 0.25, 0.5, std::nullopt)});
  EXPECT_TRUE(files.count("retained_vs_budget.gp"));
  EXPECT_FALSE(files.count("gap_to_optimum.gp"));
  EXPECT_EQ(files.at("summary.md").find("gap_to_optimum.{svg"), std::string::npos);
}

}  // namespace
}  // namespace subevict::sweep
