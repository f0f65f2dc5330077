#pragma once
/// \file
/// Fitted twins: the per-layer LLM-like parameters (core/generator_profile.hpp) whose generated
/// attention reproduces a real workload's measured per-layer statistics (core/workload_stats.hpp).
/// A researcher with one export of a model can then generate a synthetic twin of it at any length
/// and on any backend.
///
/// Fitted, per layer, each statistic by the parameter that drives it (the others held):
///   sparsity                 <- content_logit_std (spread of the content scores)
///   first_token_mass         <- sink_logit, with one sink token, low-norm (low_norm_sinks) where
///                               the real layer's first key has a below-median norm, exact
///                               (exact_sinks) where the layer has sink heads, and the exact
///                               sink-head count (sink_heads) set from the real layer's
///                               sink-head rate, so every seed of the twin has as many
///   received_top_share       <- heavy_logit (salience of heavy-hitter token types)
///   recent_mass              <- recency_logit (RoPE recency on the layer's base), window
///                               FitOptions::inspect
///   norm_attention_spearman  <- norm_logit_range (positive: low-norm keys attract attention;
///                               negative: high-norm keys do)
/// by Broyden's method (a secant Jacobian of all five, measured afresh by finite differences when
/// the search stalls) on generated copies of the layer, generated with the
/// layer's own random streams, so the twin's layer l is the workload the fit measured (with
/// FitOptions::seeds > 1: the mean over that many seeds' copies is matched).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/generator_profile.hpp"
#include "core/workload.hpp"
#include "core/workload_stats.hpp"

namespace subevict {

/// One statistic the fit matches, with the tolerance the fit aims for (the distance at which a
/// layer counts as matched).
struct FitStatistic {
  const char* name;
  double HeadStatistics::*member;
  double tolerance;
};

/// The fitted statistics in the order fit results list them: sparsity (0.03), first_token_mass
/// (0.08), received_top_share (0.08), recent_mass (0.08, over FitOptions::inspect.recent_window
/// keys), norm_attention_spearman (0.15).
const std::vector<FitStatistic>& fit_statistics();

/// Settings of fit_profile.
struct FitOptions {
  std::uint64_t seed = 0;      ///< the twin's seed: the fit generates with it
  /// Seeds seed .. seed + seeds - 1 each generate a copy per evaluation, and the fit matches the
  /// mean of their statistics (a twin describes a model, not one draw). 1: the fit's own draw only,
  /// so the twin generated with `seed` is exactly what the fit measured. Cost is linear in it.
  int seeds = 1;
  /// Generated copies measured per layer (>= 1); a layer within a quarter of every tolerance stops
  /// early. 30 (14 before issue 28 item 5: SmolLM2's layers 14, 15, 17 and 20 needed more).
  int max_evaluations = 30;
  double rope_base = 10000.0;  ///< RoPE base of the twin (the model's own where known)
  /// Per real layer, that layer's RoPE base (a model whose sliding-window layers rotate on a local
  /// base); empty: rope_base in every layer. Otherwise exactly one entry per layer, each > 1.
  std::vector<double> rope_bases;
  int tokens = 0;              ///< tokens of the generated copies (0: the real workload's)
  /// How statistics are measured; its `progress`, if set, reports the measurement of the real
  /// workload (heads), before the layers are fitted.
  InspectOptions inspect = [] {
    InspectOptions o;
    o.recent_window = 64;
    return o;
  }();
  int threads = 0;  ///< layers fitted in parallel (0: OpenMP default); results do not depend on it
  /// Called after each fitted layer with (layers done, layers in all), one thread at a time.
  std::function<void(int, int)> progress;
};

/// The fit of one layer.
struct LayerFit {
  int layer = 0;
  LlmLikeParams params;        ///< the fitted parameters
  LayerStatistics target;      ///< the real layer, measured
  LayerStatistics fitted;      ///< the generated layer with `params`, measured the same way
  int evaluations = 0;         ///< generated copies measured
  /// max over fit_statistics() of |fitted - target| / tolerance (<= 1: every statistic matched).
  double error = 0;
};

/// The whole fit: the profile to write and each layer's numbers.
struct ProfileFit {
  GeneratorProfile profile;
  std::vector<LayerFit> layers;
};

/// max over fit_statistics() of |a - b| / tolerance, on the layer means.
double fit_error(const LayerStatistics& a, const LayerStatistics& b);

/// Fits one LLM-like parameter set per layer of `real` (tokens > 2 · inspect.recent_window,
/// head_dim even and >= 8) so that each generated layer's statistics match the real layer's
/// (FitStatistic tolerances); `name` names the profile. Returns the best parameters found per
/// layer (smallest fit_error) even where a statistic could not be matched. Throws InputError for
/// an unusable workload or options. Cost O(layers · max_evaluations · q_heads · n² · d).
ProfileFit fit_profile(const Workload& real, const std::string& name, const FitOptions& options = {});

}  // namespace subevict
