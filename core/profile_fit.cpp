#include "core/profile_fit.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "core/counter_rng.hpp"
#include "core/generator.hpp"
#include "core/input_error.hpp"

namespace subevict {
namespace {

constexpr int kKnobs = 5;  // one parameter per fitted statistic, in fit_statistics() order

/// How each parameter moves its statistic: the slope assumed until two measurements give a
/// secant (statistic units per parameter unit, with its sign), the largest step, and bounds.
struct Knob {
  double LlmLikeParams::*field;
  double default_slope, max_step, lower, upper;
};

const std::array<Knob, kKnobs>& knobs() {
  static const std::array<Knob, kKnobs> all = {{
      {&LlmLikeParams::content_logit_std, 0.1, 1.0, 0.02, 8.0},
      {&LlmLikeParams::sink_logit, 0.1, 4.0, 0.0, 25.0},
      {&LlmLikeParams::heavy_logit, 0.1, 1.0, 0.0, 5.0},
      {&LlmLikeParams::recency_logit, 0.04, 3.0, 0.0, 12.0},
      {&LlmLikeParams::norm_logit_range, -0.08, 3.0, 0.0, 12.0},
  }};
  return all;
}

/// Slopes flatter than this (or of the wrong sign) are not trusted: the default slope is used.
constexpr double kMinSlopeShare = 0.1;
/// A layer whose every statistic is within this share of its tolerance stops early.
constexpr double kGoodEnough = 0.25;
/// Below this first-token mass and with no sink head, the layer gets no sink at all.
constexpr double kNoSinkMass = 0.02;

/// Layer `layer` of the twin generated from `spec` (shape.layers = layer + 1, every layer with
/// the same parameters), measured: only that layer's heads are inspected.
LayerStatistics measure_generated_layer(const WorkloadSpec& spec, int layer, const InspectOptions& inspect) {
  const Workload w = generate_workload(spec, 1);
  std::vector<HeadStatistics> heads;
  for (int h = 0; h < w.shape().q_heads; ++h) heads.push_back(inspect_head(w, layer, h, inspect));
  return per_layer_statistics(heads, inspect.sink_head_threshold).front();
}

/// The sink-head fraction that makes exactly round(rate · heads) query heads of `layer` sink
/// heads under `seed` (head h is one iff its uniform draw is below the fraction), or 1 when the
/// layer has no sink head but still some first-token mass (every head then a weak sink).
double sink_head_fraction_for(double rate, double first_token_mass, int heads, int layer, std::uint64_t seed) {
  const int wanted = int(std::lround(rate * heads));
  if (wanted >= heads) return 1.0;
  if (wanted == 0) return first_token_mass < kNoSinkMass ? 0.0 : 1.0;
  std::vector<double> draws;
  for (int h = 0; h < heads; ++h) {
    draws.push_back(uniform(seed, stream_id(Stream::kSinkHead, std::uint32_t(layer), std::uint32_t(h)), 0));
  }
  std::sort(draws.begin(), draws.end());
  return 0.5 * (draws[std::size_t(wanted - 1)] + draws[std::size_t(wanted)]);
}

/// Starting parameters of a layer from its targets.
LlmLikeParams initial_params(const LayerStatistics& target, const Shape& shape, const FitOptions& options) {
  LlmLikeParams p;
  p.rope_base = options.rope_base;
  p.sinks = 1;
  p.sink_head_fraction =
      sink_head_fraction_for(target.sink_head_rate, target.mean.first_token_mass, shape.q_heads, target.layer,
                             options.seed);
  // A sink head's first-token mass m against ~n/2 competitors of mean weight exp(c^2/2):
  // sink_logit ~ logit(m) + log(n/2) + c^2/2.
  const double share = p.sink_head_fraction > 0 ? std::min(0.95, target.mean.first_token_mass / std::max(
                                                                        p.sink_head_fraction, 1.0 / shape.q_heads))
                                                : 0.0;
  p.sink_logit = p.sink_head_fraction > 0 && share > 0
                     ? std::clamp(std::log(share / (1 - share)) + std::log(shape.tokens / 2.0) +
                                      0.5 * p.content_logit_std * p.content_logit_std,
                                  0.0, 25.0)
                     : 0.0;
  p.norm_logit_range = target.mean.norm_attention_spearman < -0.02 ? 3.0 : 0.0;
  return p;
}

/// |a - b| / tolerance of statistic k.
double scaled_gap(const LayerStatistics& a, const LayerStatistics& b, int k) {
  const FitStatistic& s = fit_statistics()[std::size_t(k)];
  return std::abs(a.mean.*s.member - b.mean.*s.member) / s.tolerance;
}

LayerFit fit_layer(const LayerStatistics& target, const Shape& real_shape, double score_scale,
                   const FitOptions& options) {
  WorkloadSpec spec;
  spec.shape = real_shape;
  spec.shape.layers = target.layer + 1;
  spec.seed = options.seed;
  spec.score_scale = score_scale;
  LlmLikeParams params = initial_params(target, spec.shape, options);
  const bool fit_sink = params.sink_head_fraction > 0;

  LayerFit best;
  best.layer = target.layer;
  best.target = target;
  best.error = std::numeric_limits<double>::infinity();
  std::array<double, kKnobs> previous_x{}, previous_s{};
  bool have_previous = false;
  for (int evaluation = 1; evaluation <= options.max_evaluations; ++evaluation) {
    spec.layer_params.assign(std::size_t(spec.shape.layers), params);
    const LayerStatistics fitted = measure_generated_layer(spec, target.layer, options.inspect);
    const double error = fit_error(fitted, target);
    if (error < best.error) {
      best.params = params;
      best.fitted = fitted;
      best.error = error;
    }
    best.evaluations = evaluation;
    if (best.error <= kGoodEnough) break;
    // Damped diagonal secant: each parameter moves by its own statistic's gap over its slope.
    LlmLikeParams next = params;
    for (int k = 0; k < kKnobs; ++k) {
      const Knob& knob = knobs()[std::size_t(k)];
      if (k == 1 && !fit_sink) continue;
      const FitStatistic& stat = fit_statistics()[std::size_t(k)];
      const double x = params.*knob.field, s = fitted.mean.*stat.member;
      double slope = knob.default_slope;
      if (have_previous && std::abs(x - previous_x[std::size_t(k)]) > 1e-9) {
        const double secant = (s - previous_s[std::size_t(k)]) / (x - previous_x[std::size_t(k)]);
        if (secant * knob.default_slope > kMinSlopeShare * knob.default_slope * knob.default_slope) slope = secant;
      }
      const double step = std::clamp((target.mean.*stat.member - s) / slope, -knob.max_step, knob.max_step);
      next.*knob.field = std::clamp(x + step, knob.lower, knob.upper);
      previous_x[std::size_t(k)] = x;
      previous_s[std::size_t(k)] = s;
    }
    have_previous = true;
    params = next;
  }
  return best;
}

}  // namespace

const std::vector<FitStatistic>& fit_statistics() {
  static const std::vector<FitStatistic> all = {
      {"sparsity", &HeadStatistics::sparsity, 0.03},
      {"first_token_mass", &HeadStatistics::first_token_mass, 0.08},
      {"received_top_share", &HeadStatistics::received_top_share, 0.08},
      {"recent_mass", &HeadStatistics::recent_mass, 0.08},
      {"norm_attention_spearman", &HeadStatistics::norm_attention_spearman, 0.15},
  };
  return all;
}

double fit_error(const LayerStatistics& a, const LayerStatistics& b) {
  double worst = 0;
  for (int k = 0; k < kKnobs; ++k) worst = std::max(worst, scaled_gap(a, b, k));
  return worst;
}

ProfileFit fit_profile(const Workload& real, const std::string& name, const FitOptions& options) {
  const Shape& s = real.shape();
  const int tokens = options.tokens > 0 ? options.tokens : s.tokens;
  if (options.max_evaluations < 1) {
    throw InputError("workload fit", "max_evaluations", "at least 1", std::to_string(options.max_evaluations));
  }
  if (tokens <= 2 * options.inspect.recent_window || s.tokens <= 2 * options.inspect.recent_window) {
    throw InputError("workload fit", "tokens",
                     "more than " + std::to_string(2 * options.inspect.recent_window) + " (twice the recent window)",
                     std::to_string(std::min(tokens, s.tokens)));
  }
  if (s.head_dim % 2 != 0 || s.head_dim < 8) {
    throw InputError("workload fit", "head_dim", "an even number >= 8 (the generator's)", std::to_string(s.head_dim));
  }
  InspectOptions inspect = options.inspect;
  inspect.threads = options.threads;
  inspect.progress = nullptr;
  const std::vector<LayerStatistics> targets = per_layer_statistics(inspect_workload(real, inspect),
                                                                    inspect.sink_head_threshold);
  Shape twin_shape = s;
  twin_shape.tokens = tokens;
  ProfileFit fit;
  fit.layers.resize(targets.size());
  const int team = options.threads > 0 ? options.threads : omp_get_max_threads();
  std::string error;
  int done = 0;
#pragma omp parallel for num_threads(team) schedule(dynamic)
  for (long long l = 0; l < (long long)targets.size(); ++l) {
    try {
      fit.layers[std::size_t(l)] = fit_layer(targets[std::size_t(l)], twin_shape, real.score_scale(), options);
    } catch (const std::exception& e) {
#pragma omp critical
      error = e.what();
    }
#pragma omp critical(subevict_fit_progress)
    if (options.progress) options.progress(++done, int(targets.size()));
  }
  if (!error.empty()) throw InputError("workload fit", "generated layer", "a valid generator spec", error);
  fit.profile.name = name;
  fit.profile.shape = s;
  fit.profile.shape.tokens = 1;
  fit.profile.score_scale = real.score_scale();
  for (const LayerFit& l : fit.layers) fit.profile.layers.push_back(l.params);
  return fit;
}

}  // namespace subevict
