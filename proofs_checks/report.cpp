#include "proofs_checks/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <span>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/input_error.hpp"
#include "core/staged_directory.hpp"
#include "proofs_checks/format.hpp"

namespace subevict::proofs_checks {
namespace {

namespace fs = std::filesystem;

nlohmann::json measurements_json(const std::vector<Measurement>& measurements) {
  nlohmann::json out = nlohmann::json::object();
  for (const Measurement& m : measurements) out[m.name] = {{"value", json_number(m.value)}, {"description", m.description}};
  return out;
}

/// A table cell: "|" escaped, line breaks flattened.
std::string cell(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

void measurement_table(std::ostringstream& md, const std::vector<Measurement>& measurements) {
  md << "| measurement | value | description |\n|---|---|---|\n";
  for (const Measurement& m : measurements) {
    md << "| `" << m.name << "` | " << format_number(m.value) << " | " << cell(m.description) << " |\n";
  }
}

/// A gnuplot single-quoted string ('' escapes a quote).
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

void write_text(const fs::path& path, const std::string& text) {
  const std::span<const std::byte> bytes = std::as_bytes(std::span(text.data(), text.size()));
  write_file_atomically(path.string(), std::span(&bytes, 1));
}

std::string counts_line(const CheckRun& run) {
  const CheckResult& r = run.result;
  std::ostringstream out;
  out << "instances " << r.instances << ", hypotheses held on " << r.hypotheses_held << ", violations "
      << r.violations << ", worst slack " << format_number(r.worst_slack) << ", violation rate 95% interval ["
      << format_number(r.violation_rate.lower) << ", " << format_number(r.violation_rate.upper) << "], "
      << format_number(run.seconds) << " s";
  return out.str();
}

/// The figure of the per-layer structure (RunSettings::layers).
constexpr const char* kLayerFigure = "structure_by_layer";

/// A gnuplot script drawing `named` series (label, y per x) as points joined by lines over x.
std::string series_plot(const std::string& plot, const std::string& title, const std::string& x_label,
                        const std::string& y_label, const std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>>& named) {
  std::ostringstream gp, data, command;
  gp.precision(17);
  data.precision(17);
  int block = 0;
  for (const auto& [label, points] : named) {
    data << "$d" << block << " << EOD\n";
    for (const auto& [x, y] : points) {
      if (std::isfinite(x) && std::isfinite(y)) data << x << ' ' << y << '\n';
    }
    data << "EOD\n";
    command << (block ? ", " : "plot ") << "$d" << block << " with linespoints title " << quoted(label);
    ++block;
  }
  gp << data.str() << "set title " << quoted(title) << " noenhanced\nset xlabel " << quoted(x_label)
     << " noenhanced\nset ylabel " << quoted(y_label) << " noenhanced\nset key below noenhanced\nset grid\n"
     << "set terminal svg size 800,500\nset output " << quoted(plot + ".svg") << "\n" << command.str() << "\n"
     << "set terminal pngcairo size 800,500\nset output " << quoted(plot + ".png") << "\nreplot\nunset output\n";
  return gp.str();
}

std::string layer_figure_script(const std::vector<LayerStatistics>& layers) {
  std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>> named = {
      {"sparsity", {}}, {"first-token mass", {}}, {"sink-head rate", {}}, {"top-10% share", {}}, {"recent mass", {}}};
  for (const LayerStatistics& l : layers) {
    const double x = l.layer;
    named[0].second.push_back({x, l.mean.sparsity});
    named[1].second.push_back({x, l.mean.first_token_mass});
    named[2].second.push_back({x, l.sink_head_rate});
    named[3].second.push_back({x, l.mean.received_top_share});
    named[4].second.push_back({x, l.mean.recent_mass});
  }
  return series_plot(kLayerFigure, "attention structure by layer (mean over heads)", "layer", "share", named);
}

}  // namespace

nlohmann::json json_number(double value) {
  if (std::isfinite(value)) return value;
  return format_number(value);
}

nlohmann::json results_json(const std::vector<CheckRun>& runs, const RunSettings& settings) {
  nlohmann::json checks = nlohmann::json::array();
  std::map<std::string, int> summary = {{"held", 0}, {"violated", 0}, {"hypotheses not met", 0}, {"inconclusive", 0}};
  int errors = 0;
  for (const CheckRun& run : runs) {
    const CheckInfo& i = run.info;
    const CheckResult& r = run.result;
    ++summary[outcome_name(r.outcome)];
    errors += run.error.empty() ? 0 : 1;
    nlohmann::json series = nlohmann::json::array();
    for (const Series& s : r.series) {
      nlohmann::json x = nlohmann::json::array(), y = nlohmann::json::array();
      for (double v : s.x) x.push_back(json_number(v));
      for (double v : s.y) y.push_back(json_number(v));
      series.push_back({{"plot", s.plot}, {"label", s.label}, {"x_label", s.x_label}, {"y_label", s.y_label},
                        {"x", x}, {"y", y}});
    }
    nlohmann::json counterexample = nullptr;
    if (r.counterexample) {
      counterexample = {{"description", r.counterexample->description},
                        {"numbers", measurements_json(r.counterexample->numbers)}};
    }
    checks.push_back({{"id", i.id},
                      {"reference", i.reference},
                      {"statement", i.statement},
                      {"hypotheses", i.hypotheses},
                      {"conclusion", i.conclusion},
                      {"families", i.families},
                      {"source", i.source},
                      {"seconds", run.seconds},
                      {"error", run.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(run.error)},
                      {"outcome", outcome_name(r.outcome)},
                      {"key_number", r.key_number},
                      {"instances", r.instances},
                      {"hypotheses_held", r.hypotheses_held},
                      {"violations", r.violations},
                      {"worst_slack", json_number(r.worst_slack)},
                      {"violation_rate", {{"lower", json_number(r.violation_rate.lower)},
                                          {"upper", json_number(r.violation_rate.upper)}}},
                      {"measurements", measurements_json(r.measurements)},
                      {"counterexample", counterexample},
                      {"series", series},
                      {"notes", r.notes}});
  }
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerStatistics& l : settings.layers) {
    nlohmann::json row = {{"layer", l.layer}, {"heads", l.heads}, {"sink_head_rate", json_number(l.sink_head_rate)}};
    for_each_statistic([&](const char* name, double HeadStatistics::*field) { row[name] = json_number(l.mean.*field); });
    layers.push_back(row);
  }
  return {{"settings", {{"workload", settings.workload}, {"seed", settings.seed}, {"effort", settings.effort},
                        {"budget_ratio", settings.budget_ratio}}},
          {"layers", layers},
          {"checks", checks},
          {"summary", {{"held", summary["held"]}, {"violated", summary["violated"]},
                       {"hypotheses_not_met", summary["hypotheses not met"]},
                       {"inconclusive", summary["inconclusive"]}, {"errors", errors}}}};
}

std::string report_markdown(const std::vector<CheckRun>& runs, const RunSettings& settings,
                            const std::vector<std::string>& figures, const std::string& plot_note) {
  std::ostringstream md;
  md << "# subevict verify report\n\n"
     << "Workload: " << settings.workload << ". Seed " << settings.seed << ", effort "
     << format_number(settings.effort) << ", budget ratio " << format_number(settings.budget_ratio)
     << ". Every number below is in results.json under the check's id (measurements by name).\n\n";
  md << "| check | status | key number |\n|---|---|---|\n";
  for (const CheckRun& run : runs) {
    md << "| `" << run.info.id << "` | " << outcome_name(run.result.outcome) << " | " << cell(run.result.key_number)
       << " |\n";
  }
  md << "\n## Summary\n\n### Claims that held on the default workloads\n\n";
  const auto list = [&](auto keep) {
    int count = 0;
    for (const CheckRun& run : runs) {
      if (!keep(run)) continue;
      ++count;
      std::string statement = run.info.statement;
      while (!statement.empty() && statement.back() == '.') statement.pop_back();
      md << "- `" << run.info.id << "` (" << run.info.reference << "): " << statement << ". "
         << run.result.key_number << ".";
      if (run.result.counterexample) md << " Counterexample: " << run.result.counterexample->description << ".";
      if (!run.error.empty()) md << " Error: " << run.error << ".";
      md << "\n";
    }
    if (count == 0) md << "- none\n";
    md << "\n";
  };
  list([](const CheckRun& r) { return r.result.outcome == Outcome::held; });
  md << "### Claims that did not hold on the default workloads\n\n";
  list([](const CheckRun& r) { return r.result.outcome == Outcome::violated; });
  md << "### Claims not tested (hypotheses not met, inconclusive or errors)\n\n";
  list([](const CheckRun& r) {
    return r.result.outcome == Outcome::hypotheses_not_met || r.result.outcome == Outcome::inconclusive;
  });
  md << "## Checks\n";
  for (const CheckRun& run : runs) {
    const CheckInfo& i = run.info;
    const CheckResult& r = run.result;
    md << "\n### `" << i.id << "`: " << outcome_name(r.outcome) << "\n\n"
       << "- Reference: " << i.reference << "\n- Statement: " << i.statement << "\n- Hypotheses: " << i.hypotheses
       << "\n- Conclusion: " << i.conclusion << "\n- Instance families: ";
    for (std::size_t k = 0; k < i.families.size(); ++k) md << (k ? "; " : "") << i.families[k];
    md << "\n- Source: `" << i.source << "`\n- Result: " << r.key_number << "\n- Counts: " << counts_line(run) << "\n\n";
    if (!r.measurements.empty()) measurement_table(md, r.measurements);
    if (r.counterexample) {
      md << "\nCounterexample: " << r.counterexample->description << "\n\n";
      if (!r.counterexample->numbers.empty()) measurement_table(md, r.counterexample->numbers);
    }
    if (!r.notes.empty()) md << "\nNotes: " << r.notes << "\n";
    if (!run.error.empty()) md << "\nError: " << run.error << "\n";
    std::vector<std::string> shown;
    for (const Series& s : r.series) {
      if (std::find(figures.begin(), figures.end(), s.plot) == figures.end()) continue;
      if (std::find(shown.begin(), shown.end(), s.plot) != shown.end()) continue;
      shown.push_back(s.plot);
      md << "\n![" << s.plot << "](" << s.plot << ".svg) (also " << s.plot << ".png)\n";
    }
  }
  if (!settings.layers.empty()) {
    md << "\n## The workload, layer by layer\n\n"
       << "Means over the heads of each layer (definitions in core/workload_stats.hpp; every number is under "
          "\"layers\" in results.json). sparsity: share of causal entries below 1% of the row maximum; first token: "
          "attention on token 0 over queries i >= 64; sink heads: share of heads with attention on token 0 above "
          "0.3 over the last 64 queries; top 10%: share of the column sums held by the 10% most-attended tokens; "
          "recent: mass on the last 32 keys; rho: Spearman of key norm and received attention.\n\n"
       << "| layer | sparsity | first token | sink heads | top 10% | recent | rho | power-law R^2 |\n"
       << "|---|---|---|---|---|---|---|---|\n";
    for (const LayerStatistics& l : settings.layers) {
      md << "| " << l.layer << " | " << format_number(l.mean.sparsity) << " | " << format_number(l.mean.first_token_mass)
         << " | " << format_number(l.sink_head_rate) << " | " << format_number(l.mean.received_top_share) << " | "
         << format_number(l.mean.recent_mass) << " | " << format_number(l.mean.norm_attention_spearman) << " | "
         << format_number(l.mean.power_law_r2) << " |\n";
    }
    if (std::find(figures.begin(), figures.end(), kLayerFigure) != figures.end()) {
      md << "\n![" << kLayerFigure << "](" << kLayerFigure << ".svg) (also " << kLayerFigure << ".png)\n";
    }
  }
  md << "\n## Figures\n\n";
  if (!plot_note.empty()) md << plot_note << "\n\n";
  for (const std::string& f : figures) md << "- " << f << ".svg, " << f << ".png (script " << f << ".gp)\n";
  return md.str();
}

std::vector<std::string> plot_names(const std::vector<CheckRun>& runs) {
  std::vector<std::string> names;
  for (const CheckRun& run : runs)
    for (const Series& s : run.result.series)
      if (!s.plot.empty() && std::find(names.begin(), names.end(), s.plot) == names.end()) names.push_back(s.plot);
  return names;
}

std::string gnuplot_script(const std::vector<CheckRun>& runs, const std::string& plot) {
  std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>> named;
  std::string x_label, y_label;
  for (const CheckRun& run : runs) {
    for (const Series& s : run.result.series) {
      if (s.plot != plot) continue;
      x_label = s.x_label;
      y_label = s.y_label;
      std::vector<std::pair<double, double>> points;
      for (std::size_t k = 0; k < std::min(s.x.size(), s.y.size()); ++k) points.push_back({s.x[k], s.y[k]});
      named.push_back({s.label + " (" + run.info.id + ")", std::move(points)});
    }
  }
  return series_plot(plot, plot, x_label, y_label, named);
}

std::string write_report(const std::string& directory, const std::vector<CheckRun>& runs,
                         const RunSettings& settings) {
  StagedDirectory staged(directory);
  const fs::path& temp = staged.path();
  try {
    std::vector<std::string> figures;
    std::string note;
    std::vector<std::string> plots = plot_names(runs);
    if (!settings.layers.empty()) plots.push_back(kLayerFigure);
    const bool have_gnuplot = std::system("gnuplot --version > /dev/null 2>&1") == 0;
    if (!have_gnuplot && !plots.empty()) {
      note = "gnuplot was not found, so no figure was drawn; the data of every figure is in results.json (series).";
    }
    for (const std::string& plot : plots) {
      write_text(temp / (plot + ".gp"),
                 plot == kLayerFigure ? layer_figure_script(settings.layers) : gnuplot_script(runs, plot));
      if (!have_gnuplot) continue;
      const std::string cmd = "cd '" + temp.string() + "' && gnuplot '" + plot + ".gp' > /dev/null 2>&1";
      if (std::system(cmd.c_str()) == 0 && fs::exists(temp / (plot + ".svg")) && fs::exists(temp / (plot + ".png"))) {
        figures.push_back(plot);
      } else {
        note = "gnuplot failed on some figures (their scripts PLOT.gp are kept); the data is in results.json.";
      }
    }
    write_text(temp / "results.json", results_json(runs, settings).dump(2) + "\n");
    write_text(temp / "report.md", report_markdown(runs, settings, figures, note));
    staged.publish("report.md");
    return note;
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(directory, "output directory", "a writable location", e.what());
  }
}

}  // namespace subevict::proofs_checks
