#pragma once
/// \file
/// A sweep job: one cell of an experiment grid (workload × policy × budget × optimum setting),
/// its stable id, and its evaluation on every (layer, KV head) of the generated workload (or of
/// the job's layer set).
///
/// Metrics (units as in `subevict simulate`: retained attention mass per step, mean over the g
/// query heads of a KV head, so a step contributes at most 1): for each (layer, KV head) group
/// the run's mean retained mass is Σ_i r_i / n; the job reports the mean over the groups. The
/// optimum columns are computed on the group's summed attention and scaled the same way.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/generator.hpp"
#include "greedy/eviction/evaluation/head_evaluation.hpp"

namespace subevict::sweep {

/// How a budget was written in the grid: a ratio of the sequence length in (0, 1] (k =
/// max(1, round(ratio n))) or an absolute size in [1, n].
enum class BudgetKind { kRatio, kSize };

/// "ratio" / "size".
[[nodiscard]] std::string to_string(BudgetKind kind);

/// Everything that determines one job's result.
struct Job {
  WorkloadSpec workload;     ///< resolved: tokens and layers are the actual ones, params final
  /// The layers to run, ascending, each once and < workload.shape.layers; empty: every layer of
  /// the workload. A grid's layer set generates layers 0 up to its last and runs only these; a set
  /// that is every layer from 0 (0-3, all) is stored empty, so it is the same job as the count.
  std::vector<int> layers;
  std::string policy;        ///< a policy spec's label (greedy/eviction/policies/policy_spec.hpp): NAME or NAME:KEY=VALUE,...
  int horizon = 16;          ///< lookahead's window (only in the id when policy is lookahead)
  BudgetKind budget_kind = BudgetKind::kRatio;
  double budget_value = 0.1; ///< the ratio, or the size as a double
  greedy::OptimumMode optimum = greedy::OptimumMode::kFlow;

  /// k for this workload's n (Budget::resolve).
  [[nodiscard]] int budget_size() const;
  /// The layers run_job evaluates: `layers`, or 0 .. workload.shape.layers - 1 when it is empty.
  [[nodiscard]] std::vector<int> run_layers() const;
  /// The canonical parameter string: "subevict.sweep.v1" then key=value pairs in a fixed order,
  /// every double with 17 significant digits, every LLM-like parameter included (defaults too),
  /// so equal strings mean equal computations. A non-empty `layers` adds ";layer_set=SET"
  /// (format_index_set) after ";layers=N"; jobs without a set keep the string they always had.
  [[nodiscard]] std::string canonical() const;
  /// The stable id: 64-bit FNV-1a of canonical(), as 16 lower-case hex digits.
  [[nodiscard]] std::string id() const;
};

/// `x` with 17 significant digits ("%.17g"): reads back as the same double.
[[nodiscard]] std::string exact_text(double x);

/// The 64-bit FNV-1a hash of `text` as 16 lower-case hex digits (fixed by its published offset
/// basis 0xcbf29ce484222325 and prime 0x100000001b3; independent of platform and build).
[[nodiscard]] std::string fnv1a_hex(const std::string& text);

/// A finished job's metrics. Optional values are absent when the job's optimum setting does not
/// compute them (oracle: no OPT; none: neither).
struct JobResult {
  int groups = 0;                  ///< (layer, KV head) groups evaluated
  int budget_size = 0;             ///< k
  double mean_retained_mass = 0;   ///< mean over groups of Σ_i r_i / n
  double mean_total_variation = 0; ///< mean over groups and steps of 1 − r_i
  double mean_output_error = 0;    ///< mean over groups and steps of ‖o − õ‖ / ‖o‖
  int uncompressed_groups = 0;     ///< groups the policy did not compress (l2norm's skipped layers)
  std::optional<double> optimum_mean_retained_mass;  ///< OPT_irreversible, same units
  std::optional<double> oracle_mean_retained_mass;   ///< Σ_i U_i, same units
  std::optional<double> ratio_to_optimum;            ///< Σ policy mass / Σ OPT over the groups
};

/// Generates the job's workload and evaluates the policy on every KV head of its run_layers(). Deterministic
/// for a fixed OpenMP/Eigen thread count (Eigen's parallel products split sums by thread count;
/// `subevict sweep` runs every job with one thread, so every process computes the same bits).
/// Throws as generate_workload and greedy::evaluate_head do.
[[nodiscard]] JobResult run_job(const Job& job);

}  // namespace subevict::sweep
