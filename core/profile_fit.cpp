#include "core/profile_fit.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include <Eigen/Dense>

#include "core/counter_rng.hpp"
#include "core/generator.hpp"
#include "core/input_error.hpp"
#include "core/parallel_units.hpp"

namespace subevict {
namespace {

constexpr int kKnobs = 5;  // one parameter per fitted statistic, in fit_statistics() order

/// How each parameter moves its own statistic: the slope (statistic units per parameter unit, with
/// its sign) that starts the Jacobian's diagonal, the largest step, and the bounds.
struct Knob {
  double LlmLikeParams::*field;
  double default_slope, max_step, lower, upper;
};

const std::array<Knob, kKnobs>& knobs() {
  static const std::array<Knob, kKnobs> all = {{
      {&LlmLikeParams::content_logit_std, 0.1, 1.0, 0.02, 8.0},
      {&LlmLikeParams::sink_logit, 0.1, 4.0, 0.0, 25.0},
      {&LlmLikeParams::heavy_logit, 0.1, 1.0, 0.0, 5.0},
      {&LlmLikeParams::recency_logit, 0.04, 4.0, 0.0, 30.0},
      {&LlmLikeParams::norm_logit_range, -0.08, 3.0, 0.0, 12.0},
  }};
  return all;
}

/// A layer whose every statistic is within this share of its tolerance stops early.
constexpr double kGoodEnough = 0.25;
/// Below this first-token mass and with no sink head, the layer gets no sink at all.
constexpr double kNoSinkMass = 0.02;

/// Layer `layer` of the twin generated from `spec` (shape.layers = layer + 1, every layer with
/// the same parameters), measured. Only that layer is generated (generate_layers), with the twin's
/// own random streams.
LayerStatistics measure_generated_layer(const WorkloadSpec& spec, int layer, const InspectOptions& inspect) {
  const Workload w = generate_layers(spec, layer, 1, 1);
  std::vector<HeadStatistics> heads;
  for (int h = 0; h < w.shape().q_heads; ++h) {
    heads.push_back(inspect_head(w, 0, h, inspect));
    heads.back().layer = layer;
  }
  return per_layer_statistics(heads, inspect.sink_head_threshold).front();
}

/// The exact number of sink heads of the twin's layer: round(rate · heads), or every head when
/// the layer has no sink head but still some first-token mass (every head then a weak sink), none
/// when it has neither. A count, not a fraction, so every seed of the twin has as many.
int sink_heads_for(double rate, double first_token_mass, int heads) {
  const int wanted = std::clamp(int(std::lround(rate * heads)), 0, heads);
  if (wanted > 0) return wanted;
  return first_token_mass < kNoSinkMass ? 0 : heads;
}

/// Whether the first key of `layer` has a low norm in the real workload: below the median key norm
/// (mean over KV heads of the share of keys with a smaller norm < 1/2). Real sink tokens mostly do
/// (SmolLM2: the lowest norm of 2048 keys in layers 12-29, within the lowest 50 in layers 3-10),
/// but not everywhere (its layers 0 and 1: a high norm in every KV head); the twin's
/// low_norm_sinks follows.
bool low_norm_first_key(const Workload& real, int layer) {
  const Shape& s = real.shape();
  double below = 0;
  for (int h = 0; h < s.kv_heads; ++h) {
    const auto k = real.k(layer, h);
    auto norm = [&](int j) {
      double sq = 0;
      for (int x = 0; x < s.head_dim; ++x) sq += double(k(j, x)) * k(j, x);
      return sq;
    };
    const double first = norm(0);
    int smaller = 0;
    for (int j = 1; j < s.tokens; ++j) smaller += norm(j) < first;
    below += double(smaller) / std::max(1, s.tokens - 1);
  }
  return below / s.kv_heads < 0.5;
}

/// Starting parameters of a layer from its targets.
LlmLikeParams initial_params(const LayerStatistics& target, const Shape& shape, const FitOptions& options,
                             bool low_norm_first_key) {
  LlmLikeParams p;
  p.rope_base = options.rope_base;
  p.window = std::max(0, target.mean.window);  // the real layer's mask (fixed, not fitted)
  p.sinks = 1;
  p.low_norm_sinks = low_norm_first_key ? 1 : 0;  // where the real first key has a low norm
  p.exact_recency = 1;   // the same recency profile under every seed of the twin
  p.fixed_structure = 1;  // per-head structure is the model's (seed-free); tokens follow the seed
  p.sink_heads = sink_heads_for(target.sink_head_rate, target.mean.first_token_mass, shape.q_heads);
  p.sink_head_fraction = double(p.sink_heads) / shape.q_heads;  // informational: sink_heads decides
  // A sink head's first-token mass m against ~n/2 competitors of mean weight exp(c^2/2):
  // sink_logit ~ logit(m) + log(n/2) + c^2/2.
  const double share = p.sink_heads > 0 ? std::min(0.95, target.mean.first_token_mass / p.sink_head_fraction) : 0.0;
  p.sink_logit = p.sink_heads > 0 && share > 0
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

/// The fitted parameters as a vector (knobs() order), and back.
Eigen::VectorXd knob_values(const LlmLikeParams& p) {
  Eigen::VectorXd x(kKnobs);
  for (int k = 0; k < kKnobs; ++k) x[k] = p.*knobs()[std::size_t(k)].field;
  return x;
}

LlmLikeParams with_knobs(LlmLikeParams p, const Eigen::VectorXd& x) {
  for (int k = 0; k < kKnobs; ++k) p.*knobs()[std::size_t(k)].field = x[k];
  return p;
}

/// (target - measured) / tolerance per fitted statistic: the residual the fit drives to 0.
Eigen::VectorXd scaled_residual(const LayerStatistics& measured, const LayerStatistics& target) {
  Eigen::VectorXd r(kKnobs);
  for (int k = 0; k < kKnobs; ++k) {
    const FitStatistic& s = fit_statistics()[std::size_t(k)];
    r[k] = (target.mean.*s.member - measured.mean.*s.member) / s.tolerance;
  }
  return r;
}

/// Broyden's method on the scaled residual: J approximates d(residual scale)/d(knobs), starts
/// diagonal from the knobs' default slopes and takes a rank-one secant update after every
/// measurement, so the couplings (content spread also moves the top share, the sink also moves
/// sparsity, ...) are learned. Each step solves J dx = r at the best point so far, shrinks dx
/// uniformly to the knobs' largest steps and clamps to their bounds. Knobs not fitted (the sink
/// of a sink-free layer) stay fixed.
LayerFit fit_layer(const LayerStatistics& target, const Shape& real_shape, double score_scale,
                   const FitOptions& options, bool low_norm_first_key) {
  WorkloadSpec spec;
  spec.shape = real_shape;
  spec.shape.layers = target.layer + 1;
  spec.seed = options.seed;
  spec.score_scale = score_scale;
  const LlmLikeParams start = initial_params(target, spec.shape, options, low_norm_first_key);
  std::array<bool, kKnobs> free{};
  for (int k = 0; k < kKnobs; ++k) free[std::size_t(k)] = k != 1 || start.sink_heads > 0;

  Eigen::MatrixXd jacobian = Eigen::MatrixXd::Zero(kKnobs, kKnobs);
  for (int k = 0; k < kKnobs; ++k) {
    jacobian(k, k) = knobs()[std::size_t(k)].default_slope / fit_statistics()[std::size_t(k)].tolerance;
  }
  LayerFit best;
  best.layer = target.layer;
  best.target = target;
  best.error = std::numeric_limits<double>::infinity();
  Eigen::VectorXd x = knob_values(start), best_x = x, best_residual, previous_x, previous_residual;
  for (int evaluation = 1; evaluation <= options.max_evaluations; ++evaluation) {
    spec.layer_params.assign(std::size_t(spec.shape.layers), with_knobs(start, x));
    LayerStatistics measured = measure_generated_layer(spec, target.layer, options.inspect);
    for (int extra = 1; extra < options.seeds; ++extra) {  // the mean over the fit's seeds
      WorkloadSpec other = spec;
      other.seed = options.seed + std::uint64_t(extra);
      const LayerStatistics more = measure_generated_layer(other, target.layer, options.inspect);
      for (const FitStatistic& s : fit_statistics()) measured.mean.*s.member += more.mean.*s.member;
    }
    for (const FitStatistic& s : fit_statistics()) measured.mean.*s.member /= options.seeds;
    const Eigen::VectorXd residual = scaled_residual(measured, target);
    if (evaluation > 1) {  // Broyden: J += (d_measured - J dx) dx^T / |dx|^2, d_measured = -d_residual
      const Eigen::VectorXd dx = x - previous_x;
      if (dx.squaredNorm() > 1e-18) {
        jacobian += ((previous_residual - residual) - jacobian * dx) * dx.transpose() / dx.squaredNorm();
      }
    }
    previous_x = x;
    previous_residual = residual;
    const double error = fit_error(measured, target);
    if (error < best.error) {
      best.params = with_knobs(start, x);
      best.fitted = measured;
      best.error = error;
      best_x = x;
      best_residual = residual;
    }
    best.evaluations = evaluation;
    if (best.error <= kGoodEnough) break;
    // Solve J dx = -(-r) on the free knobs: the measured statistics move by J dx, the residual by -J dx.
    std::vector<int> active;
    for (int k = 0; k < kKnobs; ++k) {
      if (free[std::size_t(k)]) active.push_back(k);
    }
    Eigen::MatrixXd j(active.size(), active.size());
    Eigen::VectorXd r(active.size());
    for (std::size_t a = 0; a < active.size(); ++a) {
      r[Eigen::Index(a)] = best_residual[active[a]];
      for (std::size_t b = 0; b < active.size(); ++b) j(Eigen::Index(a), Eigen::Index(b)) = jacobian(active[a], active[b]);
    }
    Eigen::VectorXd step = j.colPivHouseholderQr().solve(r);
    if (!step.allFinite()) step = Eigen::VectorXd::Zero(Eigen::Index(active.size()));
    double shrink = 1;
    for (std::size_t a = 0; a < active.size(); ++a) {
      const double limit = knobs()[std::size_t(active[a])].max_step;
      if (std::abs(step[Eigen::Index(a)]) > limit) shrink = std::min(shrink, limit / std::abs(step[Eigen::Index(a)]));
    }
    x = best_x;
    for (std::size_t a = 0; a < active.size(); ++a) {
      const Knob& knob = knobs()[std::size_t(active[a])];
      x[active[a]] = std::clamp(best_x[active[a]] + shrink * step[Eigen::Index(a)], knob.lower, knob.upper);
    }
    if ((x - best_x).squaredNorm() < 1e-18) break;  // pinned at the bounds: nothing left to try
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
  if (options.seeds < 1) throw InputError("workload fit", "seeds", "at least 1", std::to_string(options.seeds));
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
  InspectOptions inspect = options.inspect;  // its progress reports the real workload's measurement
  inspect.threads = options.threads;
  const std::vector<LayerStatistics> targets = per_layer_statistics(inspect_workload(real, inspect),
                                                                    inspect.sink_head_threshold);
  Shape twin_shape = s;
  twin_shape.tokens = tokens;
  ProfileFit fit;
  fit.layers.resize(targets.size());
  const std::string error = parallel_units(
      (long long)targets.size(), options.threads,
      [&](long long l) {
        fit.layers[std::size_t(l)] = fit_layer(targets[std::size_t(l)], twin_shape, real.score_scale(), options,
                                               low_norm_first_key(real, int(l)));
      },
      options.progress);
  if (!error.empty()) throw InputError("workload fit", "generated layer", "a valid generator spec", error);
  fit.profile.name = name;
  fit.profile.shape = s;
  fit.profile.shape.tokens = 1;
  fit.profile.score_scale = real.score_scale();
  for (const LayerFit& l : fit.layers) fit.profile.layers.push_back(l.params);
  return fit;
}

}  // namespace subevict
