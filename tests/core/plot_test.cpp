// Tests core/plot.hpp: the data table of hand-made series, the house style of the gnuplot scripts
// (categorical axes never join points, tics named after the categories, the key outside the plot
// area, a title and axis labels), contract violations, and drawing with and without gnuplot.
#include "core/plot.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace subevict::plot {
namespace {

namespace fs = std::filesystem;

/// Two policies per (layer, KV head) group: the shape of every per-head figure.
Figure per_head() {
  Figure f{"per_head", "Policies per group", "(layer, KV head) group", "policy / OPT (ratio)", XAxis::categorical,
           false, {"L0 H0", "L0 H1", "L1 H0"}, "group", {}};
  f.series.push_back({"h2o", {0, 1, 2}, {0.9, 0.95, 0.5}, Mark::points});
  f.series.push_back({"local", {0, 2}, {0.25, 0.75}, Mark::points});
  f.series.push_back({"threshold 0.5", {}, {0.5}, Mark::threshold});
  return f;
}

Figure budget_curve() {
  Figure f{"curve", "Retained mass against the budget", "budget k / n (log scale)", "retained mass (fraction)",
           XAxis::log, false, {}, "budget", {}};
  f.series.push_back({"h2o", {0.1, 0.2, 0.4}, {0.5, 0.75, 1}, Mark::lines});
  f.series.push_back({"OPT (offline optimum)", {0.1, 0.4}, {0.875, 1}, Mark::bound, "OPT"});
  return f;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The lines of `script` that start with `prefix`.
std::vector<std::string> lines_starting(const std::string& script, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(script);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

/// The plot command (continued over several lines) of a script.
std::string plot_command(const std::string& script) {
  const auto start = script.find("\nplot ");
  const auto end = script.find("\nset terminal pngcairo");
  return script.substr(start, end - start);
}

TEST(Plot, DataTableHasOneRowPerXWithNanForMissingPoints) {
  EXPECT_EQ(data_table(per_head()),
            "group h2o local \"threshold 0.5\"\n"
            "\"L0 H0\" 0.9 0.25 0.5\n"
            "\"L0 H1\" 0.95 nan 0.5\n"
            "\"L1 H0\" 0.5 0.75 0.5\n");
  EXPECT_EQ(data_table(budget_curve()), "budget h2o OPT\n0.1 0.5 0.875\n0.2 0.75 nan\n0.4 1 1\n");
  // A series given twice at one x shows its last point there; a non-finite x is no row.
  Figure repeated = budget_curve();
  repeated.series[1].x = {0.1, 0.4, 0.1, std::nan("")};
  repeated.series[1].y = {0.875, 1, 0.9, 0.3};
  EXPECT_EQ(data_table(repeated), "budget h2o OPT\n0.1 0.5 0.9\n0.2 0.75 nan\n0.4 1 1\n");
}

TEST(Plot, CategoricalAxesDrawUnjoinedMarkersAtNamedTics) {
  const std::string gp = gnuplot_script(per_head());
  const std::string plot = plot_command(gp);
  EXPECT_EQ(plot.find("linespoints"), std::string::npos) << plot;
  // Only the threshold is a line; every data series is drawn with points, shifted within its slot.
  EXPECT_EQ(std::regex_search(plot, std::regex("per_head\\.dat' using [^\\n]* with lines")), false) << plot;
  EXPECT_NE(plot.find("using ($0-0.15):2 with points"), std::string::npos) << plot;
  EXPECT_NE(plot.find("using ($0+0.15):3 with points"), std::string::npos) << plot;
  EXPECT_NE(plot.find("0.5 with lines"), std::string::npos) << plot;
  EXPECT_NE(gp.find("set xtics ('L0 H0' 0, 'L0 H1' 1, 'L1 H0' 2)"), std::string::npos) << gp;
  EXPECT_NE(gp.find("set xrange [-0.5:2.5]"), std::string::npos) << gp;
}

TEST(Plot, NumericAxesJoinLinesAndPutLogTicsAtTheData) {
  const std::string gp = gnuplot_script(budget_curve());
  EXPECT_NE(plot_command(gp).find("using 1:2 with linespoints"), std::string::npos) << gp;
  EXPECT_NE(gp.find("set logscale x"), std::string::npos);
  EXPECT_NE(gp.find("set xtics ('0.1' 0.1, '0.2' 0.2, '0.4' 0.4)"), std::string::npos) << gp;
}

TEST(Plot, EveryFigureHasATitleAxisLabelsAKeyOutsideAndBothImages) {
  for (const Figure& f : {per_head(), budget_curve()}) {
    const std::string gp = gnuplot_script(f);
    EXPECT_NE(gp.find("set label 1 \"" + f.title + "\" at screen 0.5"), std::string::npos) << gp;
    EXPECT_NE(gp.find("set xlabel '" + f.x_label + "'"), std::string::npos) << gp;
    EXPECT_NE(gp.find("set ylabel '" + f.y_label + "'"), std::string::npos) << gp;
    const auto keys = lines_starting(gp, "set key");
    ASSERT_EQ(keys.size(), 1u) << gp;
    EXPECT_TRUE(keys[0].find(" outside ") != std::string::npos || keys[0].find(" below ") != std::string::npos)
        << keys[0];
    EXPECT_NE(gp.find("set output '" + f.name + ".svg'"), std::string::npos);
    EXPECT_NE(gp.find("set output '" + f.name + ".png'"), std::string::npos);
    EXPECT_NE(gp.find("size 800,500"), std::string::npos);
  }
  // Long legend entries go below the plot area, short ones to its right.
  Figure wide = budget_curve();
  wide.series[0].label = "random instances: the smallest f(S) / OPT seen";
  EXPECT_NE(gnuplot_script(wide).find("set key below"), std::string::npos);
  EXPECT_NE(gnuplot_script(budget_curve()).find("set key outside right"), std::string::npos);
  // A long title is broken into two lines before a parenthesis.
  Figure long_title = budget_curve();
  long_title.title = "Mean retained attention mass against the cache budget (mean over 4 (layer, KV head) groups)";
  EXPECT_NE(gnuplot_script(long_title).find("cache budget\\n(mean over 4"), std::string::npos);
}

TEST(Plot, BrokenContractsAreRefused) {
  Figure joined = per_head();
  joined.series[0].mark = Mark::lines;  // lines across categories
  EXPECT_THROW((void)gnuplot_script(joined), std::invalid_argument);
  Figure untitled = budget_curve();
  untitled.title.clear();
  EXPECT_THROW((void)gnuplot_script(untitled), std::invalid_argument);
  Figure unlabelled = budget_curve();
  unlabelled.y_label.clear();
  EXPECT_THROW((void)gnuplot_script(unlabelled), std::invalid_argument);
  Figure outside = per_head();
  outside.series[1].x = {0, 3};  // no category 3
  EXPECT_THROW((void)gnuplot_script(outside), std::invalid_argument);
  Figure repeated = budget_curve();
  repeated.series[0].x = {0.1, 0.1, 0.4};
  EXPECT_THROW((void)gnuplot_script(repeated), std::invalid_argument);
  Figure bars = budget_curve();
  bars.series[0].mark = Mark::bars;  // bars on a numeric axis
  EXPECT_THROW((void)gnuplot_script(bars), std::invalid_argument);
}

/// Sets PATH for the lifetime of the object.
class ScopedPath {
 public:
  explicit ScopedPath(const std::string& path) : old_(std::getenv("PATH") ? std::getenv("PATH") : "") {
    ::setenv("PATH", path.c_str(), 1);
  }
  ~ScopedPath() { ::setenv("PATH", old_.c_str(), 1); }

 private:
  std::string old_;
};

TEST(Plot, WritesSvgAndPngWithGnuplotAndSaysSoWithout) {
  const fs::path dir = fs::temp_directory_path() / ("subevict_plot_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  if (gnuplot_available()) {
    EXPECT_EQ(write_figure(dir, per_head(), true), "");
    EXPECT_EQ(read(dir / "per_head.png").substr(0, 8), "\x89PNG\r\n\x1a\n");
    EXPECT_NE(read(dir / "per_head.svg").find("<svg"), std::string::npos);
    EXPECT_EQ(read(dir / "per_head.dat"), data_table(per_head()));
    EXPECT_EQ(read(dir / "per_head.gp"), gnuplot_script(per_head()));
  } else {
    GTEST_LOG_(INFO) << "gnuplot is not installed: only the run without it is tested";
  }
  fs::remove_all(dir);
  {
    const ScopedPath no_gnuplot((fs::temp_directory_path() / "subevict_plot_test_empty_path").string());
    ASSERT_FALSE(gnuplot_available());
    const std::string note = write_figure(dir, budget_curve(), true);
    EXPECT_NE(note.find("gnuplot was not found"), std::string::npos) << note;
    EXPECT_NE(note.find("gnuplot NAME.gp"), std::string::npos) << note;
  }
  EXPECT_TRUE(fs::exists(dir / "curve.dat"));
  EXPECT_TRUE(fs::exists(dir / "curve.gp"));
  EXPECT_FALSE(fs::exists(dir / "curve.png"));
  EXPECT_FALSE(fs::exists(dir / "curve.svg"));
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 2) << "a temporary directory was left behind";
  fs::remove_all(dir);
}

}  // namespace
TEST(Plot, HeatmapTableHasOneRowPerMatrixRowAndTheScriptDrawsItsScale) {
  Heatmap h{"alloc", "Budgets", "KV head", "layer", "budget (slots)", {"0", "1", "2"}, {"0", "1"},
            {{1, 2.5, 3}, {4, std::nan(""), 6}}};
  EXPECT_EQ(heatmap_table(h), "row 0 1 2\n0 1 2.5 3\n1 4 nan 6\n");
  const std::string gp = heatmap_script(h);
  for (const char* needle : {"matrix rowheaders columnheaders with image", "set cblabel 'budget (slots)'",
                             "set output 'alloc.svg'", "set output 'alloc.png'", "set xlabel 'KV head'"}) {
    EXPECT_NE(gp.find(needle), std::string::npos) << needle;
  }
  auto broken = [&](auto change) {
    Heatmap b = h;
    change(b);
    EXPECT_THROW((void)heatmap_script(b), std::invalid_argument);
  };
  broken([](Heatmap& b) { b.value_label.clear(); });
  broken([](Heatmap& b) { b.title.clear(); });
  broken([](Heatmap& b) { b.values[1].pop_back(); });
  broken([](Heatmap& b) { b.values.pop_back(); });
  broken([](Heatmap& b) { b.rows[0] = "layer 0"; });
  broken([](Heatmap& b) { b.columns.clear(), b.values = {{}, {}}; });
}

}  // namespace subevict::plot
