#include "sweep/report.hpp"

#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

namespace subevict::sweep {
namespace {

std::string brief(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.4f", x);
  return buf;
}

std::string optional_text(const std::optional<double>& v) { return v ? exact_text(*v) : ""; }

/// A running mean.
struct Mean {
  double sum = 0.0;
  int count = 0;
  void add(double v) {
    sum += v;
    ++count;
  }
  [[nodiscard]] double value() const { return sum / count; }
};

double budget_x(const ResultRow& r) {
  return r.budget_kind == "ratio" ? r.budget_value : r.budget_value / double(r.tokens);
}

std::string csv(const std::vector<ResultRow>& rows) {
  std::ostringstream out;
  for (const auto& c : ResultRow::columns()) out << c << ',';
  out << "gap_to_optimum\n";
  for (const ResultRow& r : rows) {
    const JobResult& j = r.result;
    out << r.id << ",\"" << r.params << "\"," << r.preset << ',' << r.tokens << ",\"" << r.layers << "\","
        << r.seed << ',' << r.policy << ',' << r.budget_kind << ',' << exact_text(r.budget_value) << ','
        << r.optimum << ',' << j.groups << ',' << j.budget_size << ',' << exact_text(j.mean_retained_mass)
        << ',' << exact_text(j.mean_total_variation) << ',' << exact_text(j.mean_output_error) << ','
        << j.uncompressed_groups << ',' << optional_text(j.optimum_mean_retained_mass) << ','
        << optional_text(j.oracle_mean_retained_mass) << ',' << optional_text(j.ratio_to_optimum) << ','
        << (j.optimum_mean_retained_mass ? exact_text(*j.optimum_mean_retained_mass - j.mean_retained_mass) : "")
        << '\n';
  }
  return out.str();
}

}  // namespace

plot::Figure budget_curve_figure(const std::map<std::string, std::map<double, double>>& curves,
                                 const std::vector<std::string>& policies, const std::string& scope) {
  plot::Figure figure{"retained_vs_budget", "Mean retained attention mass against the cache budget (" + scope + ")",
                      "cache budget k / n (log scale)", "retained attention mass (fraction per step)",
                      plot::XAxis::log, false, {}, "budget", {}};
  const std::pair<const char*, const char*> bounds[] = {{"OPT", "OPT (offline optimum)"},
                                                        {"sum_U", "sum U_i (per-step oracle)"},
                                                        {"OPT_lower", "OPT lower bound (certified)"},
                                                        {"OPT_upper", "OPT upper bound (certified)"}};
  const auto add = [&](const std::string& name, const std::string& label, plot::Mark mark) {
    const auto it = curves.find(name);
    if (it == curves.end()) return;
    plot::Series s{label, {}, {}, mark, name};
    for (const auto& [x, y] : it->second) {
      s.x.push_back(x);
      s.y.push_back(y);
    }
    figure.series.push_back(std::move(s));
  };
  for (const std::string& p : policies) add(p, p, plot::Mark::lines);
  for (const auto& [name, label] : bounds) add(name, label, plot::Mark::bound);
  return figure;
}

std::map<std::string, std::string> build_report(const std::vector<ResultRow>& rows) {
  std::map<std::string, std::string> files;
  files["sweep.csv"] = csv(rows);

  std::set<std::string> policies, presets;
  std::set<double> xs;
  std::map<std::pair<std::string, double>, Mean> curve;  // (series, x)
  std::map<std::pair<std::string, std::string>, Mean> gap, ratio;  // (preset, policy)
  for (const ResultRow& r : rows) {
    const double x = budget_x(r);
    policies.insert(r.policy);
    presets.insert(r.preset);
    xs.insert(x);
    curve[{r.policy, x}].add(r.result.mean_retained_mass);
    if (r.result.optimum_mean_retained_mass) {
      curve[{"OPT", x}].add(*r.result.optimum_mean_retained_mass);
      gap[{r.preset, r.policy}].add(*r.result.optimum_mean_retained_mass - r.result.mean_retained_mass);
    }
    if (r.result.ratio_to_optimum) ratio[{r.preset, r.policy}].add(*r.result.ratio_to_optimum);
    if (r.result.oracle_mean_retained_mass) curve[{"sum_U", x}].add(*r.result.oracle_mean_retained_mass);
  }
  std::vector<std::string> series(policies.begin(), policies.end());
  for (const char* extra : {"OPT", "sum_U"}) {
    for (double x : xs)
      if (curve.count({extra, x})) {
        series.push_back(extra);
        break;
      }
  }
  auto point = [&](const std::string& s, double x, auto format) -> std::string {
    const auto it = curve.find({s, x});
    return it == curve.end() ? "nan" : format(it->second.value());
  };

  std::map<std::string, std::map<double, double>> curves;
  for (const auto& [key, mean] : curve) curves[key.first][key.second] = mean.value();
  const std::string jobs = std::to_string(rows.size()) + " job" + (rows.size() == 1 ? "" : "s");
  std::vector<plot::Figure> figures = {
      budget_curve_figure(curves, {policies.begin(), policies.end()}, "each point a mean over its jobs; " + jobs)};
  // The gap to the optimum: one category per preset, one bar per policy.
  plot::Figure gap_figure{"gap_to_optimum", "Gap to the offline optimum per preset (mean over its jobs, all budgets pooled; " + jobs + ")",
                   "preset", "OPT - policy (retained mass, fraction per step)", plot::XAxis::categorical, false,
                   {presets.begin(), presets.end()}, "preset", {}};
  for (const auto& p : policies) {
    plot::Series bars{p, {}, {}, plot::Mark::bars};
    double index = 0;
    for (const auto& preset : presets) {
      const auto it = gap.find({preset, p});
      bars.x.push_back(index++);
      bars.y.push_back(it == gap.end() ? std::nan("") : it->second.value());
    }
    gap_figure.series.push_back(std::move(bars));
  }
  if (!gap.empty()) figures.push_back(std::move(gap_figure));

  std::ostringstream md;
  md << "# Sweep summary\n\n" << rows.size() << " jobs; presets:";
  for (const auto& p : presets) md << ' ' << p;
  md << "; policies:";
  for (const auto& p : policies) md << ' ' << p;
  md << ".\n\nUnits: retained attention mass per step, mean over the query heads of a KV head and over "
        "the steps (1 = nothing lost); each cell is the mean over the jobs with that policy and budget "
        "(all presets, tokens, layers, seeds and generator parameters). Budget = ratio of the sequence "
        "length n. OPT = the offline optimum of the irreversible process, sum_U = the per-step oracle "
        "bound (policy <= OPT <= sum_U <= 1).\n\n## Mean retained mass vs budget\n\n| series |";
  for (double x : xs) md << ' ' << brief(x) << " |";
  md << "\n|---|";
  for (std::size_t i = 0; i < xs.size(); ++i) md << "---:|";
  md << '\n';
  for (const auto& s : series) {
    md << "| " << s << " |";
    for (double x : xs) md << ' ' << point(s, x, brief) << " |";
    md << '\n';
  }
  if (!gap.empty()) {
    md << "\n## Gap to the optimum per preset (OPT − policy; ratio policy / OPT in parentheses)\n\n| preset |";
    for (const auto& p : policies) md << ' ' << p << " |";
    md << "\n|---|";
    for (std::size_t i = 0; i < policies.size(); ++i) md << "---:|";
    md << '\n';
    for (const auto& preset : presets) {
      md << "| " << preset << " |";
      for (const auto& p : policies) {
        const auto g = gap.find({preset, p});
        const auto q = ratio.find({preset, p});
        md << ' ' << (g == gap.end() ? "–" : brief(g->second.value()))
           << (q == ratio.end() ? "" : " (" + brief(q->second.value()) + ")") << " |";
      }
      md << '\n';
    }
  }
  md << "\nFiles: sweep.csv (one row per job, sorted by job id), retained_vs_budget.{svg,png}"
     << (gap.empty() ? "" : ", gap_to_optimum.{svg,png}") << " (data NAME.dat, gnuplot script NAME.gp).\n";
  files["summary.md"] = md.str();

  for (const plot::Figure& figure : figures) {
    for (auto& [name, text] : plot::figure_files(figure)) files[name] = std::move(text);
  }
  return files;
}

}  // namespace subevict::sweep
