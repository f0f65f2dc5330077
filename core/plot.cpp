#include "core/plot.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <span>
#include <sstream>
#include <stdexcept>

#include "core/atomic_file.hpp"
#include "core/input_error.hpp"

namespace subevict::plot {
namespace {

namespace fs = std::filesystem;

/// Colour-blind-safe colours (Okabe–Ito, then two of Tol's muted scheme) and filled/open markers,
/// assigned in series order.
constexpr const char* kColours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                    "#E69F00", "#56B4E9", "#882255", "#999933"};
constexpr int kMarkers[] = {7, 5, 9, 13, 11, 6, 4, 8};
constexpr int kStyles = 8;
/// Wider label than this (characters) or more entries than kRightKeyEntries: the key goes below.
constexpr std::size_t kRightKeyWidth = 26;
constexpr std::size_t kRightKeyEntries = 12;
/// Categorical axes: tic labels are rotated beyond this many characters in all, and only every
/// k-th category is labelled beyond kMaxCategoryTics categories.
constexpr std::size_t kFlatTicChars = 64;
constexpr std::size_t kMaxCategoryTics = 40;
/// Share of a category's slot that its side-by-side markers (or bars) span.
constexpr double kPointSpread = 0.6, kBarSpread = 0.8;
/// Titles longer than this (characters) are broken into two lines.
constexpr std::size_t kTitleLine = 72;
/// A line series with more points than this shows a marker on every k-th point only, so that about
/// this many markers identify it.
constexpr std::size_t kMarkersPerLine = 14;

std::string number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buffer[32];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, v).ptr;
  return std::string(buffer, end);
}

/// A gnuplot single-quoted string ('' escapes a quote).
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

/// A gnuplot double-quoted string, where \n breaks the line.
std::string double_quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out + "\"";
}

/// `title` in two lines when longer than kTitleLine: broken before its first parenthesis that
/// leaves a first line of kTitleLine / 3 to kTitleLine characters, else at the last space that
/// keeps the first line within kTitleLine.
std::string wrapped(const std::string& title) {
  if (title.size() <= kTitleLine) return title;
  std::size_t cut = title.find(" (", kTitleLine / 3);
  if (cut == std::string::npos || cut > kTitleLine) cut = title.rfind(' ', kTitleLine);
  if (cut == std::string::npos) return title;
  return title.substr(0, cut) + "\n" + title.substr(cut + 1);
}

/// A data-file word: double-quoted when it holds white space or is empty.
std::string word(const std::string& text) {
  std::string out;
  bool space = text.empty();
  for (char c : text) {
    space = space || std::isspace(static_cast<unsigned char>(c));
    out += c == '"' ? '\'' : c;
  }
  return space ? "\"" + out + "\"" : out;
}

/// A shell single-quoted string.
std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool finite_point(const Series& s, std::size_t i) {
  return i < s.y.size() && std::isfinite(s.x[i]) && std::isfinite(s.y[i]);
}

void require(bool ok, const Figure& f, const std::string& what) {
  if (!ok) throw std::invalid_argument("figure " + f.name + ": " + what);
}

void validate(const Figure& f) {
  require(!f.name.empty(), f, "empty name");
  require(!f.title.empty() && !f.x_label.empty() && !f.y_label.empty(), f, "a title and both axis labels are required");
  require(f.x_column.find_first_of(" \t\n") == std::string::npos && !f.x_column.empty(), f, "x_column must be one word");
  const bool categorical = f.x_axis == XAxis::categorical;
  require(!categorical || !f.categories.empty(), f, "a categorical axis needs categories");
  bool drawable = false;
  for (const Series& s : f.series) {
    require(!s.label.empty(), f, "a series without a label");
    require(s.column.find_first_of(" \t\n") == std::string::npos, f, "column " + s.column + " is not one word");
    if (s.mark == Mark::threshold) {
      require(!s.y.empty() && std::isfinite(s.y[0]), f, "threshold " + s.label + " needs a finite y[0]");
      continue;
    }
    require(s.x.size() == s.y.size(), f, "series " + s.label + " has " + std::to_string(s.x.size()) + " x and " +
                                             std::to_string(s.y.size()) + " y");
    require(categorical ? s.mark != Mark::lines : s.mark != Mark::bars, f,
            "series " + s.label + (categorical ? ": lines across categories" : ": bars on a numeric axis"));
    std::set<double> seen;
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      require(seen.insert(s.x[i]).second, f, "series " + s.label + " repeats x = " + number(s.x[i]));
      if (categorical) {
        require(s.x[i] >= 0 && s.x[i] < double(f.categories.size()) && s.x[i] == std::floor(s.x[i]), f,
                "series " + s.label + ": x = " + number(s.x[i]) + " is not a category index");
      }
      if (!finite_point(s, i) || s.mark == Mark::hidden) continue;
      drawable = true;
      require(f.x_axis != XAxis::log || s.x[i] > 0, f, "x <= 0 on a log axis in " + s.label);
    }
  }
  require(drawable, f, "no finite point to draw");
}

/// The rows' x values: the category indices, or the distinct finite x of the series, ascending.
std::vector<double> row_xs(const Figure& f) {
  std::set<double> xs;
  if (f.x_axis == XAxis::categorical) {
    for (std::size_t c = 0; c < f.categories.size(); ++c) xs.insert(double(c));
  } else {
    for (const Series& s : f.series) {
      if (s.mark == Mark::threshold || s.mark == Mark::hidden) continue;
      for (double x : s.x)
        if (std::isfinite(x)) xs.insert(x);
    }
  }
  return {xs.begin(), xs.end()};
}

/// Explicit x tics: the data's x on a log axis (when few), integer steps for integer x.
void numeric_x_axis(std::ostringstream& gp, const Figure& f, const std::vector<double>& xs) {
  if (xs.empty()) return;
  const double lo = xs.front(), hi = xs.back();
  if (f.x_axis == XAxis::log) {
    gp << "set logscale x\n";
    if (xs.size() <= 12) {
      gp << "set xtics (";
      for (std::size_t i = 0; i < xs.size(); ++i) gp << (i ? ", " : "") << quoted(number(xs[i])) << ' ' << number(xs[i]);
      gp << ")\nset mxtics default\n";
    }
    gp << "set xrange [" << number(lo / 1.25) << ':' << number(hi * 1.25) << "]\n";
    return;
  }
  const bool integers = std::all_of(xs.begin(), xs.end(), [](double x) { return x == std::floor(x); });
  gp << "set autoscale xfix\nset offsets graph 0.02, graph 0.02, 0, 0\n";  // the data's range, not the next tic
  if (lo == hi) {
    gp << "set xrange [" << number(lo - 1) << ':' << number(hi + 1) << "]\n";
  } else if (integers) {
    double step = 1;
    for (double m : {2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0}) {
      if ((hi - lo) / step <= 12) break;
      step = m;
    }
    if ((hi - lo) / step <= 12) gp << "set xtics " << number(step) << "\nset format x '%.0f'\n";
  }
}

void categorical_x_axis(std::ostringstream& gp, const Figure& f) {
  const std::size_t n = f.categories.size();
  std::size_t chars = 0;
  for (const std::string& c : f.categories) chars += c.size() + 2;
  const std::size_t every = (n + kMaxCategoryTics - 1) / kMaxCategoryTics;
  gp << "set xrange [-0.5:" << number(double(n) - 0.5) << "]\nset xtics (";
  bool first = true;
  for (std::size_t c = 0; c < n; c += every) {
    gp << (first ? "" : ", ") << quoted(f.categories[c]) << ' ' << c;
    first = false;
  }
  gp << ") scale 0" << (chars / every > kFlatTicChars ? " rotate by 40 right" : "") << '\n';
  // Light separators between the categories instead of grid lines through them.
  gp << "set x2range [-0.5:" << number(double(n) - 0.5) << "]\nset x2tics 0.5, 1 format '' scale 0\n"
     << "set grid noxtics x2tics\n";
}

std::string line_style(std::size_t k) {
  std::ostringstream s;
  s << "lc rgb '" << kColours[k % kStyles] << "' pt " << kMarkers[k % kStyles] << " ps 1.3 lw 2"
    << (k >= kStyles ? " dt 4" : "");
  return s.str();
}

std::string bound_style(std::size_t k) {
  return std::string("lc rgb '") + (k == 0 ? "#000000" : "#707070") + "' dt " + std::to_string(2 + int(k % 3)) +
         " lw 2 pt 6 ps 1.2";
}

}  // namespace

std::string data_table(const Figure& figure) {
  const std::vector<double> xs = row_xs(figure);
  // Per series its y at each finite x, the last point at an x winning: one lookup per row and
  // series (a scan of the series per row was quadratic: 15 s for 131072 steps).
  std::vector<std::map<double, double>> y_at(figure.series.size());
  for (std::size_t k = 0; k < figure.series.size(); ++k) {
    const Series& s = figure.series[k];
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
      if (std::isfinite(s.x[i])) y_at[k][s.x[i]] = s.y[i];
  }
  std::ostringstream out;
  out << figure.x_column;
  for (const Series& s : figure.series) out << ' ' << word(s.column.empty() ? s.label : s.column);
  out << '\n';
  for (double x : xs) {
    out << (figure.x_axis == XAxis::categorical ? word(figure.categories[std::size_t(x)]) : number(x));
    for (std::size_t k = 0; k < figure.series.size(); ++k) {
      const Series& s = figure.series[k];
      double y = std::nan("");
      if (s.mark == Mark::threshold) {
        y = s.y.empty() ? y : s.y[0];
      } else if (const auto at = y_at[k].find(x); at != y_at[k].end()) {
        y = at->second;
      }
      out << ' ' << (std::isfinite(y) ? number(y) : "nan");
    }
    out << '\n';
  }
  return out.str();
}

namespace {

/// The start of every script: what it reads and writes, the title centred on the canvas (not over
/// the plot area, which a key or colour box on the right narrows) and both axis labels.
std::string script_header(const std::string& name, const std::string& full_title, const std::string& x_label,
                          const std::string& y_label) {
  const std::string title = wrapped(full_title);
  std::ostringstream gp;
  gp << "# " << full_title << "\n# Reads " << name << ".dat; writes " << name << ".svg and " << name
     << ".png. Redraw with: gnuplot " << name << ".gp\n"
     << "set encoding utf8\nset datafile missing 'nan'\n"
     << "set tmargin " << (title.find('\n') == std::string::npos ? 3 : 4.5) << "\nset label 1 " << double_quoted(title)
     << " at screen 0.5, screen 0.955 center noenhanced font ',13'\n"
     << "set xlabel " << quoted(x_label) << " noenhanced\nset ylabel " << quoted(y_label) << " noenhanced\n";
  return gp.str();
}

/// The end of every script: `plot` drawn into NAME.svg, then NAME.png, at 800 x 500.
std::string script_outputs(const std::string& name, const std::string& plot) {
  return "set terminal svg size 800,500 dynamic noenhanced font 'DejaVu Sans,12' background rgb 'white'\n"
         "set output " + quoted(name + ".svg") + "\n" + plot + "\n" +
         "set terminal pngcairo size 800,500 noenhanced font 'DejaVu Sans,11' background rgb 'white'\n"
         "set output " + quoted(name + ".png") + "\nreplot\nunset output\n";
}

}  // namespace

std::string gnuplot_script(const Figure& figure) {
  validate(figure);
  const Figure& f = figure;
  const bool categorical = f.x_axis == XAxis::categorical;
  const std::string data = quoted(f.name + ".dat");
  std::ostringstream gp;
  gp << script_header(f.name, f.title, f.x_label, f.y_label) << "set datafile columnheaders\n"
     << "set border 3\nset tics nomirror\nset grid lc rgb '#c8c8c8' lw 1 dt 3\n";
  std::size_t widest = 0, entries = 0;
  bool threshold = false;
  for (const Series& s : f.series) {
    bool drawn = s.mark == Mark::threshold;
    for (std::size_t k = 0; k < s.x.size(); ++k) drawn = drawn || (s.mark != Mark::hidden && finite_point(s, k));
    if (!drawn) continue;
    widest = std::max(widest, s.label.size());
    ++entries;
    threshold = threshold || s.mark == Mark::threshold;
  }
  if (entries == 1 && !threshold) {
    gp << "unset key\n";  // the y label names the one series
  } else if (widest > kRightKeyWidth || entries > kRightKeyEntries) {
    gp << "set key below center horizontal Left reverse noenhanced samplen 2 spacing 1.1 height 1\n";
  } else {
    gp << "set key outside right top vertical Left reverse noenhanced samplen 2 spacing 1.2\n";
  }
  if (categorical) categorical_x_axis(gp, f);
  else numeric_x_axis(gp, f, row_xs(f));
  if (f.log_y) gp << "set logscale y\nset format y '%.0e'\n";

  // Slots of the side-by-side series of a categorical axis.
  std::vector<std::size_t> slotted;
  bool bars = false, negative = false;
  for (std::size_t i = 0; i < f.series.size(); ++i) {
    const Series& s = f.series[i];
    if (s.mark == Mark::threshold || s.mark == Mark::hidden) continue;
    if (categorical) slotted.push_back(i);
    bars = bars || s.mark == Mark::bars;
    for (std::size_t k = 0; k < s.y.size(); ++k) negative = negative || (finite_point(s, k) && s.y[k] < 0);
  }
  if (bars) {
    gp << "set style fill solid 0.85 border -1\n" << (negative ? "set xzeroaxis lt -1\n" : "set yrange [0:*]\n");
  }
  const double spread = bars ? kBarSpread : kPointSpread;
  const double width = spread / double(std::max<std::size_t>(1, slotted.size()));

  std::vector<std::string> items;
  std::size_t colour = 0, bound = 0;
  for (std::size_t i = 0; i < f.series.size(); ++i) {
    const Series& s = f.series[i];
    const std::string column = std::to_string(i + 2);
    const std::string title_clause = " title " + quoted(s.label);
    if (s.mark == Mark::hidden) continue;
    if (s.mark == Mark::threshold) {
      items.push_back(number(s.y[0]) + " with lines lc rgb '#555555' dt 3 lw 1.5" + title_clause);
      continue;
    }
    bool any = false;
    for (std::size_t k = 0; k < s.x.size(); ++k) any = any || finite_point(s, k);
    const bool is_bound = s.mark == Mark::bound;
    std::string style = is_bound ? bound_style(bound++) : line_style(colour++);
    if (!categorical && s.mark != Mark::points && s.x.size() > kMarkersPerLine) {
      style += " pi " + std::to_string((s.x.size() + kMarkersPerLine - 1) / kMarkersPerLine);
    }
    if (!any) continue;
    std::string x = "1";
    if (categorical) {
      const std::size_t slot = std::size_t(std::find(slotted.begin(), slotted.end(), i) - slotted.begin());
      const double offset = std::round((double(slot) - double(slotted.size() - 1) / 2.0) * width * 1e4) / 1e4;
      x = "($0" + (offset < 0 ? number(offset) : "+" + number(offset)) + ")";
    }
    std::string with;
    switch (s.mark) {
      case Mark::lines: with = "linespoints"; break;
      case Mark::points: with = "points"; break;
      case Mark::bars: with = "boxes"; break;
      case Mark::bound: with = categorical ? "points" : "linespoints"; break;
      case Mark::threshold:
      case Mark::hidden: break;
    }
    // On a log y axis a y <= 0 is not drawn (undefined) rather than an error.
    const std::string y = f.log_y ? "(column(" + column + ") > 0 ? column(" + column + ") : NaN)" : column;
    const std::string using_ = s.mark == Mark::bars ? x + ":" + y + ":(" + number(width * 0.95) + ")" : x + ":" + y;
    items.push_back(data + " using " + using_ + " with " + with + " " + style + title_clause);
  }
  std::ostringstream plot;
  plot << "plot ";
  for (std::size_t i = 0; i < items.size(); ++i) plot << (i ? ", \\\n     " : "") << items[i];
  gp << script_outputs(f.name, plot.str());
  return gp.str();
}

std::map<std::string, std::string> figure_files(const Figure& figure) {
  return {{figure.name + ".dat", data_table(figure)}, {figure.name + ".gp", gnuplot_script(figure)}};
}

bool gnuplot_available() { return std::system("command -v gnuplot > /dev/null 2>&1") == 0; }

Rendering render(const fs::path& dir, const std::vector<std::string>& names) {
  Rendering out;
  if (names.empty()) return out;
  if (!gnuplot_available()) {
    out.note = "gnuplot was not found on PATH, so no figure was drawn; each figure's data (NAME.dat) and gnuplot "
               "script (NAME.gp) were written: install gnuplot and run `gnuplot NAME.gp` in this directory to draw "
               "NAME.svg and NAME.png.";
    return out;
  }
  std::vector<std::string> failed;
  for (const std::string& name : names) {
    const std::string cmd =
        "cd " + shell_quoted(dir.string()) + " && gnuplot " + shell_quoted(name + ".gp") + " > /dev/null 2>&1";
    std::error_code ec;
    const bool ok = std::system(cmd.c_str()) == 0 && fs::file_size(dir / (name + ".svg"), ec) > 0 && !ec &&
                    fs::file_size(dir / (name + ".png"), ec) > 0 && !ec;
    (ok ? out.drawn : failed).push_back(name);
  }
  if (!failed.empty()) {
    out.note = "gnuplot failed on figure(s)";
    for (const std::string& name : failed) out.note += " " + name;
    out.note += "; their data (NAME.dat) and scripts (NAME.gp) are kept.";
  }
  return out;
}

std::string write_figure(const fs::path& dir, const Figure& figure, bool draw) {
  const auto files = figure_files(figure);
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path temp = dir / ("." + figure.name + ".tmp." + std::to_string(::getpid()));
  fs::remove_all(temp, ec);
  if (!fs::create_directory(temp, ec) || ec) {
    throw InputError(dir.string(), "output directory", "a writable location", ec.message());
  }
  try {
    for (const auto& [name, text] : files) {
      const std::span<const std::byte> bytes = std::as_bytes(std::span(text.data(), text.size()));
      write_file_atomically((temp / name).string(), std::span(&bytes, 1));
    }
    const std::string note = draw ? render(temp, {figure.name}).note : "";
    for (const auto& entry : fs::directory_iterator(temp)) fs::rename(entry.path(), dir / entry.path().filename());
    fs::remove_all(temp);
    return note;
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(temp, ec);
    throw InputError(dir.string(), "output directory", "a writable location", e.what());
  } catch (...) {
    fs::remove_all(temp, ec);
    throw;
  }
}

std::string heatmap_table(const Heatmap& heatmap) {
  std::ostringstream out;
  out << "row";
  for (const std::string& c : heatmap.columns) out << ' ' << word(c);
  out << '\n';
  for (std::size_t r = 0; r < heatmap.rows.size(); ++r) {
    out << word(heatmap.rows[r]);
    for (std::size_t c = 0; c < heatmap.columns.size(); ++c) {
      const double v = r < heatmap.values.size() && c < heatmap.values[r].size() ? heatmap.values[r][c] : NAN;
      out << ' ' << (std::isfinite(v) ? number(v) : "nan");
    }
    out << '\n';
  }
  return out.str();
}

std::string heatmap_script(const Heatmap& heatmap) {
  const Heatmap& h = heatmap;
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("heatmap: " + what);
  };
  require(!h.title.empty() && !h.x_label.empty() && !h.y_label.empty() && !h.value_label.empty(),
          "a title, both axis labels and the value label");
  require(!h.rows.empty() && !h.columns.empty(), "at least one row and one column");
  require(h.values.size() == h.rows.size(), "one value row per row label");
  for (const auto& row : h.values) require(row.size() == h.columns.size(), "one value per column in every row");
  for (const auto* labels : {&h.rows, &h.columns}) {
    for (const std::string& l : *labels) {
      require(!l.empty() && std::none_of(l.begin(), l.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); }),
              "row and column labels of one word");
    }
  }
  std::ostringstream gp;
  gp << script_header(h.name, h.title, h.x_label, h.y_label) << "set cblabel " << quoted(h.value_label) << " noenhanced\n"
     // viridis: sequential and colour-blind safe
     << "set palette defined (0 '#440154', 1 '#3b528b', 2 '#21918c', 3 '#5ec962', 4 '#fde725')\n"
     << "set border 3\nset tics nomirror out\nunset key\n"
     << "set xrange [-0.5:" << number(double(h.columns.size()) - 0.5) << "]\n"
     << "set yrange [-0.5:" << number(double(h.rows.size()) - 0.5) << "]\n";
  if (h.columns.size() > kMaxCategoryTics) gp << "set xtics rotate by 90 right font ',8'\n";
  if (h.rows.size() > kMaxCategoryTics) gp << "set ytics font ',8'\n";
  gp << script_outputs(h.name, "plot " + quoted(h.name + ".dat") + " matrix rowheaders columnheaders with image pixels");
  return gp.str();
}

std::map<std::string, std::string> heatmap_files(const Heatmap& heatmap) {
  return {{heatmap.name + ".dat", heatmap_table(heatmap)}, {heatmap.name + ".gp", heatmap_script(heatmap)}};
}

}  // namespace subevict::plot
