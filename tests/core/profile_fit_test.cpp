// Tests core/profile_fit.hpp: the fit recovers the statistics of a workload the generator can
// produce, its twin reproduces exactly what the fit measured, and a structure the generator
// cannot produce is reported as unmatched rather than hidden.
#include <gtest/gtest.h>

#include <algorithm>
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

/// The dense layer of two_layer_spec(seed) alone, at `tokens` tokens.
WorkloadSpec dense_layer_spec(std::uint64_t seed, int tokens) {
  WorkloadSpec spec = two_layer_spec(seed);
  spec.shape = Shape{1, 4, 2, tokens, 32};
  spec.layer_params.resize(1);
  return spec;
}

/// " name twin/real" of every fitted statistic, for failure messages.
std::string statistics_text(const LayerStatistics& twin, const LayerStatistics& real) {
  std::string text;
  for (const FitStatistic& st : fit_statistics()) {
    text += std::string(" ") + st.name + " " + std::to_string(twin.mean.*st.member) + "/" +
            std::to_string(real.mean.*st.member);
  }
  return text;
}

/// The largest fit_error of `l` over its fitted lengths, on `statistics`.
double error_over_lengths(const LayerFit& l, const std::vector<FitStatistic>& statistics) {
  double worst = 0;
  for (std::size_t i = 0; i < l.length_fitted.size(); ++i) {
    worst = std::max(worst, fit_error(l.length_fitted[i], l.length_targets[i], statistics));
  }
  return worst;
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
  // The five statistics: the wide window's mass only with FitOptions::wide_recent.
  ASSERT_EQ(fit.statistics.size(), 5u);
  for (const LayerFit& l : fit.layers) {
    EXPECT_LE(l.error, 1.0) << "layer " << l.layer;
    EXPECT_EQ(l.params.recency_reach, 0.0) << "layer " << l.layer;  // the reach is not fitted
    for (const FitStatistic& s : fit.statistics) {
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
  ASSERT_EQ(fit.lengths, std::vector<int>{kTokens});  // half of 256 is not above twice the 64-key window
  const Workload twin = generate_workload(spec_from_profile(fit.profile, kTokens, 0, 12), 1);
  InspectOptions inspect = FitOptions{}.inspect;
  const std::vector<LayerStatistics> measured = per_layer_statistics(inspect_workload(twin, inspect));
  for (const LayerFit& l : fit.layers) {
    for (const FitStatistic& s : fit_statistics()) {
      EXPECT_DOUBLE_EQ(measured[std::size_t(l.layer)].mean.*s.member, l.fitted.mean.*s.member)
          << "layer " << l.layer << " " << s.name;
    }
    EXPECT_DOUBLE_EQ(fit_error(measured[std::size_t(l.layer)], l.target, fit.statistics), l.error);
  }
}

TEST(ProfileFit, FitsEveryLengthAgainstTheRealPrefixAndReportsTheWorst) {
  // At 512 tokens the default shorter length (half) is 256 tokens, above twice the recent window:
  // the fit matches both, each against the real workload's first tokens, and its error is the
  // larger of the two. Each length's printed statistics are the twin's at that length, bit for bit.
  WorkloadSpec spec = two_layer_spec(41);
  spec.shape.tokens = 2 * kTokens;
  const Workload real = generate_workload(spec, 1);
  const ProfileFit fit = fit_profile(real, "two lengths", small_fit(3));
  ASSERT_EQ(fit.lengths, (std::vector<int>{2 * kTokens, kTokens}));
  EXPECT_EQ(fit.statistics.size(), 5u);  // without FitOptions::wide_recent
  const InspectOptions inspect = FitOptions{}.inspect;
  const auto prefix = per_layer_statistics(inspect_workload(first_tokens(real, kTokens), inspect));
  for (const LayerFit& l : fit.layers) {
    ASSERT_EQ(l.length_targets.size(), 2u);
    for (std::size_t i = 0; i < fit.lengths.size(); ++i) {
      const auto twin = per_layer_statistics(
          inspect_workload(generate_workload(spec_from_profile(fit.profile, fit.lengths[i], 0, 3), 1), inspect));
      for (const FitStatistic& st : fit_statistics()) {
        EXPECT_DOUBLE_EQ(twin[std::size_t(l.layer)].mean.*st.member, l.length_fitted[i].mean.*st.member)
            << "layer " << l.layer << " tokens " << fit.lengths[i] << " " << st.name;
      }
    }
    EXPECT_DOUBLE_EQ(l.error, error_over_lengths(l, fit.statistics)) << "layer " << l.layer;
    EXPECT_LE(l.error, 1.0) << "layer " << l.layer;
    for (const FitStatistic& st : fit_statistics()) {
      EXPECT_DOUBLE_EQ(l.length_targets[1].mean.*st.member, prefix[std::size_t(l.layer)].mean.*st.member) << st.name;
    }
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
      for (std::size_t l = 0; l < old_way.size(); ++l) per_seed_misses += fit_error(old_way[l], target[l], fit.statistics) > 1.0;
      const Workload twin = generate_workload(spec_from_profile(fit.profile, tokens, 0, seed), 1);
      const auto measured = per_layer_statistics(inspect_workload(twin, inspect));
      for (std::size_t l = 0; l < measured.size(); ++l) {
        EXPECT_LE(fit_error(measured[l], target[l], fit.statistics), 1.0)
            << "tokens " << tokens << " seed " << seed << " layer " << l
            << " (twin/real):" << statistics_text(measured[l], target[l]);
      }
    }
  }
  EXPECT_GT(per_seed_misses, 0);
}

TEST(ProfileFit, FitsTheRecencyReachWhereTheLengthHoldsTheWideWindow) {
  // A dense layer whose recency stops at 32 keys: the mass on the last 64 keys alone leaves the
  // mass on the last 256 free, and a twin without a reach keeps too much of it. Fitted at 1024
  // tokens and at 512 (whose prefix still holds the whole wide window), the twin matches all six
  // statistics with a finite reach at both lengths and at seeds the fit did not use.
  WorkloadSpec spec = dense_layer_spec(31, 4 * kTokens);
  spec.layer_params[0].recency_logit = 6.0;
  spec.layer_params[0].recency_reach = 32;
  spec.layer_params[0].exact_recency = 1;
  const Workload real = generate_workload(spec, 1);
  FitOptions options = small_fit(5);
  options.seeds = 3;
  options.max_evaluations = FitOptions{}.max_evaluations;
  EXPECT_EQ(fit_profile(real, "five", small_fit(5)).statistics.size(), 5u);  // only when asked
  options.wide_recent = true;
  const ProfileFit fit = fit_profile(real, "reach", options);
  ASSERT_EQ(fit.statistics.size(), 6u);  // the five and the wide window's mass
  EXPECT_STREQ(fit.statistics.back().name, "wide_recent_mass");
  const LayerFit& l = fit.layers.front();
  EXPECT_LE(l.error, 1.0);
  EXPECT_GT(l.params.recency_reach, 0.0);
  EXPECT_LT(l.params.recency_reach, 4.0 * kTokens);  // cut within the fitted length
  const InspectOptions inspect = FitOptions{}.inspect;
  // Without the reach the twin keeps too much of the wide window: the check can fail.
  GeneratorProfile no_reach = fit.profile;
  no_reach.layers.front().recency_reach = 0;
  const auto unreached = per_layer_statistics(
      inspect_workload(generate_workload(spec_from_profile(no_reach, 4 * kTokens, 0, 5), 1), inspect));
  EXPECT_GT(fit_error(unreached.front(), l.target, fit.statistics), 1.0)
      << "wide mass without the reach " << unreached.front().mean.wide_recent_mass << ", real " << l.target.mean.wide_recent_mass;
  ASSERT_EQ(fit.lengths, (std::vector<int>{4 * kTokens, 2 * kTokens}));
  for (int tokens : fit.lengths) {
    WorkloadSpec real_spec = spec;
    real_spec.shape.tokens = tokens;
    const auto target = per_layer_statistics(inspect_workload(generate_workload(real_spec, 1), inspect));
    for (std::uint64_t seed = 0; seed < 5; ++seed) {
      const auto measured = per_layer_statistics(
          inspect_workload(generate_workload(spec_from_profile(fit.profile, tokens, 0, seed), 1), inspect));
      EXPECT_LE(fit_error(measured.front(), target.front(), fit.statistics), 1.0)
          << "tokens " << tokens << " seed " << seed << " (twin/real):" << statistics_text(measured.front(), target.front());
    }
  }
}

/// The dense layer of dense_layer_spec(23) at 2 · kTokens tokens with heavy-hitter keys at low
/// norms (salient_low_norm 0.9), its key norms spread over `norm_spread` key units.
Workload low_norm_layer(double norm_spread) {
  WorkloadSpec spec = dense_layer_spec(23, 2 * kTokens);
  spec.layer_params[0].heavy_logit = 1.5;
  spec.layer_params[0].salient_low_norm = 0.9;
  spec.layer_params[0].norm_spread = norm_spread;
  return generate_workload(spec, 1);
}

/// small_fit(6) with the default evaluations.
FitOptions low_norm_fit() {
  FitOptions options = small_fit(6);
  options.max_evaluations = FitOptions{}.max_evaluations;
  return options;
}

TEST(ProfileFit, FitsTheHeavyHittersLowNormsWhenAsked) {
  // A layer whose heavy-hitter keys sit at low norms (salient_low_norm 0.9): the lowest-norm tenth
  // of the keys receives far more than the unordered norms give. Asked for (FitOptions::low_norm),
  // the fit matches that share with salient_low_norm; the same twin with unordered norms misses it
  // (so the check can fail), and the fit not asked leaves salient_low_norm at 0.
  const Workload real = low_norm_layer(LlmLikeParams{}.norm_spread);
  FitOptions options = low_norm_fit();
  const ProfileFit plain = fit_profile(real, "five", small_fit(6));
  EXPECT_EQ(plain.statistics.size(), 5u);
  EXPECT_EQ(plain.layers.front().params.salient_low_norm, 0.0);
  options.low_norm = true;
  const ProfileFit fit = fit_profile(real, "low norm", options);
  ASSERT_EQ(fit.statistics.size(), 6u);
  EXPECT_STREQ(fit.statistics.back().name, "low_norm_share");
  const LayerFit& l = fit.layers.front();
  EXPECT_LE(l.error, 1.0) << statistics_text(l.fitted, l.target);
  EXPECT_GT(l.params.salient_low_norm, 0.3);
  GeneratorProfile unordered = fit.profile;
  unordered.layers.front().salient_low_norm = 0;
  const InspectOptions inspect = FitOptions{}.inspect;
  const auto measured = per_layer_statistics(
      inspect_workload(generate_workload(spec_from_profile(unordered, 2 * kTokens, 0, 6), 1), inspect));
  EXPECT_GT(l.target.mean.low_norm_share - measured.front().mean.low_norm_share, 0.08)
      << "twin/real:" << statistics_text(measured.front(), l.target);
}

/// The dense layer of dense_layer_spec(23) at 2 · kTokens tokens whose first token and 3% of the
/// later ones are sinks alike (exact sinks, sink_token_rate 0.03), their keys at
/// `sink_norm_quantile` (-1: bare, low).
Workload sink_token_layer(double sink_norm_quantile) {
  WorkloadSpec spec = dense_layer_spec(23, 2 * kTokens);
  LlmLikeParams& p = spec.layer_params[0];
  p.sinks = 1;
  p.sink_logit = 9;
  p.exact_sinks = 1;
  p.sink_token_rate = 0.03;
  p.sink_norm_quantile = sink_norm_quantile;
  return generate_workload(spec, 1);
}

TEST(ProfileFit, GivesTheTwinTheLaterSinkTokensWhenAsked) {
  // A layer whose first token and 3% of the later ones are sinks alike (sink_token_rate 0.03).
  // Asked for (FitOptions::sink_tokens), the twin gets the real layer's measured rate and, with
  // that many sinks sharing the attention, still the first-token mass; its own measured rate is
  // the real one's. Not asked, the twin has one sink, so its measured rate misses the real one's
  // (the check can fail) while the five statistics may still hold.
  const Workload real = sink_token_layer(-1);
  const ProfileFit plain = fit_profile(real, "one sink", small_fit(6));
  const LayerFit& one = plain.layers.front();
  EXPECT_EQ(one.params.sink_token_rate, 0.0);
  ASSERT_GT(one.target.mean.sink_token_rate, 0.015);
  EXPECT_LT(one.fitted.mean.sink_token_rate, 0.5 * one.target.mean.sink_token_rate);
  FitOptions options = small_fit(6);
  options.sink_tokens = true;
  const ProfileFit fit = fit_profile(real, "sink tokens", options);
  const LayerFit& l = fit.layers.front();
  EXPECT_GT(l.params.sink_heads, 0);
  EXPECT_EQ(l.params.sink_token_rate, l.target.mean.sink_token_rate);
  EXPECT_NEAR(l.fitted.mean.sink_token_rate, l.target.mean.sink_token_rate, 0.35 * l.target.mean.sink_token_rate);
  EXPECT_NEAR(l.fitted.mean.first_token_mass, l.target.mean.first_token_mass, 0.08)
      << "twin/real:" << statistics_text(l.fitted, l.target);
}

/// The share of the other keys with a smaller norm than the first key's, averaged over KV heads.
double first_key_norm_share(const Workload& w) {
  double share = 0;
  for (int h = 0; h < w.shape().kv_heads; ++h) {
    const Eigen::VectorXd norms = w.k(0, h).cast<double>().rowwise().norm();
    share += double((norms.tail(norms.size() - 1).array() < norms(0)).count()) / double(norms.size() - 1);
  }
  return share / w.shape().kv_heads;
}

TEST(ProfileFit, GivesTheTwinsSinkKeysTheRealOnesHighNormWithTheSinkTokens) {
  // A layer whose sink keys (the first and 3% of the later tokens) sit at a high norm (quantile
  // 0.9), as some real layers' do: with FitOptions::sink_tokens the twin's sink keys get the real
  // first key's norm quantile, and its generated first key lands there. Red when the fit leaves
  // sink_norm_quantile off (-1): the twin's bare sink key is then low.
  const Workload real = sink_token_layer(0.9);
  const double real_share = first_key_norm_share(real);
  ASSERT_GT(real_share, 0.75);
  FitOptions options = small_fit(6);
  options.sink_tokens = true;
  const ProfileFit fit = fit_profile(real, "high-norm first sink", options);
  const LayerFit& l = fit.layers.front();
  EXPECT_GT(l.params.sink_heads, 0);
  EXPECT_DOUBLE_EQ(l.params.sink_norm_quantile, real_share);
  const Workload twin = generate_workload(spec_from_profile(fit.profile, 2 * kTokens, 0, 4), 1);
  EXPECT_NEAR(first_key_norm_share(twin), real_share, 0.15);
  EXPECT_NEAR(l.fitted.mean.first_token_mass, l.target.mean.first_token_mass, 0.08)
      << "twin/real:" << statistics_text(l.fitted, l.target);
}

TEST(ProfileFit, TheLowNormSearchKeepsTheOtherStatisticsWithinItsMargin) {
  // Heavy-hitter keys at low norms, but real key norms spread over 4 units where the twin's spread
  // over 24: the twin reaches the low-norm share only by moving the top share and the recent mass.
  // The low-norm search keeps the five within FitOptions::low_norm_margin at both lengths and
  // reports the low-norm share it could not reach; with a margin of 100 tolerances it gives the
  // five up for the share (so the check can fail).
  FitOptions options = low_norm_fit();
  options.low_norm = true;
  const Workload real = low_norm_layer(4);
  auto five_error = [](const ProfileFit& fit) {
    const std::vector<FitStatistic> five(fit.statistics.begin(), fit.statistics.begin() + 5);
    return error_over_lengths(fit.layers.front(), five);
  };
  const ProfileFit fit = fit_profile(real, "low norm", options);
  ASSERT_EQ(fit.statistics.size(), 6u);
  ASSERT_EQ(fit.lengths.size(), 2u);
  const LayerFit& l = fit.layers.front();
  EXPECT_LE(five_error(fit), options.low_norm_margin) << "twin/real:" << statistics_text(l.fitted, l.target);
  EXPECT_GT(l.error, 1.0);                            // the low-norm share, not matched, is reported
  EXPECT_GT(l.evaluations, options.max_evaluations);  // the second search ran
  options.low_norm_margin = 100;
  const ProfileFit traded = fit_profile(real, "low norm, any margin", options);
  EXPECT_GT(five_error(traded), 1.0);
  EXPECT_LT(traded.layers.front().error, l.error);
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
  EXPECT_DOUBLE_EQ(l.error, fit_error(l.fitted, l.target, fit.statistics));
  EXPECT_EQ(l.evaluations, 2);
}

TEST(ProfileFit, FitErrorIsTheLargestGapInTolerances) {
  LayerStatistics a, b;
  b.mean.sparsity = 0.03;                  // 1.0 tolerance
  b.mean.norm_attention_spearman = -0.45;  // 3.0 tolerances
  const std::vector<FitStatistic>& all = fit_statistics();
  EXPECT_DOUBLE_EQ(fit_error(a, b, all), 3.0);
  b.mean.norm_attention_spearman = 0;
  b.mean.recent_mass = 0.04;
  EXPECT_DOUBLE_EQ(fit_error(a, b, all), 1.0);
  b.mean.wide_recent_mass = 0.1;  // 2 tolerances, counted only where the wide statistic is fitted
  EXPECT_DOUBLE_EQ(fit_error(a, b, all), 2.0);
  EXPECT_DOUBLE_EQ(fit_error(a, b, fitted_statistics(511, FitOptions{}.inspect)), 1.0);
  EXPECT_DOUBLE_EQ(fit_error(a, b, fitted_statistics(512, FitOptions{}.inspect)), 2.0);
  EXPECT_DOUBLE_EQ(fit_error(a, a, all), 0.0);
}

TEST(ProfileFit, RejectsUnusableInput) {
  const Workload short_one = generate_workload(spec_from_preset("tiny", 100, 1, 0), 1);
  EXPECT_THROW(fit_profile(short_one, "x"), InputError);  // 100 tokens <= twice the 64-key window
  FitOptions none;
  none.max_evaluations = 0;
  const Workload w = generate_workload(two_layer_spec(1), 1);
  EXPECT_THROW(fit_profile(w, "x", none), InputError);
  FitOptions no_margin;
  no_margin.low_norm_margin = 0;
  EXPECT_THROW(fit_profile(w, "x", no_margin), InputError);
}

}  // namespace
}  // namespace subevict
