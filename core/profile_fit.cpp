#include "core/profile_fit.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <limits>
#include <string>
#include <utility>

#include <Eigen/Dense>

#include "core/counter_rng.hpp"
#include "core/generator.hpp"
#include "core/input_error.hpp"
#include "core/number_text.hpp"
#include "core/parallel_units.hpp"

namespace subevict {
namespace {

constexpr int kKnobs = 7;  // one parameter per fitted statistic, in fit_statistics() order
constexpr int kSinkKnob = 1, kRecencyKnob = 3, kReachKnob = 5, kLowNormKnob = 6;

/// How each parameter moves its own statistic: the slope (statistic units per parameter unit, with
/// its sign) that starts the Jacobian's diagonal, the largest step, and the bounds; a log2 knob is
/// searched as log2 of its field (field 0, off, is knob value 0, below every bound).
struct Knob {
  double LlmLikeParams::*field;
  double default_slope, max_step, lower, upper;
  bool log2 = false;
};

const std::array<Knob, kKnobs>& knobs() {
  static const std::array<Knob, kKnobs> all = {{
      {&LlmLikeParams::content_logit_std, 0.1, 1.0, 0.02, 8.0},
      {&LlmLikeParams::sink_logit, 0.1, 4.0, 0.0, 25.0},
      {&LlmLikeParams::heavy_logit, 0.1, 1.0, 0.0, 5.0},
      {&LlmLikeParams::recency_logit, 0.04, 4.0, 0.0, 30.0},
      {&LlmLikeParams::norm_logit_range, -0.08, 3.0, -12.0, 12.0},
      {&LlmLikeParams::recency_reach, 0.05, 2.0, 3.0, 16.0, true},  // log2: 8 to 65536 keys
      {&LlmLikeParams::salient_low_norm, 0.4, 0.5, 0.0, 1.0},
  }};
  return all;
}

/// Beyond this |Spearman(key norm, received attention)| the real layer's correlation has a sign.
constexpr double kSignedSpearman = 0.02;

/// Knob k's bounds for a layer with `target`: the norm range goes negative (high-norm keys
/// attract) only where the real layer's correlation is not clearly negative, so the search never
/// wanders into the opposite structure; the others as knobs() says.
std::pair<double, double> knob_bounds(int k, const LayerStatistics& target) {
  const Knob& knob = knobs()[std::size_t(k)];
  if (knob.field != &LlmLikeParams::norm_logit_range) return {knob.lower, knob.upper};
  return {target.mean.norm_attention_spearman < -kSignedSpearman ? 0.0 : knob.lower, knob.upper};
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

/// The norm quantile of the first key of `layer` in the real workload: the share of the other keys
/// with a smaller norm, averaged over KV heads. Real sink tokens mostly sit low (SmolLM2: the
/// lowest norm of 2048 keys in layers 12-29, within the lowest 50 in layers 3-10), but not
/// everywhere (its layers 0 and 1, Gemma 3 270M's layers 5, 11, 12 and 15: high in every KV
/// head, and so are their later sinks). Below 1/2 the twin's sink keys are low-norm
/// (low_norm_sinks); above it, with FitOptions::sink_tokens, they sit at this quantile
/// (sink_norm_quantile).
double first_key_norm_quantile(const Workload& real, int layer) {
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
  return below / s.kv_heads;
}

/// Starting parameters of a layer from its targets.
LlmLikeParams initial_params(const LayerStatistics& target, const Shape& shape, const FitOptions& options,
                             double first_key_norm, bool wide) {
  LlmLikeParams p;
  p.rope_base = options.rope_bases.empty() ? options.rope_base : options.rope_bases[std::size_t(target.layer)];
  p.window = std::max(0, target.mean.window);  // the real layer's mask (fixed, not fitted)
  p.sinks = 1;
  p.low_norm_sinks = first_key_norm < 0.5 ? 1 : 0;  // where the real first key has a low norm
  p.exact_recency = 1;   // the same recency profile under every seed of the twin
  p.fixed_structure = 1;  // per-head structure is the model's (seed-free); tokens follow the seed
  p.sink_heads = sink_heads_for(target.sink_head_rate, target.mean.first_token_mass, shape.q_heads);
  p.sink_head_fraction = double(p.sink_heads) / shape.q_heads;  // informational: sink_heads decides
  p.exact_sinks = p.sink_heads > 0 ? 1 : 0;  // a sink's logit is sink_logit under every seed of the twin
  // The real layer's later sink tokens where it has sink heads (FitOptions::sink_tokens): measured,
  // not searched, as the sink-head count is.
  p.sink_token_rate = options.sink_tokens && p.sink_heads > 0 ? target.mean.sink_token_rate : 0.0;
  // Where the real first key's norm is high (and its later sinks' with it): the sink keys at its
  // norm quantile.
  if (options.sink_tokens && p.sink_heads > 0 && first_key_norm >= 0.5) p.sink_norm_quantile = first_key_norm;
  // A sink head's first-token mass m, shared alike by the s ~ 1 + rate n / 2 sink tokens a query
  // sees, against ~n/2 competitors of mean weight exp(c^2/2): sink_logit ~ logit(s m) + log(n/2)
  // + c^2/2 - log(s).
  const double seen = 1 + p.sink_token_rate * shape.tokens / 2.0;
  const double share =
      p.sink_heads > 0 ? std::min(0.95, seen * target.mean.first_token_mass / p.sink_head_fraction) : 0.0;
  p.sink_logit = p.sink_heads > 0 && share > 0
                     ? std::clamp(std::log(share / (1 - share)) + std::log(shape.tokens / 2.0) +
                                      0.5 * p.content_logit_std * p.content_logit_std - std::log(seen),
                                  0.0, 25.0)
                     : 0.0;
  p.norm_logit_range = target.mean.norm_attention_spearman < -kSignedSpearman ? 3.0 : 0.0;
  p.recency_reach = wide ? shape.tokens : 0.0;  // no cut within the fitted length to start with
  return p;
}

/// The fitted parameters as a vector (knobs() order), and back.
Eigen::VectorXd knob_values(const LlmLikeParams& p) {
  Eigen::VectorXd x(kKnobs);
  for (int k = 0; k < kKnobs; ++k) {
    const Knob& knob = knobs()[std::size_t(k)];
    const double field = p.*knob.field;
    x[k] = knob.log2 ? (field > 0 ? std::log2(field) : 0.0) : field;
  }
  return x;
}

LlmLikeParams with_knobs(LlmLikeParams p, const Eigen::VectorXd& x) {
  for (int k = 0; k < kKnobs; ++k) {
    const Knob& knob = knobs()[std::size_t(k)];
    p.*knob.field = knob.log2 ? (x[k] > 0 ? std::exp2(x[k]) : 0.0) : x[k];
  }
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

/// Evaluations without a new best point after which the fit replaces its Broyden Jacobian by a
/// finite-difference one at the best point (one evaluation per free knob).
constexpr int kStallEvaluations = 3;
/// The finite-difference step of a knob, as a share of its largest step.
constexpr double kDifferenceStep = 0.25;
/// The smallest share of a solved step the fit takes after worse points.
constexpr double kLeastTrust = 1.0 / 16;

/// The parameter search of one layer (fit_layer): generated copies of the layer, measured at every
/// fitted length (the mean over the fit's seeds), and the best point found so far.
class LayerSearch {
 public:
  /// targets[i] is the real layer at lengths[i] (the twin's tokens; lengths[0] the fitted length);
  /// `start` holds the starting knobs and every parameter that is not searched.
  LayerSearch(const std::vector<LayerStatistics>& targets, const std::vector<int>& lengths, const Shape& real_shape,
              double score_scale, const FitOptions& options, const LlmLikeParams& start)
      : targets_(targets), lengths_(lengths), options_(options), start_(start) {
    spec_.shape = real_shape;
    spec_.shape.layers = targets.front().layer + 1;
    spec_.shape.tokens = lengths.front();
    spec_.seed = options.seed;
    spec_.score_scale = score_scale;
    best_.layer = targets.front().layer;
    best_.target = targets.front();
    best_.length_targets = targets;
    best_.error = std::numeric_limits<double>::infinity();
  }

  /// Broyden's method on the scaled residual over the knobs `active`, for at most `budget`
  /// evaluations, from the best point so far (the start on the first run). J approximates
  /// d(residual scale)/d(knobs), starts diagonal from the knobs' default slopes and takes a
  /// rank-one secant update after every measurement, so the couplings (content spread also moves
  /// the top share, the sink also moves sparsity, ...) are learned. The residuals of all lengths
  /// are stacked (one block of rows per length, J tall) and each step solves J dx = r in least
  /// squares, so the twin splits what one length would ask against the other. Each step solves at
  /// the best point so far, takes a share of dx (the trust: halved after each step to a worse
  /// point, down to kLeastTrust, doubled back to 1 after a better one), shrinks it uniformly to
  /// the knobs' largest steps and clamps to their bounds. When kStallEvaluations steps in a row
  /// find no better point (the secant model has drifted), J is measured afresh by finite
  /// differences at the best point, once per best point. Points rank by their largest error over
  /// every length and `statistics`; with `kept` non-empty, only those within `margin` on `kept`
  /// do (the others rank after them, by their error on `kept`). Stops early at an error within
  /// kGoodEnough.
  void run(const std::vector<int>& active, const std::vector<FitStatistic>& statistics,
           const std::vector<FitStatistic>& kept, double margin, int budget) {
    statistics_ = statistics;
    kept_ = kept;
    margin_ = margin;
    const int count = int(lengths_.size());
    std::vector<int> rows;  // the residual rows solved for: each length's rows of the free knobs' statistics
    for (int i = 0; i < count; ++i) {
      for (const int k : active) rows.push_back(i * kKnobs + k);
    }
    Eigen::MatrixXd jacobian = Eigen::MatrixXd::Zero(count * kKnobs, kKnobs);
    for (int i = 0; i < count; ++i) {
      for (int k = 0; k < kKnobs; ++k) {
        jacobian(i * kKnobs + k, k) =
            knobs()[std::size_t(k)].default_slope / fit_statistics()[std::size_t(k)].tolerance;
      }
      // The recency logit lifts the wide window's mass as much as the recent window's (it holds it).
      jacobian(i * kKnobs + kReachKnob, kRecencyKnob) =
          knobs()[kRecencyKnob].default_slope / fit_statistics()[std::size_t(kReachKnob)].tolerance;
    }
    const int spent_before = best_.evaluations;
    auto done = [&] { return best_.error <= kGoodEnough || best_.evaluations - spent_before >= budget; };
    Eigen::VectorXd previous_x, previous_residual;
    if (best_x_.size() == 0) {
      previous_x = knob_values(start_);
      previous_residual = evaluate(previous_x);
    } else {  // the best point of the last run, ranked anew
      best_rank_ = rank(best_.length_fitted);
      best_.error = error(best_.length_fitted, statistics_);
      previous_x = best_x_;
      previous_residual = best_residual_;
    }
    since_best_ = 0;
    Eigen::VectorXd differenced_at;  // the best point whose Jacobian was last measured
    double trust = 1;
    while (!done()) {
      if (since_best_ >= kStallEvaluations && (differenced_at.size() == 0 || differenced_at != best_x_) &&
          best_.evaluations - spent_before + int(active.size()) <= budget) {
        // Finite differences at the best point: each free knob moved alone by a share of its step,
        // towards the inside of its bounds. J's column k is the measured change per unit of knob k.
        const Eigen::VectorXd at = best_x_, at_residual = best_residual_;
        differenced_at = at;
        for (const int k : active) {
          const double size = kDifferenceStep * knobs()[std::size_t(k)].max_step;
          Eigen::VectorXd moved = at;
          const double h = at[k] + size <= knob_bounds(k, targets_.front()).second ? size : -size;
          moved[k] += h;
          const Eigen::VectorXd residual = evaluate(moved);
          jacobian.col(k) = (at_residual - residual) / h;
          if (done()) break;
        }
        since_best_ = 0;
        trust = 1;
        previous_x = at;
        previous_residual = at_residual;
        if (done()) break;
      }
      // Solve J dx = r (least squares with several lengths) on the free knobs at the best point:
      // the measured statistics move by J dx, the residual by -J dx.
      Eigen::MatrixXd j(rows.size(), active.size());
      Eigen::VectorXd r(rows.size());
      for (std::size_t a = 0; a < rows.size(); ++a) {
        r[Eigen::Index(a)] = best_residual_[rows[a]];
        for (std::size_t b = 0; b < active.size(); ++b) {
          j(Eigen::Index(a), Eigen::Index(b)) = jacobian(rows[a], active[b]);
        }
      }
      Eigen::VectorXd step = j.colPivHouseholderQr().solve(r);
      if (!step.allFinite()) step = Eigen::VectorXd::Zero(Eigen::Index(active.size()));
      double shrink = trust;
      for (std::size_t a = 0; a < active.size(); ++a) {
        const double limit = knobs()[std::size_t(active[a])].max_step;
        if (std::abs(step[Eigen::Index(a)]) > limit) {
          shrink = std::min(shrink, trust * limit / std::abs(step[Eigen::Index(a)]));
        }
      }
      Eigen::VectorXd x = best_x_;
      for (std::size_t a = 0; a < active.size(); ++a) {
        const auto [lower, upper] = knob_bounds(active[a], targets_.front());
        x[active[a]] = std::clamp(best_x_[active[a]] + shrink * step[Eigen::Index(a)], lower, upper);
      }
      if ((x - best_x_).squaredNorm() < 1e-18) break;  // pinned at the bounds: nothing left to try
      const Eigen::VectorXd residual = evaluate(x);
      trust = since_best_ == 0 ? std::min(1.0, 2 * trust) : std::max(kLeastTrust, trust / 2);
      // Broyden: J += (d_measured - J dx) dx^T / |dx|^2, d_measured = -d_residual.
      const Eigen::VectorXd dx = x - previous_x;
      if (dx.squaredNorm() > 1e-18) {
        jacobian += ((previous_residual - residual) - jacobian * dx) * dx.transpose() / dx.squaredNorm();
      }
      previous_x = x;
      previous_residual = residual;
    }
  }

  /// The best point of every run so far.
  const LayerFit& best() const { return best_; }

 private:
  /// The largest error over every length on `statistics`.
  double error(const std::vector<LayerStatistics>& measured, const std::vector<FitStatistic>& statistics) const {
    double worst = 0;
    for (std::size_t i = 0; i < measured.size(); ++i) {
      worst = std::max(worst, fit_error(measured[i], targets_[i], statistics));
    }
    return worst;
  }

  /// A point's rank, smaller first: whether it is outside the margin on the kept statistics, then
  /// its error on the fitted statistics (inside) or on the kept ones (outside).
  std::pair<bool, double> rank(const std::vector<LayerStatistics>& measured) const {
    const double kept = error(measured, kept_);
    return kept <= margin_ ? std::pair(false, error(measured, statistics_)) : std::pair(true, kept);
  }

  /// Measures the twin layer at x at every length (the mean over the fit's seeds), keeps the best
  /// point and returns the scaled residual of every statistic at every length.
  Eigen::VectorXd evaluate(const Eigen::VectorXd& x) {
    spec_.layer_params.assign(std::size_t(spec_.shape.layers), with_knobs(start_, x));
    const int count = int(lengths_.size());
    std::vector<LayerStatistics> measured;
    Eigen::VectorXd residual(count * kKnobs);
    for (int i = 0; i < count; ++i) {
      WorkloadSpec at_length = spec_;
      at_length.shape.tokens = lengths_[std::size_t(i)];
      const int layer = targets_.front().layer;
      LayerStatistics m = measure_generated_layer(at_length, layer, options_.inspect);
      for (int extra = 1; extra < options_.seeds; ++extra) {  // the mean over the fit's seeds
        WorkloadSpec other = at_length;
        other.seed = options_.seed + std::uint64_t(extra);
        const LayerStatistics more = measure_generated_layer(other, layer, options_.inspect);
        for (const FitStatistic& s : fit_statistics()) m.mean.*s.member += more.mean.*s.member;
      }
      for (const FitStatistic& s : fit_statistics()) m.mean.*s.member /= options_.seeds;
      residual.segment(i * kKnobs, kKnobs) = scaled_residual(m, targets_[std::size_t(i)]);
      measured.push_back(m);
    }
    ++best_.evaluations;
    ++since_best_;
    const std::pair<bool, double> r = rank(measured);
    if (r < best_rank_) {
      best_rank_ = r;
      best_.params = with_knobs(start_, x);
      best_.fitted = measured.front();
      best_.length_fitted = measured;
      best_.error = error(measured, statistics_);
      best_x_ = x;
      best_residual_ = residual;
      since_best_ = 0;
    }
    return residual;
  }

  const std::vector<LayerStatistics>& targets_;
  const std::vector<int>& lengths_;
  const FitOptions& options_;
  const LlmLikeParams start_;
  WorkloadSpec spec_;
  std::vector<FitStatistic> statistics_, kept_;
  LayerFit best_;
  double margin_ = 0;
  std::pair<bool, double> best_rank_ = {true, std::numeric_limits<double>::infinity()};
  Eigen::VectorXd best_x_, best_residual_;
  int since_best_ = 0;
};

/// The fit of one layer: the search over the knobs of the statistics fitted without
/// low_norm_share, from initial_params(); with low_norm_share among `statistics`
/// (FitOptions::low_norm), a second search from that point adds salient_low_norm, for up to twice
/// the evaluations, and keeps the first search's statistics within FitOptions::low_norm_margin of
/// their tolerances wherever the first search got there. Knobs not fitted (the sink of a sink-free
/// layer, the reach where the wide statistic is not fitted, a knob its bounds pin) stay fixed.
/// targets[i] is the real layer at lengths[i]; lengths[0] is the fitted length.
LayerFit fit_layer(const std::vector<LayerStatistics>& targets, const std::vector<int>& lengths,
                   const Shape& real_shape, double score_scale, const FitOptions& options, double first_key_norm,
                   const std::vector<FitStatistic>& statistics) {
  const LayerStatistics& target = targets.front();
  auto fits = [](const std::vector<FitStatistic>& fitted, int k) {
    return std::any_of(fitted.begin(), fitted.end(),
                       [&](const FitStatistic& s) { return s.member == fit_statistics()[std::size_t(k)].member; });
  };
  Shape shape = real_shape;
  shape.tokens = lengths.front();
  const LlmLikeParams start = initial_params(target, shape, options, first_key_norm, fits(statistics, kReachKnob));
  // The free knobs: those whose statistic is fitted, not the sink of a sink-free layer, none
  // pinned by its bounds.
  auto free_knobs = [&](const std::vector<FitStatistic>& fitted) {
    std::vector<int> active;
    for (int k = 0; k < kKnobs; ++k) {
      const auto [lower, upper] = knob_bounds(k, target);
      if (fits(fitted, k) && (k != kSinkKnob || start.sink_heads > 0) && lower < upper) active.push_back(k);
    }
    return active;
  };
  std::vector<FitStatistic> first;  // every fitted statistic but low_norm_share
  std::copy_if(statistics.begin(), statistics.end(), std::back_inserter(first), [](const FitStatistic& s) {
    return s.member != fit_statistics()[std::size_t(kLowNormKnob)].member;
  });
  LayerSearch search(targets, lengths, real_shape, score_scale, options, start);
  search.run(free_knobs(first), first, {}, 0, options.max_evaluations);
  if (first.size() < statistics.size()) {
    search.run(free_knobs(statistics), statistics, first, options.low_norm_margin, 2 * options.max_evaluations);
  }
  return search.best();
}

}  // namespace

const std::vector<FitStatistic>& fit_statistics() {
  static const std::vector<FitStatistic> all = {
      {"sparsity", &HeadStatistics::sparsity, 0.03},
      {"first_token_mass", &HeadStatistics::first_token_mass, 0.08},
      {"received_top_share", &HeadStatistics::received_top_share, 0.08},
      {"recent_mass", &HeadStatistics::recent_mass, 0.08},
      {"norm_attention_spearman", &HeadStatistics::norm_attention_spearman, 0.15},
      {"wide_recent_mass", &HeadStatistics::wide_recent_mass, 0.05},
      {"low_norm_share", &HeadStatistics::low_norm_share, 0.08},
  };
  return all;
}

std::vector<FitStatistic> fitted_statistics(int tokens, const InspectOptions& inspect, bool low_norm) {
  const auto& all = fit_statistics();
  std::vector<FitStatistic> fitted(all.begin(), all.begin() + kReachKnob);
  if (tokens >= 2 * inspect.wide_recent_window) fitted.push_back(all[kReachKnob]);
  if (low_norm) fitted.push_back(all[kLowNormKnob]);
  return fitted;
}

double fit_error(const LayerStatistics& a, const LayerStatistics& b, const std::vector<FitStatistic>& statistics) {
  double worst = 0;
  for (const FitStatistic& s : statistics) {
    worst = std::max(worst, std::abs(a.mean.*s.member - b.mean.*s.member) / s.tolerance);
  }
  return worst;
}

ProfileFit fit_profile(const Workload& real, const std::string& name, const FitOptions& options) {
  const Shape& s = real.shape();
  const int tokens = options.tokens > 0 ? options.tokens : s.tokens;
  if (options.seeds < 1) throw InputError("workload fit", "seeds", "at least 1", std::to_string(options.seeds));
  if (!(options.low_norm_margin > 0)) {
    throw InputError("workload fit", "low_norm_margin", "a share of the tolerances > 0",
                     significant_digits(options.low_norm_margin, 6));
  }
  if (options.max_evaluations < 1) {
    throw InputError("workload fit", "max_evaluations", "at least 1", std::to_string(options.max_evaluations));
  }
  if (tokens <= 2 * options.inspect.recent_window || s.tokens <= 2 * options.inspect.recent_window) {
    throw InputError("workload fit", "tokens",
                     "more than " + std::to_string(2 * options.inspect.recent_window) + " (twice the recent window)",
                     std::to_string(std::min(tokens, s.tokens)));
  }
  if (!options.rope_bases.empty() && int(options.rope_bases.size()) != s.layers) {
    throw InputError("workload fit", "rope_bases", "one RoPE base per layer (" + std::to_string(s.layers) + ")",
                     std::to_string(options.rope_bases.size()) + " bases");
  }
  for (const double base : options.rope_bases) {
    if (!(std::isfinite(base) && base > 1)) {
      throw InputError("workload fit", "rope_bases", "finite RoPE bases > 1", significant_digits(base, 6));
    }
  }
  if (s.head_dim % 2 != 0 || s.head_dim < 8) {
    throw InputError("workload fit", "head_dim", "an even number >= 8 (the generator's)", std::to_string(s.head_dim));
  }
  for (const double share : options.shorter_lengths) {
    if (!(share > 0 && share < 1)) {
      throw InputError("workload fit", "shorter_lengths", "shares of the fitted length in (0, 1)",
                       significant_digits(share, 6));
    }
  }
  InspectOptions inspect = options.inspect;  // its progress reports the real workload's measurement
  inspect.threads = options.threads;
  ProfileFit fit;
  fit.lengths = {tokens};
  std::vector<std::vector<LayerStatistics>> targets = {
      per_layer_statistics(inspect_workload(real, inspect), inspect.sink_head_threshold)};
  inspect.progress = nullptr;  // the shorter prefixes: a quarter of the cost at half the length
  int shortest = std::min(tokens, s.tokens);
  for (const double share : options.shorter_lengths) {
    const int twin_tokens = int(std::lround(share * tokens)), real_tokens = int(std::lround(share * s.tokens));
    if (std::min(twin_tokens, real_tokens) <= 2 * inspect.recent_window) continue;
    fit.lengths.push_back(twin_tokens);
    targets.push_back(per_layer_statistics(inspect_workload(first_tokens(real, real_tokens), inspect),
                                           inspect.sink_head_threshold));
    shortest = std::min({shortest, twin_tokens, real_tokens});
  }
  fit.statistics = fitted_statistics(options.wide_recent ? shortest : 0, inspect, options.low_norm);
  Shape twin_shape = s;
  twin_shape.tokens = tokens;
  fit.layers.resize(targets.front().size());
  const std::string error = parallel_units(
      (long long)fit.layers.size(), options.threads,
      [&](long long l) {
        std::vector<LayerStatistics> layer_targets;
        for (const auto& at_length : targets) layer_targets.push_back(at_length[std::size_t(l)]);
        fit.layers[std::size_t(l)] = fit_layer(layer_targets, fit.lengths, twin_shape, real.score_scale(), options,
                                               first_key_norm_quantile(real, int(l)), fit.statistics);
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
