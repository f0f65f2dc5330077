#pragma once
/// \file
/// The share study (docs/allocation.md): adaptive budget rules (uniform, AdaKV, PyramidKV, a
/// DuoAttention-style split; share_rule.hpp), each with every scoring policy given, against three
/// optima of the same total budget on a workload's KV heads: uniform per-head OPT, the optimal
/// static allocation and the optimum of one cache shared over time. `simulate --share` and
/// Python's subevict.share format what it returns.
///
/// Units: a head's retained mass is Σ_i Σ_{query heads} r_i^h, the objective of the optima. A unit
/// is a layer (scope "layer": the layer's H KV heads share H k slots) or the whole model (scope
/// "model": every selected KV head shares L H k slots).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/workload.hpp"
#include "greedy/eviction/budgets/share_plan.hpp"
#include "greedy/eviction/budgets/share_rule.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"

namespace subevict::greedy {

struct ShareStudyOptions {
  bool model = false;  ///< the scope: the whole model (true) or each layer (false)
  int budget = 1;      ///< k, the mean per KV head
  std::string curves;  ///< a budget_curve.csv to read the curves from (else computed)
  /// Where the shared optimum needs the column generation (the explicit network does not fit):
  /// stop after the round that passes this many seconds, with its certified interval; 0: no limit.
  double shared_seconds = 600.0;
  int threads = 1;     ///< workers over heads and units
  bool quiet = false;  ///< no progress on stderr
  std::string progress_label = "share";  ///< the progress line's label
  std::uint64_t seed = 0;
  /// How errors and notes name the request: the source and the fields of the scorers, the rules
  /// and the time limit.
  std::string source = "share", policies_field = "policies", rules_field = "rules",
              shared_seconds_field = "shared_seconds";
};

/// The three optima of every head and unit.
struct ShareOptima {
  std::vector<double> uniform;     ///< per head, OPT_h(k)
  std::vector<double> fixed;       ///< per head, OPT_h(k_h*) of the unit's static allocation
  std::vector<int> allocation;     ///< per head, k_h*
  bool capped = false;             ///< the curves stop below the largest k_h the unit allows
  int curve_length = 0;            ///< K of the curves
  std::vector<std::optional<double>> shared;        ///< per unit (none: not computed)
  std::vector<std::optional<double>> shared_bound;  ///< per unit, the certified upper bound
  std::vector<std::vector<double>> shared_slots;    ///< per unit, per head of the unit: mean occupancy
  std::string shared_note;  ///< how the shared optimum was found, or why it was not computed
};

/// One rule with one scorer: every head's retained mass and the slots it used.
struct ShareRuleRun {
  std::string rule, scorer;
  std::vector<double> mass;        ///< per head, Σ_i Σ_{query heads} r
  std::vector<double> mean_slots;  ///< per head, the mean over steps of its cache size
  std::vector<long long> peak;     ///< per unit, the largest Σ over its heads of cache sizes at a step
  std::string note;                ///< what the rule did (fallbacks, the split)
};

struct ShareStudy {
  ShareHeads shares;  ///< the heads (layer-major) and the units
  int budget = 1;     ///< k
  bool model = false;
  ShareOptima optima;
  std::vector<ShareRuleRun> runs;  ///< per rule, per scorer, in the order given

  /// "the model" or "layer L" for unit u.
  [[nodiscard]] std::string unit_name(std::size_t u) const;
};

/// Runs the study on every KV head of `layers` of `w`. Every check comes before any work: throws
/// InputError (options.source, naming the field) for a scorer that does not rank, pyramidkv on one
/// layer's scope, a budget a rule gives a head that its policy rejects, a budget a rule cannot
/// split, or curves (options.curves) that are not exact or do not cover the heads up to k. The
/// optima are checked against their order (uniform <= static <= shared bound in every unit, at
/// rounding slack): curves read from another workload are an InputError naming the file, any
/// other break a std::runtime_error. Precondition: every scorer accepts the budget k; layers are
/// valid layers of w.
[[nodiscard]] ShareStudy share_study(const Workload& w, const std::vector<int>& layers,
                                     const std::vector<ShareRule>& rules, const std::vector<PolicySpec>& scorers,
                                     const ShareStudyOptions& options);

}  // namespace subevict::greedy
