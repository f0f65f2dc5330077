#include "greedy/eviction/evaluation/budget_curve_csv.hpp"

#include <charconv>
#include <optional>
#include <fstream>
#include <sstream>

#include "core/input_error.hpp"
#include "core/number_text.hpp"

namespace subevict::greedy {
namespace {

constexpr const char* kHeader =
    "layer,kv_head,budget_size,optimum_lower_bound,optimum_upper_bound,status,curve_seconds";

}  // namespace

std::string budget_curve_csv(const std::vector<BudgetCurve>& curves) {
  std::ostringstream csv;
  csv << kHeader << '\n';
  for (const BudgetCurve& c : curves) {
    const double g = c.heads;
    for (const BudgetCurvePoint& p : c.points) {
      csv << c.layer << ',' << c.kv_head << ',' << p.budget << ',' << significant_digits(p.value / g, 17) << ','
          << significant_digits(p.upper_bound / g, 17) << ',' << to_string(p.status) << ',' << significant_digits(c.seconds, 4)
          << '\n';
    }
  }
  return csv.str();
}

std::vector<ReadBudgetCurve> read_budget_curve_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "file", "a readable budget_curve.csv (simulate --budget-curve K)", "cannot open it");
  std::string line;
  if (!std::getline(in, line) || line != kHeader) {
    throw InputError(path, "header", std::string("'") + kHeader + "'", "'" + line + "'");
  }
  std::vector<ReadBudgetCurve> curves;
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const std::string where = "line " + std::to_string(number);
    std::vector<std::string> fields;
    std::stringstream row(line);
    for (std::string field; std::getline(row, field, ',');) fields.push_back(field);
    if (fields.size() != 7) throw InputError(path, where, "7 comma-separated fields", std::to_string(fields.size()));
    auto integer = [&](int index, const char* name) {
      int v = 0;
      const std::string& f = fields[std::size_t(index)];
      const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
      if (ec != std::errc() || end != f.data() + f.size() || v < 0) {
        throw InputError(path, where + " " + name, "an integer >= 0", "'" + f + "'");
      }
      return v;
    };
    auto real = [&](int index, const char* name) {
      const std::optional<double> v = finite_number(fields[std::size_t(index)]);
      if (!v) throw InputError(path, where + " " + name, "a finite number", "'" + fields[std::size_t(index)] + "'");
      return *v;
    };
    const int layer = integer(0, "layer"), kv_head = integer(1, "kv_head"), budget = integer(2, "budget_size");
    const double lower = real(3, "optimum_lower_bound"), upper = real(4, "optimum_upper_bound");
    const std::string& status = fields[5];
    if (status != "optimal" && status != "feasible") {
      throw InputError(path, where + " status", "optimal or feasible", "'" + status + "'");
    }
    if (curves.empty() || curves.back().layer != layer || curves.back().kv_head != kv_head) {
      curves.push_back({layer, kv_head, {}, {}, true});
    }
    ReadBudgetCurve& c = curves.back();
    if (budget != int(c.lower.size()) + 1) {
      throw InputError(path, where + " budget_size",
                       std::to_string(c.lower.size() + 1) + " (budgets 1..K of a head in consecutive rows)",
                       std::to_string(budget));
    }
    c.lower.push_back(lower);
    c.upper.push_back(upper);
    c.exact = c.exact && status == "optimal";
  }
  if (curves.empty()) throw InputError(path, "rows", "at least one head's curve", "none");
  return curves;
}

}  // namespace subevict::greedy
