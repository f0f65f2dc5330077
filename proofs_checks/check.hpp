#pragma once
/// \file
/// One executable guarantee of the theory: what it states, what it needs, and what a run of it
/// measured. Every check in the registry implements `Check`; `subevict verify` runs them and turns
/// their `CheckResult`s into a table, `results.json` and `report.md`.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/statistics.hpp"
#include "core/workload.hpp"
#include "core/workload_stats.hpp"

namespace subevict::proofs_checks {

/// What a run of a check concluded.
/// - held: on every instance where the hypotheses held, the conclusion held.
/// - violated: at least one instance satisfied the hypotheses and not the conclusion (for an
///   erratum check: the printed form was shown to fail AND the corrected form held is `held`;
///   the corrected form failing is `violated`).
/// - hypotheses_not_met: no instance satisfied the hypotheses, so the conclusion was not tested.
/// - inconclusive: the run could not decide (e.g. a solver did not finish, too few instances).
enum class Outcome { held, violated, hypotheses_not_met, inconclusive };

/// "held", "violated", "hypotheses not met", "inconclusive".
const char* outcome_name(Outcome outcome);

/// One named number a check measured. Every number quoted in report.md is one of these, so it
/// can be traced to results.json by (check id, name).
struct Measurement {
  std::string name;         ///< snake_case key, unique within the check, e.g. "min_slack"
  double value = 0;         ///< may be ±inf; never NaN (use `inconclusive` instead)
  std::string description;  ///< one short phrase with the unit, e.g. "smallest f(S_G) - bound"
};

/// A small instance on which the hypotheses held and the conclusion failed (or, for an erratum,
/// the printed form failed), described so that a reader can reproduce it by hand.
struct Counterexample {
  std::string description;  ///< plain words: the instance, the step, both sides of the inequality
  std::vector<Measurement> numbers;  ///< the quantities the description quotes
};

/// A series for a plot: y against x, one line in the figure named by `plot`.
struct Series {
  std::string plot;    ///< file stem of the figure, e.g. "greedy_vs_optimum"; several series share one
  std::string label;   ///< legend entry
  std::string x_label, y_label;
  std::vector<double> x, y;
};

/// The result of one run of one check.
struct CheckResult {
  Outcome outcome = Outcome::inconclusive;
  std::string key_number;      ///< the table's one-line headline, e.g. "min slack 0.012 (4800 steps)"
  long long instances = 0;     ///< instances (or steps) evaluated
  long long hypotheses_held = 0;  ///< of those, how many satisfied the hypotheses
  long long violations = 0;    ///< of those, how many failed the conclusion
  /// Smallest (conclusion lhs − rhs) over the instances whose hypotheses held; +inf when none.
  double worst_slack = std::numeric_limits<double>::infinity();
  /// Clopper–Pearson 95% interval for violations / hypotheses_held ([0, 1] when none held).
  Interval violation_rate{0.0, 1.0};
  std::optional<Counterexample> counterexample;  ///< the smallest one found, when violated
  std::vector<Measurement> measurements;
  std::vector<Series> series;
  std::string notes;  ///< anything a reader must know to interpret the numbers
};

/// Fills outcome, violation_rate and key_number's counts from instances, hypotheses_held and
/// violations: violated if violations > 0, held if hypotheses_held > 0, else hypotheses_not_met.
void conclude(CheckResult& result);

/// Everything a check may read. Checks draw all randomness from `seed` (no global state), and
/// scale their instance counts by `effort` (1 = the default `verify` budget of a few seconds per
/// check on 2 cores; tests pass smaller values).
struct CheckContext {
  const Workload* workload = nullptr;  ///< the LLM-like (or imported) workload; never null in verify
  std::uint64_t seed = 0;
  double effort = 1.0;  ///< > 0
  double budget_ratio = 0.2;  ///< cache budget k = ceil(ratio · tokens) for dynamic checks
  /// inspect_workload(*workload) with default InspectOptions when the caller measured it once for
  /// every structure check (verify does); null: each check measures the workload itself.
  const std::vector<HeadStatistics>* head_statistics = nullptr;
};

/// Static description of a check, shown by `verify --list` and in the report.
struct CheckInfo {
  std::string id;          ///< e.g. "h2o.lemma_d29"; lower case, dot-separated
  std::string reference;   ///< e.g. "H2O, Lemma D.29"
  std::string statement;   ///< the claim in words
  std::string hypotheses;  ///< as checked (formulas in theory.md notation)
  std::string conclusion;  ///< as checked
  std::vector<std::string> families;  ///< "random small", "LLM-like workload", "adversarial", ...
  std::string source;      ///< the source file implementing it, e.g. "proofs_checks/dynamic_lemmas.cpp"
};

/// One executable guarantee. Implementations are stateless; `run` is const and thread-compatible.
class Check {
 public:
  virtual ~Check() = default;
  virtual CheckInfo info() const = 0;
  /// Runs the check. Throws only on programming errors or invalid context; a violated or
  /// unverifiable claim is a result, not an exception.
  virtual CheckResult run(const CheckContext& context) const = 0;
};

}  // namespace subevict::proofs_checks
