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
#include "greedy/eviction/policies/policy_spec.hpp"

namespace subevict::proofs_checks {

/// What kind of statement a check tests. The kind fixes which outcomes its results may have
/// (outcome_allowed) and how `verify` counts them (proofs_checks/summary.hpp).
/// - claim: a falsifiable statement, hypotheses ⇒ conclusion, taken from a paper or theory.md and
///   tested on instances where it could fail: a theorem or lemma whose proof or constants could be
///   wrong, or an empirical statement about attention. Outcomes: held, violated, vacuous,
///   hypotheses_not_met, inconclusive.
/// - measurement: reports numbers (constants, ratios, rounding errors) and claims nothing that an
///   instance could refute: the constants are fitted as the smallest values that make a condition
///   hold, or the property follows from the definitions in one step, so only rounding or a bug
///   could move the numbers. It never holds and is never violated. Outcomes: measured (its numbers
///   are in `measurements` and the key number), inconclusive (nothing could be measured, or the
///   check stopped with an error). Its result leaves hypotheses_held and violations at 0 and has
///   no counterexample.
/// - erratum: a printed form in a paper and its correction. Outcomes: held, printed "confirmed"
///   (status_name): the printed form was shown to fail on some instance AND the corrected form
///   held on every instance whose hypotheses held; violated: the corrected form failed (then
///   `counterexample` is the corrected form's failure); hypotheses_not_met: the corrected form's
///   hypotheses never held; inconclusive: the printed form was not shown to fail, or the run
///   could not decide.
enum class Kind { claim, measurement, erratum };

/// "claim", "measurement", "erratum".
const char* kind_name(Kind kind);

/// What a run of a check concluded; which values a check may report depends on its Kind.
/// - held: on every instance where the hypotheses held, the conclusion held, and on at least one of
///   them the conclusion could have failed (claims; for an erratum: confirmed, see Kind).
/// - vacuous: the hypotheses held on some instances and the conclusion held on all of them, but on
///   none could it have failed: its bound was at or above the largest value its quantity can take
///   on that instance (claims only; CheckResult::vacuous counts such instances).
/// - violated: at least one instance satisfied the hypotheses and not the conclusion (for an
///   erratum: the corrected form failed).
/// - hypotheses_not_met: no instance satisfied the hypotheses, so the conclusion was not tested.
/// - inconclusive: the run could not decide (e.g. a solver did not finish, too few instances).
/// - measured: a measurement's numbers were computed (measurements only).
enum class Outcome { held, violated, hypotheses_not_met, inconclusive, measured, vacuous };

/// "held", "violated", "hypotheses not met", "inconclusive", "measured", "vacuous".
const char* outcome_name(Outcome outcome);

/// Whether a check of `kind` may report `outcome`: measured and inconclusive for a measurement;
/// every outcome except measured for a claim; every outcome except measured and vacuous for an
/// erratum.
bool outcome_allowed(Kind kind, Outcome outcome);

/// The word the table, report.md and results.json print for a result: "confirmed" for an erratum
/// that held, outcome_name(outcome) otherwise. Throws std::invalid_argument when
/// !outcome_allowed(kind, outcome).
const char* status_name(Kind kind, Outcome outcome);

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

/// How a Series is drawn in its figure (core/plot.hpp draws it).
/// - line: points joined in x order over a numeric x axis (k, a budget, an iteration, R).
/// - categorical: one unjoined marker per x, each x a category (a layer, a (layer, KV head)
///   group); a figure with any categorical series has a categorical x axis, whose categories are
///   the distinct x of the figure's series in ascending order, named by `x_names`, and draws
///   every series of it side by side within each category, never joined.
/// - bound: like line, drawn as a dashed black reference curve (a closed-form bound or optimum).
/// - threshold: a horizontal dashed line at y[0] across the figure (a claim's threshold).
enum class SeriesStyle { line, categorical, bound, threshold };

/// A series for a plot: y against x, one legend entry in the figure named by `plot`.
struct Series {
  std::string plot;    ///< file stem of the figure, e.g. "greedy_vs_optimum"; several series share one
  std::string label;   ///< legend entry
  std::string x_label, y_label;  ///< axis labels with units; the first series of a plot sets them
  std::vector<double> x, y;
  SeriesStyle style = SeriesStyle::line;
  std::vector<std::string> x_names{};  ///< categorical: the name of category x[i] (empty: the number x[i])
  std::string title{};  ///< the figure's title: the first non-empty one of a plot's series (none: y against x)
};

/// The result of one run of one check.
struct CheckResult {
  Outcome outcome = Outcome::inconclusive;
  std::string key_number;      ///< the table's one-line headline, e.g. "min slack 0.012 (4800 steps)"
  long long instances = 0;     ///< instances (or steps) evaluated
  long long hypotheses_held = 0;  ///< of those, how many satisfied the hypotheses
  long long violations = 0;    ///< of those, how many failed the conclusion
  /// Of the instances whose hypotheses held, how many could not have failed the conclusion: its
  /// bound was at or above the largest value its quantity can take there (claims; 0 otherwise).
  long long vacuous = 0;
  /// Smallest (conclusion lhs − rhs) over the instances whose hypotheses held; +inf when none.
  double worst_slack = std::numeric_limits<double>::infinity();
  /// Clopper–Pearson 95% interval for violations / hypotheses_held ([0, 1] when none held).
  Interval violation_rate{0.0, 1.0};
  std::optional<Counterexample> counterexample;  ///< the smallest one found, when violated
  std::vector<Measurement> measurements;
  std::vector<Series> series;
  std::string notes;  ///< anything a reader must know to interpret the numbers
};

/// The value of the measurement named `name` in `result`. Throws std::out_of_range naming it when
/// there is none. O(measurements).
double measurement_value(const CheckResult& result, const std::string& name);

/// For a claim or an erratum: fills outcome and violation_rate from instances, hypotheses_held,
/// vacuous and violations: violated if violations > 0, held if some instance whose hypotheses held
/// was not vacuous, vacuous if every one was, else hypotheses_not_met. The violation rate is over
/// the instances that could fail (hypotheses_held - vacuous). Throws std::invalid_argument unless
/// 0 <= violations <= hypotheses_held - vacuous, 0 <= vacuous and hypotheses_held <= instances.
void conclude(CheckResult& result);

/// For a measurement: outcome measured when instances > 0, else inconclusive. Throws
/// std::logic_error when the result carries a claim's verdict (hypotheses_held or violations
/// non-zero, or a counterexample): a measurement reports its numbers in `measurements`.
void conclude_measurement(CheckResult& result);

/// Clears a result's verdict: hypotheses_held, violations and vacuous to 0, no counterexample,
/// worst_slack +inf (instances, measurements, series, key number and notes are kept). The caller
/// concludes again.
void clear_verdict(CheckResult& result);

/// A claim's result reported as a measurement, for a statement whose conclusion follows from the
/// way the run produces its instances (a one-step identity, a fitted constant): the counts become
/// numbers (instances_with_hypotheses, conclusion_failures, worst_slack when finite), the
/// counterexample's description goes into the notes, and the verdict fields are cleared before
/// conclude_measurement. The other measurements, series and key number are kept.
[[nodiscard]] CheckResult verdict_as_measurement(CheckResult result);

/// Everything a check may read. Checks draw all randomness from `seed` (no global state), and
/// scale their instance counts by `effort` (1 = the default `verify` budget of a few seconds per
/// check on 2 cores; tests pass smaller values).
struct CheckContext {
  const Workload* workload = nullptr;  ///< the LLM-like (or imported) workload; never null in verify
  std::uint64_t seed = 0;
  double effort = 1.0;  ///< > 0
  double budget_ratio = 0.2;  ///< cache budget k = ceil(ratio · tokens) for dynamic checks
  /// inspect_workload(*workload) with default InspectOptions except `layers` (= checked_layers)
  /// when the caller measured it once for every structure check (verify does); null: each check
  /// measures the workload itself.
  const std::vector<HeadStatistics>* head_statistics = nullptr;
  /// The layers of the workload the checks read, ascending, each in range (verify --layers); empty:
  /// every layer. Every check that reads the workload picks its heads from these layers only.
  std::vector<int> layers;
  /// The policies h2o.greedy_vs_offline_optimum compares with the optimum (verify --policy); empty:
  /// its default comparison_policies (proofs_checks/offline_gap.hpp).
  std::vector<greedy::PolicySpec> policies;
};

/// context.layers, or every layer of context.workload when it is empty (none without a workload).
[[nodiscard]] std::vector<int> checked_layers(const CheckContext& context);

/// Static description of a check, shown by `verify --list` and in the report.
struct CheckInfo {
  std::string id;          ///< e.g. "h2o.lemma_d29"; lower case, dot-separated
  std::string reference;   ///< e.g. "H2O, Lemma D.29"
  std::string statement;   ///< the claim in words
  std::string hypotheses;  ///< as checked (formulas in theory.md notation)
  std::string conclusion;  ///< as checked
  std::vector<std::string> families;  ///< "random small", "LLM-like workload", "adversarial", ...
  std::string source;      ///< the source file implementing it, e.g. "proofs_checks/dynamic_lemmas.cpp"
  /// What the check tests (see Kind). For a measurement, `statement` says what is measured and why
  /// it cannot fail, `hypotheses` the setting it is measured in, `conclusion` the numbers reported.
  Kind kind = Kind::claim;
};

/// Throws std::logic_error naming the check when !outcome_allowed(info.kind, result.outcome), or
/// when a measurement's result carries a claim's verdict (see conclude_measurement). The runner
/// calls it on every result, so a measurement can never be reported as held.
void require_consistent(const CheckInfo& info, const CheckResult& result);

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
