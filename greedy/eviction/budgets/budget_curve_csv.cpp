#include "greedy/eviction/budgets/budget_curve_csv.hpp"

#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include "core/input_error.hpp"
#include "core/number_text.hpp"
#include "core/sha256.hpp"
#include "greedy/eviction/budgets/budget_allocation.hpp"
#include "greedy/eviction/process/head_group_sha256.hpp"

namespace subevict::greedy {
namespace {

constexpr const char* kHeader =
    "layer,kv_head,budget_size,optimum_lower_bound,optimum_upper_bound,status,curve_seconds,tokens,head_sha256";
/// The header before the curves named their workload: such a file cannot be checked against one.
constexpr const char* kUnidentifiedHeader =
    "layer,kv_head,budget_size,optimum_lower_bound,optimum_upper_bound,status,curve_seconds";
constexpr std::size_t kFields = 9;

std::string head_name(int layer, int kv_head) {
  return "layer " + std::to_string(layer) + ", KV head " + std::to_string(kv_head);
}

}  // namespace

std::string budget_curve_csv(const std::vector<BudgetCurve>& curves) {
  std::ostringstream csv;
  csv << kHeader << '\n';
  for (const BudgetCurve& c : curves) {
    const double g = c.heads;
    for (const BudgetCurvePoint& p : c.points) {
      csv << c.layer << ',' << c.kv_head << ',' << p.budget << ',' << significant_digits(p.value / g, 17) << ','
          << significant_digits(p.upper_bound / g, 17) << ',' << to_string(p.status) << ','
          << significant_digits(c.seconds, 4) << ',' << c.tokens << ',' << c.head_sha256 << '\n';
    }
  }
  return csv.str();
}

std::vector<ReadBudgetCurve> read_budget_curve_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "file", "a readable budget_curve.csv (simulate --budget-curve K)", "cannot open it");
  std::string line;
  const bool read = bool(std::getline(in, line));
  if (read && line == kUnidentifiedHeader) {
    throw InputError(path, "header",
                     "the columns tokens and head_sha256 after curve_seconds (the workload the curves belong to)",
                     "a budget_curve.csv written before them: regenerate it with simulate --budget-curve K");
  }
  if (!read || line != kHeader) throw InputError(path, "header", std::string("'") + kHeader + "'", "'" + line + "'");
  std::vector<ReadBudgetCurve> curves;
  std::map<std::pair<int, int>, int> first_line;  // (layer, kv_head) -> the line its rows begin at
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const std::string where = "line " + std::to_string(number);
    std::vector<std::string> fields;
    std::stringstream row(line);
    for (std::string field; std::getline(row, field, ',');) fields.push_back(field);
    if (fields.size() != kFields) {
      throw InputError(path, where, std::to_string(kFields) + " comma-separated fields", std::to_string(fields.size()));
    }
    auto integer = [&](int index, const char* name, int least) {
      const std::string& f = fields[std::size_t(index)];
      const std::optional<int> v = whole_number<int>(f);
      if (!v || *v < least) {
        throw InputError(path, where + " " + name, "an integer >= " + std::to_string(least), "'" + f + "'");
      }
      return *v;
    };
    auto real = [&](int index, const char* name) {
      const std::optional<double> v = finite_number(fields[std::size_t(index)]);
      if (!v) throw InputError(path, where + " " + name, "a finite number", "'" + fields[std::size_t(index)] + "'");
      return *v;
    };
    const int layer = integer(0, "layer", 0), kv_head = integer(1, "kv_head", 0), budget = integer(2, "budget_size", 1);
    const double lower = real(3, "optimum_lower_bound"), upper = real(4, "optimum_upper_bound");
    const std::string& status = fields[5];
    if (status != "optimal" && status != "feasible") {
      throw InputError(path, where + " status", "optimal or feasible", "'" + status + "'");
    }
    const int tokens = integer(7, "tokens", 1);
    const std::string& sha = fields[8];
    if (!is_sha256_hex(sha)) throw InputError(path, where + " head_sha256", "64 lowercase hex digits", "'" + sha + "'");
    const bool same_head = !curves.empty() && curves.back().layer == layer && curves.back().kv_head == kv_head;
    if (!same_head || budget == 1) {  // a head's rows begin (budget 1 again: the same head once more)
      const auto [seen, fresh] = first_line.emplace(std::pair{layer, kv_head}, number);
      if (!fresh) {
        throw InputError(path, where, "each head's rows once (budgets 1..K of a head in consecutive rows)",
                         head_name(layer, kv_head) + " again (its rows begin at line " + std::to_string(seen->second) + ")");
      }
      if (!curves.empty() && tokens != curves.front().tokens) {
        throw InputError(path, where + " tokens",
                         std::to_string(curves.front().tokens) + " as every head's before it (one workload's curves)",
                         std::to_string(tokens));
      }
      curves.push_back({layer, kv_head, {}, {}, true, tokens, sha, {}});
    }
    ReadBudgetCurve& c = curves.back();
    if (budget != int(c.lower.size()) + 1) {
      throw InputError(path, where + " budget_size",
                       std::to_string(c.lower.size() + 1) + " (budgets 1..K of a head in consecutive rows)",
                       std::to_string(budget));
    }
    if (tokens != c.tokens || sha != c.head_sha256) {
      throw InputError(path, where + (tokens != c.tokens ? " tokens" : " head_sha256"),
                       "the value of the head's first row (line " + std::to_string(c.lines.front()) + "): " +
                           (tokens != c.tokens ? std::to_string(c.tokens) : c.head_sha256),
                       tokens != c.tokens ? std::to_string(tokens) : sha);
    }
    if (budget > tokens) {
      throw InputError(path, where + " budget_size", "at most the tokens (" + std::to_string(tokens) + ")",
                       std::to_string(budget));
    }
    c.lower.push_back(lower);
    c.upper.push_back(upper);
    c.lines.push_back(number);
    c.exact = c.exact && status == "optimal";
  }
  if (curves.empty()) throw InputError(path, "rows", "at least one head's curve", "none");
  for (const ReadBudgetCurve& c : curves) {
    const int k = c.exact ? first_decrease(c.lower) : 0;
    if (k > 0) {
      throw InputError(path, "line " + std::to_string(c.lines[std::size_t(k) - 1]) + " optimum_lower_bound",
                       "at least OPT(" + std::to_string(k - 1) + ") = " + significant_digits(c.lower[std::size_t(k) - 2], 17) +
                           " of " + head_name(c.layer, c.kv_head) + " (an optimum never decreases with the budget)",
                       significant_digits(c.lower[std::size_t(k) - 1], 17));
    }
  }
  return curves;
}

void check_curve_workload(const ReadBudgetCurve& curve, const HeadGroup& group, const std::string& path) {
  const std::string where = "line " + std::to_string(curve.lines.empty() ? 0 : curve.lines.front());
  const std::string regenerate = "; curves hold only for the tensors they were computed on: regenerate them with "
                                 "simulate --budget-curve K on this workload";
  const std::string head = head_name(curve.layer, curve.kv_head);
  if (curve.tokens != group.tokens()) {
    throw InputError(path, where + " tokens (" + head + ")",
                     std::to_string(group.tokens()) + " (the workload's" + regenerate + ")",
                     std::to_string(curve.tokens));
  }
  const std::string sha = head_group_sha256(group);
  if (curve.head_sha256 != sha) {
    throw InputError(path, where + " head_sha256 (" + head + ")",
                     sha + " (this workload's " + head + regenerate + ")", curve.head_sha256);
  }
}

}  // namespace subevict::greedy
