// Tests core/profile_fit.hpp: the fit recovers the statistics of a workload the generator can
// produce, its twin reproduces exactly what the fit measured, and a structure the generator
// cannot produce is reported as unmatched rather than hidden.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/counter_rng.hpp"
#include "core/generator.hpp"
#include "core/generator_profile.hpp"
#include "core/input_error.hpp"
#include "core/llm_like_model.hpp"
#include "core/profile_fit.hpp"

namespace subevict {
namespace {

constexpr int kTokens = 256;

/// Two layers of a small GQA model with different structure: a dense sink-free layer and a
/// sink layer with heavy hitters and low-norm keys.
WorkloadSpec two_layer_spec(std::uint64_t seed) {
  WorkloadSpec spec;
  spec.shape = Shape{2, 4, 2, kTokens, 32};
  spec.seed = seed;
  LlmLikeParams dense;
  dense.sink_logit = 0;
  dense.heavy_logit = 0;
  dense.norm_logit_range = 0;
  dense.content_logit_std = 0.5;
  dense.recency_logit = 1.0;
  LlmLikeParams sinky;
  sinky.sinks = 1;
  sinky.sink_logit = 9;
  spec.layer_params = {dense, sinky};
  return spec;
}

FitOptions small_fit(std::uint64_t seed) {
  FitOptions options;
  options.seed = seed;
  options.max_evaluations = 16;
  options.threads = 1;
  return options;
}

const ProfileFit& fit_of_generated() {
  static const ProfileFit fit = [] {
    const Workload real = generate_workload(two_layer_spec(11), 1);
    return fit_profile(real, "twin", small_fit(12));  // another seed: other draws, same structure
  }();
  return fit;
}

TEST(ProfileFit, MatchesEveryStatisticOfAGeneratableWorkload) {
  const ProfileFit& fit = fit_of_generated();
  ASSERT_EQ(fit.layers.size(), 2u);
  for (const LayerFit& l : fit.layers) {
    EXPECT_LE(l.error, 1.0) << "layer " << l.layer;
    for (const FitStatistic& s : fit_statistics()) {
      EXPECT_NEAR(l.fitted.mean.*s.member, l.target.mean.*s.member, s.tolerance) << "layer " << l.layer << " " << s.name;
    }
  }
  // The dense layer stays sink-free, the sink layer gets its sinks.
  EXPECT_EQ(fit.layers[0].params.sink_head_fraction, 0.0);
  EXPECT_GT(fit.layers[1].params.sink_logit, 3.0);
}

TEST(ProfileFit, TheTwinIsWhatTheFitMeasured) {
  const ProfileFit& fit = fit_of_generated();
  EXPECT_EQ(fit.profile.name, "twin");
  EXPECT_EQ(fit.profile.shape.q_heads, 4);
  EXPECT_EQ(fit.profile.layers.size(), 2u);
  const Workload twin = generate_workload(spec_from_profile(fit.profile, kTokens, 0, 12), 1);
  InspectOptions inspect = FitOptions{}.inspect;
  const std::vector<LayerStatistics> measured = per_layer_statistics(inspect_workload(twin, inspect));
  for (const LayerFit& l : fit.layers) {
    for (const FitStatistic& s : fit_statistics()) {
      EXPECT_DOUBLE_EQ(measured[std::size_t(l.layer)].mean.*s.member, l.fitted.mean.*s.member)
          << "layer " << l.layer << " " << s.name;
    }
    EXPECT_DOUBLE_EQ(fit_error(measured[std::size_t(l.layer)], l.target), l.error);
  }
}

TEST(ProfileFit, TheTwinHasAsManySinkHeadsAsTheRealLayer) {
  // Half the heads of the real sink layer are sink heads; the fitted count (sink_heads) gives
  // exactly as many of the twin's query heads the sink term, under every seed.
  WorkloadSpec spec = two_layer_spec(21);
  spec.layer_params[1].sink_head_fraction = 0.5;
  spec.layer_params[1].sink_logit = 14;
  const Workload real = generate_workload(spec, 1);
  const ProfileFit fit = fit_profile(real, "half", small_fit(5));
  const int q_heads = real.shape().q_heads;
  // Under every seed, not only the fit's own (issue 28 item 5: a twin describes a model, not a draw).
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    const LlmLikeTables tables = build_llm_like_tables(spec_from_profile(fit.profile, kTokens, 0, seed));
    for (const LayerFit& l : fit.layers) {
      int flagged = 0;
      for (int h = 0; h < q_heads; ++h) flagged += tables.sink_head[std::size_t(l.layer * q_heads + h)];
      EXPECT_EQ(flagged, std::lround(l.target.sink_head_rate * q_heads)) << "layer " << l.layer << " seed " << seed;
    }
  }
  EXPECT_EQ(fit.layers[1].target.sink_head_rate, 0.5);
  EXPECT_EQ(fit.layers[1].params.sink_heads, 2);
}

TEST(ProfileFit, TheTwinIsAcceptedAtEverySeedAndLength) {
  // The fit runs once (seeds 5..7, 256 tokens); the twin generated from its profile at seeds
  // 0..4 and at two other lengths (512 and 1024: at 256 tokens the token-level noise alone moves
  // one seed's recent mass by ~1.25 tolerances) matches every statistic of the real workload of
  // that length in every layer.
  WorkloadSpec spec = two_layer_spec(21);
  spec.shape.q_heads = 8;  // 4 query heads per KV head: a layer mean over 8 heads
  spec.layer_params[1].sink_heads = 4;
  spec.layer_params[1].sink_logit = 14;
  spec.layer_params[1].low_norm_sinks = 1;  // as in real models: the sink key has the lowest norm
  const Workload real = generate_workload(spec, 1);
  FitOptions options = small_fit(5);
  options.seeds = 3;  // the mean of seeds 5, 6, 7: none of the seeds checked below
  options.max_evaluations = FitOptions{}.max_evaluations;  // the command's budget: a fit within a quarter tolerance
  const ProfileFit fit = fit_profile(real, "half", options);
  EXPECT_EQ(fit.layers[1].params.low_norm_sinks, 1);  // the fit saw the low-norm first key
  EXPECT_EQ(fit.layers[1].params.sink_heads, 4);
  const InspectOptions inspect = FitOptions{}.inspect;
  // The defect this guards against: the same fitted parameters with every per-head draw following
  // the seed (which heads are sink heads, directions, recency spectrum, type saliences).
  GeneratorProfile per_seed = fit.profile;
  for (LlmLikeParams& p : per_seed.layers) p.sink_heads = -1, p.exact_recency = 0, p.fixed_structure = 0;
  int per_seed_misses = 0;
  for (int tokens : {2 * kTokens, 4 * kTokens}) {  // lengths other than the fitted one
    WorkloadSpec real_spec = spec;
    real_spec.shape.tokens = tokens;
    const auto target = per_layer_statistics(inspect_workload(generate_workload(real_spec, 1), inspect));
    for (std::uint64_t seed = 0; seed < 5; ++seed) {
      const auto old_way = per_layer_statistics(
          inspect_workload(generate_workload(spec_from_profile(per_seed, tokens, 0, seed), 1), inspect));
      for (std::size_t l = 0; l < old_way.size(); ++l) per_seed_misses += fit_error(old_way[l], target[l]) > 1.0;
      const Workload twin = generate_workload(spec_from_profile(fit.profile, tokens, 0, seed), 1);
      const auto measured = per_layer_statistics(inspect_workload(twin, inspect));
      for (std::size_t l = 0; l < measured.size(); ++l) {
        std::string stats;
        for (const FitStatistic& st : fit_statistics()) {
          stats += std::string(" ") + st.name + " " + std::to_string(measured[l].mean.*st.member) + "/" +
                   std::to_string(target[l].mean.*st.member);
        }
        EXPECT_LE(fit_error(measured[l], target[l]), 1.0) << "tokens " << tokens << " seed " << seed << " layer " << l
                                                          << " (twin/real):" << stats;
      }
    }
  }
  EXPECT_GT(per_seed_misses, 0);
}

/// Every query along one direction u, key j = norm_j u: the score grows with the key norm, so
/// high-norm keys attract attention (Spearman near +1).
Workload high_norm_attracts() {
  Workload real(Shape{1, 2, 1, kTokens, 16});
  for (int j = 0; j < kTokens; ++j) {
    const double norm = 0.5 + 2.0 * uniform(3, 77, std::uint64_t(j));
    for (int x = 0; x < 16; ++x) real.k(0, 0)(j, x) = float(x == 0 ? norm : 0.0);
    for (int h = 0; h < 2; ++h) real.q(0, h)(j, 0) = 4.0f;
  }
  return real;
}

TEST(ProfileFit, MatchesHighNormKeysThatAttractWithANegativeNormRange) {
  const ProfileFit fit = fit_profile(high_norm_attracts(), "high norm", small_fit(1));
  const LayerFit& l = fit.layers.front();
  EXPECT_GT(l.target.mean.norm_attention_spearman, 0.8);
  EXPECT_LE(l.error, 1.0);
  EXPECT_LT(l.params.norm_logit_range, 0.0);  // the sign the low-norm structure alone lacks
}

TEST(ProfileFit, ReportsTheGapOfALayerItHasNotMatched) {
  // Two evaluations are not enough to move the norm range from 0 to the layer's: the fit says so
  // with the gap it measured, and does not stop before its budget.
  FitOptions options = small_fit(1);
  options.max_evaluations = 2;
  const ProfileFit fit = fit_profile(high_norm_attracts(), "unmatched", options);
  const LayerFit& l = fit.layers.front();
  EXPECT_GT(l.error, 1.0);
  EXPECT_DOUBLE_EQ(l.error, fit_error(l.fitted, l.target));
  EXPECT_EQ(l.evaluations, 2);
}

TEST(ProfileFit, FitErrorIsTheLargestGapInTolerances) {
  LayerStatistics a, b;
  b.mean.sparsity = 0.03;                  // 1.0 tolerance
  b.mean.norm_attention_spearman = -0.45;  // 3.0 tolerances
  EXPECT_DOUBLE_EQ(fit_error(a, b), 3.0);
  b.mean.norm_attention_spearman = 0;
  b.mean.recent_mass = 0.04;
  EXPECT_DOUBLE_EQ(fit_error(a, b), 1.0);
  EXPECT_DOUBLE_EQ(fit_error(a, a), 0.0);
}

TEST(ProfileFit, RejectsUnusableInput) {
  const Workload short_one = generate_workload(spec_from_preset("tiny", 100, 1, 0), 1);
  EXPECT_THROW(fit_profile(short_one, "x"), InputError);  // 100 tokens <= twice the 64-key window
  FitOptions none;
  none.max_evaluations = 0;
  const Workload w = generate_workload(two_layer_spec(1), 1);
  EXPECT_THROW(fit_profile(w, "x", none), InputError);
}

}  // namespace
}  // namespace subevict
