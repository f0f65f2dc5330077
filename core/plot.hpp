#pragma once
/// \file
/// The one figure writer of every command (verify, simulate, sweep report, regress): a Figure is
/// described as data, written as NAME.dat (the numbers) and NAME.gp (a gnuplot script that reads
/// NAME.dat), and drawn by gnuplot into NAME.svg and NAME.png of 800 × 500 pixels.
///
/// House style, fixed here so that every figure of the project looks alike: a title and both axis
/// labels on every figure; the legend outside the plot area (right of it, or below it when the
/// labels are long), so it never covers data; colour-blind-safe colours with a distinct marker per
/// series; numeric x axes join a series' points by lines in x order (a budget, k, an iteration);
/// categorical x axes (a layer, a head, a policy, a preset) draw unjoined markers or bars, one
/// slot per category with the series side by side in it, and label the tics with the category
/// names.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace subevict::plot {

/// How a figure's x axis reads its x values.
enum class XAxis {
  linear,       ///< numbers on a linear scale
  log,          ///< numbers on a log scale (x > 0); tics at the data's x values when there are ≤ 12
  categorical,  ///< x is the index of a category in Figure::categories; no lines across categories
};

/// How one series is drawn.
enum class Mark {
  lines,      ///< coloured markers joined by lines in x order (numeric x axes only)
  points,     ///< coloured markers, not joined (categorical axes: side by side within a category)
  bars,       ///< filled bars from 0 (categorical axes only: a clustered bar chart)
  bound,      ///< a reference curve (an optimum, a bound): black or grey, dashed, joined on numeric
              ///< axes, a black marker per category on categorical ones
  threshold,  ///< a horizontal dashed line at y[0] across the whole plot (a claim's threshold); x unused
  hidden,     ///< written to NAME.dat only, not drawn (a column that completes the data)
};

/// One legend entry and its points.
struct Series {
  std::string label;          ///< legend entry, drawn verbatim (no markup)
  std::vector<double> x, y;   ///< the points (x[i], y[i]), each x at most once; categorical: x[i] is
                              ///< a category index; non-finite points are not drawn (written as nan)
  Mark mark = Mark::lines;
  std::string column{};       ///< NAME.dat's header for this series (one word); empty: the label
};

/// One figure.
struct Figure {
  std::string name;                     ///< file stem: NAME.dat, NAME.gp, NAME.svg, NAME.png
  std::string title;                    ///< must not be empty
  std::string x_label, y_label;         ///< with units; must not be empty
  XAxis x_axis = XAxis::linear;
  bool log_y = false;                   ///< log scale on y (points with y <= 0 are not drawn)
  std::vector<std::string> categories;  ///< categorical: the tic label of each category index
  std::string x_column = "x";           ///< header of NAME.dat's first column (one word)
  std::vector<Series> series;
};

/// NAME.dat: a whitespace-separated table with a header row (x_column, then each series' column,
/// or its label quoted when it holds a space) and one row per distinct x in ascending order
/// (categorical: per category, in order, named in the first column); a series without a point at
/// that x reads `nan`, a threshold its value on every row. Numbers in their shortest exact form.
[[nodiscard]] std::string data_table(const Figure& figure);

/// NAME.gp: reads NAME.dat from the current directory and writes NAME.svg and NAME.png. Throws
/// std::invalid_argument when the figure breaks a contract above (empty title or label, an x
/// outside the categories or repeated in a series, a mark that does not fit the axis, an x <= 0
/// on a log axis, no finite point to draw).
[[nodiscard]] std::string gnuplot_script(const Figure& figure);

/// {NAME.dat: data_table, NAME.gp: gnuplot_script}.
[[nodiscard]] std::map<std::string, std::string> figure_files(const Figure& figure);

/// A matrix drawn as coloured cells (a heatmap): values[r][c] at column c, row r, coloured on a
/// colour-blind-safe sequential palette with its scale (value_label) beside the plot; row and
/// column tic labels from `rows` and `columns`. Same house style otherwise (title, axis labels).
struct Heatmap {
  std::string name;                       ///< file stem: NAME.dat, NAME.gp, NAME.svg, NAME.png
  std::string title, x_label, y_label;    ///< must not be empty
  std::string value_label;                ///< the colour scale's label; must not be empty
  std::vector<std::string> columns, rows; ///< tic labels: x (columns) and y (rows), one word each
  std::vector<std::vector<double>> values;  ///< [row][column]; non-finite cells are left blank
};

/// NAME.dat of a heatmap: a header row (a corner word, then the column labels) and one row per
/// matrix row (its label, then its values), numbers in their shortest exact form.
[[nodiscard]] std::string heatmap_table(const Heatmap& heatmap);

/// NAME.gp of a heatmap (reads NAME.dat, writes NAME.svg and NAME.png). Throws
/// std::invalid_argument for an empty title, label or value label, no row or column, a label
/// with white space, or a row whose length is not the number of columns.
[[nodiscard]] std::string heatmap_script(const Heatmap& heatmap);

/// {NAME.dat: heatmap_table, NAME.gp: heatmap_script}.
[[nodiscard]] std::map<std::string, std::string> heatmap_files(const Heatmap& heatmap);

/// Whether `gnuplot` is on PATH.
[[nodiscard]] bool gnuplot_available();

/// What drawing some figures gave.
struct Rendering {
  std::vector<std::string> drawn;  ///< names whose NAME.svg and NAME.png now exist, in input order
  std::string note;                ///< "" when every figure was drawn, else why not, in one sentence
};

/// Runs gnuplot on NAME.gp in `dir` for every name (NAME.gp and NAME.dat must be there). Neither
/// a missing gnuplot nor a failing script throws: the note says which figures are missing and
/// that their data and scripts are kept.
[[nodiscard]] Rendering render(const std::filesystem::path& dir, const std::vector<std::string>& names);

/// Writes NAME.dat and NAME.gp into `dir` (created if missing) and, when `draw`, NAME.svg and
/// NAME.png: everything is written and drawn in a temporary directory inside `dir`, then each
/// file is renamed into place, so every file is either its old or its complete new version.
/// Returns render's note ("" when drawn or not asked to draw). Throws InputError(dir, "output
/// directory", ...) when nothing can be written.
std::string write_figure(const std::filesystem::path& dir, const Figure& figure, bool draw);

}  // namespace subevict::plot
