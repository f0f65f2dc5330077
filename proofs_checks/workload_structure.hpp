#pragma once
/// \file
/// Claims about attention workloads rather than algorithms (theory.md §8): H2O §3's sparsity and
/// power-law accumulated attention, and the L2-norm paper's negative correlation between key norm
/// and received attention. Each is measured on the given workload (core/workload_stats.hpp): held
/// or violated describes the workload, not the library.

#include "core/workload.hpp"
#include "core/workload_stats.hpp"
#include "proofs_checks/check.hpp"

namespace subevict::proofs_checks {

/// Share of the layers allowed to miss a per-layer threshold while the claim ("almost all
/// layers") still counts as held: at most floor(kAlmostAllSlack · layers) layers. Such a claim is
/// one instance, the layer set: violated (one violation, its counterexample counting the layers
/// that miss) when more miss, else held with no violation; the layers that miss are the
/// measurement layers_missing either way.
inline constexpr double kAlmostAllSlack = 0.1;

/// A workload with its per-head statistics measured once: the structure checks share them.
struct InspectedWorkload {
  const Workload* workload = nullptr;  ///< not owned; outlives this
  InspectOptions options;
  std::vector<HeadStatistics> heads;  ///< inspect_workload(*workload, options)
};

/// Measures `workload` (inspect_workload) for the structure checks. Cost O(layers · heads · n² · d).
InspectedWorkload inspect_for_checks(const Workload& workload, const InspectOptions& options = {});

/// The mean over the heads of each layer of `member`, indexed by layer (0..layers-1).
std::vector<double> layer_means(const InspectedWorkload& inspected, double HeadStatistics::*member);

/// Every check below reads the layers that occur in inspected.heads (InspectOptions::layers
/// chooses them), and excludes layers 0 and 1 among those where it says so.
///
/// h2o.sec3_sparsity: per layer, the mean over heads of the fraction of causal attention entries
/// below tau · row max (InspectOptions::tau) must exceed `threshold` (H2O: 95%) in almost all
/// layers (one instance, kAlmostAllSlack). Requires tokens > sinks + recent_window + 2 (InspectOptions).
[[nodiscard]] CheckResult check_sec3_sparsity(const InspectedWorkload& inspected, double threshold = 0.95);

/// h2o.sec3_power_law: per layer, the mean over heads of the R² of the log-log fit of accumulated
/// attention against rank (non-sink tokens, ranks 1..n/2) must reach `min_r2` in almost all layers.
/// The default 0.95 separates a heavy tail from plain causal decay: uniform causal attention
/// (a_ij = 1/(i+1), acc_j ≈ log(n/j)) already fits at R² ≈ 0.89 for n = 128..512.
[[nodiscard]] CheckResult check_sec3_power_law(const InspectedWorkload& inspected, double min_r2 = 0.95);

/// l2norm.attention_correlation: per layer (excluding layers 0 and 1 as the paper does, unless the
/// workload has no other layers, in which case all are used and the notes say so), the mean over
/// heads of the Spearman ρ between ‖k_j‖ and the mean attention token j receives (middle tokens,
/// HeadStatistics::norm_attention_spearman) must be significantly negative:
/// ρ < −2 / sqrt(heads · (m − 1)), m the number of middle tokens (two standard errors of ρ under
/// independence). Instances are layers; a layer whose ρ is not below the threshold is a violation.
/// `standard_errors` replaces the 2 of the threshold.
[[nodiscard]] CheckResult check_l2norm_correlation(const InspectedWorkload& inspected, double standard_errors = 2.0);

/// streamingllm.attention_sinks: in every layer but the first two (all layers when the workload
/// has no others), the mean over heads of the attention on the first token (queries i >= 64,
/// HeadStatistics::first_token_mass) exceeds `threshold` (0.5: the first token holds most of the
/// attention), in almost all of those layers (one instance, kAlmostAllSlack).
[[nodiscard]] CheckResult check_attention_sinks(const InspectedWorkload& inspected, double threshold = 0.5);

}  // namespace subevict::proofs_checks
