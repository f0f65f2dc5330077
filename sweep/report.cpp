#include "sweep/report.hpp"

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
    out << r.id << ",\"" << r.params << "\"," << r.preset << ',' << r.tokens << ',' << r.layers << ','
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

  std::ostringstream dat;
  dat << "budget";
  for (const auto& s : series) dat << ' ' << s;
  dat << '\n';
  for (double x : xs) {
    dat << exact_text(x);
    for (const auto& s : series) dat << ' ' << point(s, x, exact_text);
    dat << '\n';
  }
  files["retained_vs_budget.dat"] = dat.str();

  std::ostringstream gdat;
  gdat << "preset";
  for (const auto& p : policies) gdat << ' ' << p;
  gdat << '\n';
  for (const auto& preset : presets) {
    gdat << preset;
    for (const auto& p : policies) {
      const auto it = gap.find({preset, p});
      gdat << ' ' << (it == gap.end() ? "nan" : exact_text(it->second.value()));
    }
    gdat << '\n';
  }
  files["gap_to_optimum.dat"] = gdat.str();

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
  md << "\nFiles: sweep.csv (one row per job, sorted by job id), retained_vs_budget.{svg,png}, "
        "gap_to_optimum.{svg,png}.\n";
  files["summary.md"] = md.str();

  std::ostringstream gp;
  for (const auto& [terminal, ext] : {std::pair{"svg size 900,540", "svg"},
                                      std::pair{"pngcairo size 900,540", "png"}}) {
    gp << "set terminal " << terminal << " noenhanced\nset key outside right\nset grid\n"
       << "set output 'retained_vs_budget." << ext << "'\n"
       << "set title 'Mean retained mass vs budget (mean over jobs)'\n"
       << "set xlabel 'budget / n'\nset ylabel 'retained mass'\nset logscale x\n"
       << "plot for [c=2:" << series.size() + 1
       << "] 'retained_vs_budget.dat' using 1:c with linespoints title columnhead(c)\n"
       << "unset logscale x\n";
    if (!gap.empty()) {
      gp << "set output 'gap_to_optimum." << ext << "'\n"
         << "set title 'Gap to the offline optimum per preset (OPT - policy, mean over jobs)'\n"
         << "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.6\n"
         << "set xlabel 'preset'\nset ylabel 'OPT - policy'\nset yrange [0:*]\n"
         << "plot for [c=2:" << policies.size() + 1
         << "] 'gap_to_optimum.dat' using c:xtic(1) title columnhead(c)\n"
         << "set style data lines\n";
    }
    gp << "unset output\n";
  }
  files["plots.gp"] = gp.str();
  return files;
}

}  // namespace subevict::sweep
