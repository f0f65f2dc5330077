#include "proofs_checks/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <span>
#include <stdexcept>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/index_set.hpp"
#include "core/input_error.hpp"
#include "core/plot.hpp"
#include "core/staged_directory.hpp"
#include "proofs_checks/format.hpp"
#include "proofs_checks/summary.hpp"

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

void write_text(const fs::path& path, const std::string& text) {
  const std::span<const std::byte> bytes = std::as_bytes(std::span(text.data(), text.size()));
  write_file_atomically(path.string(), std::span(&bytes, 1));
}

std::string counts_line(const CheckRun& run) {
  const CheckResult& r = run.result;
  std::ostringstream out;
  if (run.info.kind == Kind::measurement) {  // no hypotheses, no violations: only what was measured
    out << "instances " << r.instances << ", " << format_number(run.seconds) << " s";
    return out.str();
  }
  out << "instances " << r.instances << ", hypotheses held on " << r.hypotheses_held << " (vacuous on "
      << r.vacuous << "), violations " << r.violations << ", worst slack " << format_number(r.worst_slack) << ", violation rate 95% interval ["
      << format_number(r.violation_rate.lower) << ", " << format_number(r.violation_rate.upper) << "], "
      << format_number(run.seconds) << " s";
  return out.str();
}

/// The figure of the per-layer structure (RunSettings::layers).
constexpr const char* kLayerFigure = "structure_by_layer";

/// A check series' mark: categorical figures never join points.
plot::Mark mark_of(const Series& s, bool categorical) {
  if (s.style == SeriesStyle::threshold) return plot::Mark::threshold;
  if (s.style == SeriesStyle::bound) return plot::Mark::bound;
  return categorical ? plot::Mark::points : plot::Mark::lines;
}

}  // namespace

nlohmann::json json_number(double value) {
  if (std::isfinite(value)) return value;
  return format_number(value);
}

nlohmann::json results_json(const std::vector<CheckRun>& runs, const RunSettings& settings) {
  const RunSummary summary = summarize(runs);
  nlohmann::json checks = nlohmann::json::array();
  for (const CheckRun& run : runs) {
    const CheckInfo& i = run.info;
    const CheckResult& r = run.result;
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
                      {"kind", kind_name(i.kind)},
                      {"seconds", run.seconds},
                      {"error", run.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(run.error)},
                      {"outcome", status_name(i.kind, r.outcome)},
                      {"key_number", r.key_number},
                      {"instances", r.instances},
                      {"hypotheses_held", r.hypotheses_held},
                      {"violations", r.violations},
                      {"vacuous_instances", r.vacuous},
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
                        {"budget_ratio", settings.budget_ratio},
                        {"layers", settings.checked_layers},
                        {"layers_text", format_index_set(settings.checked_layers)},
                        {"policies", settings.policies.empty() ? nlohmann::json("default")
                                                               : nlohmann::json(settings.policies)}}},
          {"layers", layers},
          {"checks", checks},
          {"summary",
           {{"claims", {{"held", summary.claims_held}, {"violated", summary.claims_violated},
                        {"vacuous", summary.claims_vacuous},
                        {"hypotheses_not_met", summary.claims_hypotheses_not_met},
                        {"inconclusive", summary.claims_inconclusive}}},
            {"measurements", {{"measured", summary.measured}, {"inconclusive", summary.measurements_inconclusive}}},
            {"errata", {{"confirmed", summary.errata_confirmed}, {"corrected_form_violated", summary.errata_violated},
                        {"not_confirmed", summary.errata_not_confirmed}}},
            {"errors", summary.errors},
            {"line", summary_line(summary)}}}};
}

std::string report_markdown(const std::vector<CheckRun>& runs, const RunSettings& settings,
                            const std::vector<std::string>& figures, const std::string& plot_note) {
  std::string policies;
  for (const std::string& p : settings.policies) policies += (policies.empty() ? "" : ", ") + p;
  if (policies.empty()) policies = "default";
  std::ostringstream md;
  md << "# subevict verify report\n\n"
     << "Workload: " << settings.workload << ". Seed " << settings.seed << ", effort "
     << format_number(settings.effort) << ", budget ratio " << format_number(settings.budget_ratio)
     << ". Layers checked: " << (settings.checked_layers.empty() ? "none" : format_index_set(settings.checked_layers))
     << ". Policies against the offline optimum: " << policies
     << ". Every number below is in results.json under the check's id (measurements by name).\n\n";
  const RunSummary summary = summarize(runs);
  md << "| check | kind | status | key number |\n|---|---|---|---|\n";
  for (const CheckRun& run : runs) {
    md << "| `" << run.info.id << "` | " << kind_name(run.info.kind) << " | "
       << status_name(run.info.kind, run.result.outcome) << " | " << cell(run.result.key_number) << " |\n";
  }
  md << "\n## Summary\n\n" << summary_line(summary)
     << ".\n\nA claim is a statement that an instance could refute; a measurement reports numbers (fitted "
        "constants, ratios, rounding errors) and is never counted as held; an erratum is confirmed when the printed "
        "form failed and the corrected form held; a claim is vacuous when on every instance its bound was at or above "
        "the largest value its quantity could take there, so it could not have failed.\n\n### Claims that held on the default workloads\n\n";
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
  const auto claim_with = [](auto keep) {
    return [keep](const CheckRun& r) { return r.info.kind == Kind::claim && keep(r.result.outcome); };
  };
  list(claim_with([](Outcome o) { return o == Outcome::held; }));
  md << "### Claims that did not hold on the default workloads\n\n";
  list(claim_with([](Outcome o) { return o == Outcome::violated; }));
  md << "### Claims that could not have failed (vacuous: the bound at or above its quantity's range)\n\n";
  list(claim_with([](Outcome o) { return o == Outcome::vacuous; }));
  md << "### Claims not tested (hypotheses not met, inconclusive or errors)\n\n";
  list(claim_with([](Outcome o) { return o == Outcome::hypotheses_not_met || o == Outcome::inconclusive; }));
  md << "### Measurements (numbers, not verdicts)\n\n";
  list([](const CheckRun& r) { return r.info.kind == Kind::measurement; });
  md << "### Errata confirmed (printed form fails, corrected form holds)\n\n";
  list([](const CheckRun& r) { return r.info.kind == Kind::erratum && r.result.outcome == Outcome::held; });
  md << "### Errata not confirmed (corrected form violated, or printed form not shown to fail)\n\n";
  list([](const CheckRun& r) { return r.info.kind == Kind::erratum && r.result.outcome != Outcome::held; });
  md << "## Checks\n";
  for (const CheckRun& run : runs) {
    const CheckInfo& i = run.info;
    const CheckResult& r = run.result;
    const bool measurement = i.kind == Kind::measurement;
    md << "\n### `" << i.id << "` (" << kind_name(i.kind) << "): " << status_name(i.kind, r.outcome) << "\n\n"
       << "- Reference: " << i.reference << (measurement ? "\n- Measures: " : "\n- Statement: ") << i.statement
       << (measurement ? "\n- Setting: " : "\n- Hypotheses: ") << i.hypotheses
       << (measurement ? "\n- Reports: " : "\n- Conclusion: ") << i.conclusion << "\n- Instance families: ";
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
  for (const std::string& f : figures) md << "- " << f << ".svg, " << f << ".png (data " << f << ".dat, script " << f << ".gp)\n";
  return md.str();
}

std::vector<std::string> plot_names(const std::vector<CheckRun>& runs) {
  std::vector<std::string> names;
  for (const CheckRun& run : runs)
    for (const Series& s : run.result.series)
      if (!s.plot.empty() && std::find(names.begin(), names.end(), s.plot) == names.end()) names.push_back(s.plot);
  return names;
}

plot::Figure check_figure(const std::vector<CheckRun>& runs, const std::string& name) {
  std::vector<std::pair<const Series*, const std::string*>> members;  // (series, check id)
  for (const CheckRun& run : runs)
    for (const Series& s : run.result.series)
      if (s.plot == name) members.push_back({&s, &run.info.id});
  plot::Figure figure;
  figure.name = name;
  if (members.empty()) return figure;
  const bool categorical = std::any_of(members.begin(), members.end(),
                                       [](const auto& m) { return m.first->style == SeriesStyle::categorical; });
  figure.x_label = members.front().first->x_label;
  figure.y_label = members.front().first->y_label;
  for (const auto& [s, id] : members)
    if (figure.title.empty()) figure.title = s->title;
  if (figure.title.empty()) figure.title = figure.y_label + " against " + figure.x_label;
  figure.x_axis = categorical ? plot::XAxis::categorical : plot::XAxis::linear;
  figure.x_column = categorical ? "category" : "x";
  // Categories: the distinct x of the series, ascending, named by the first series that names them.
  std::map<double, std::string> names;
  for (const auto& [s, id] : members) {
    if (!categorical || s->style == SeriesStyle::threshold) continue;
    for (std::size_t k = 0; k < s->x.size(); ++k) {
      if (!std::isfinite(s->x[k])) continue;
      std::string& n = names[s->x[k]];
      if (n.empty()) n = k < s->x_names.size() ? s->x_names[k] : format_number(s->x[k]);
    }
  }
  std::map<double, double> index;
  for (const auto& [x, n] : names) {
    index[x] = double(figure.categories.size());
    figure.categories.push_back(n);
  }
  for (const auto& [s, id] : members) {
    // The check's id only where two series of the figure share a label.
    const bool shared = std::count_if(members.begin(), members.end(),
                                      [&](const auto& m) { return m.first->label == s->label; }) > 1;
    plot::Series p{shared ? s->label + " (" + *id + ")" : s->label, {}, {}, mark_of(*s, categorical)};
    // Several points at one x (instances sharing a parameter) are drawn as their minimum.
    std::map<double, double> lowest;
    for (std::size_t k = 0; k < std::min(s->x.size(), s->y.size()); ++k) {
      if (p.mark == plot::Mark::threshold || (categorical && !index.count(s->x[k]))) continue;
      const double x = categorical ? index.at(s->x[k]) : s->x[k];
      const auto [it, fresh] = lowest.emplace(x, s->y[k]);
      if (!fresh) it->second = std::min(it->second, s->y[k]);
    }
    if (lowest.size() < std::min(s->x.size(), s->y.size()) && p.mark != plot::Mark::threshold) {
      p.label += " (min at each x)";
    }
    for (const auto& [x, y] : lowest) {
      p.x.push_back(x);
      p.y.push_back(y);
    }
    if (p.mark == plot::Mark::threshold && !s->y.empty()) p.y = {s->y.front()};
    figure.series.push_back(std::move(p));
  }
  return figure;
}

plot::Figure layer_figure(const std::vector<LayerStatistics>& layers) {
  plot::Figure figure{kLayerFigure, "Attention structure per layer (mean over the layer's heads)", "layer",
                      "share (fraction of entries, mass or heads)", plot::XAxis::categorical, false, {}, "layer", {}};
  const std::pair<const char*, double (*)(const LayerStatistics&)> statistics[] = {
      {"sparsity (entries < 1% of row max)", [](const LayerStatistics& l) { return l.mean.sparsity; }},
      {"mass on token 0", [](const LayerStatistics& l) { return l.mean.first_token_mass; }},
      {"sink heads", [](const LayerStatistics& l) { return l.sink_head_rate; }},
      {"mass held by top 10% of keys", [](const LayerStatistics& l) { return l.mean.received_top_share; }},
      {"mass on the last 32 keys", [](const LayerStatistics& l) { return l.mean.recent_mass; }}};
  for (const LayerStatistics& l : layers) figure.categories.push_back(std::to_string(l.layer));
  for (const auto& [label, value] : statistics) {
    plot::Series s{label, {}, {}, plot::Mark::points};
    for (std::size_t k = 0; k < layers.size(); ++k) {
      s.x.push_back(double(k));
      s.y.push_back(value(layers[k]));
    }
    figure.series.push_back(std::move(s));
  }
  return figure;
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
    std::vector<std::string> scripted;
    for (const std::string& name : plots) {
      const plot::Figure figure = name == kLayerFigure ? layer_figure(settings.layers) : check_figure(runs, name);
      try {
        for (const auto& [file, text] : plot::figure_files(figure)) write_text(temp / file, text);
        scripted.push_back(name);
      } catch (const std::invalid_argument& e) {  // a figure that cannot be drawn never fails the report
        note += std::string(note.empty() ? "" : " ") + "No figure " + e.what() + ".";
      }
    }
    plot::Rendering drawn = plot::render(temp, scripted);
    figures = std::move(drawn.drawn);
    note += (note.empty() || drawn.note.empty() ? "" : " ") + drawn.note;
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
