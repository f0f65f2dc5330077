// Tests core/workload_stats.hpp on the LLM-like generator: the structures of real attention are
// present in the default and each one's statistic moves when that structure is switched off.
#include <gtest/gtest.h>

#include <cmath>

#include "core/attention.hpp"
#include "core/generator.hpp"
#include "core/metrics.hpp"
#include "core/workload_stats.hpp"

namespace subevict {
namespace {

/// Mean statistics of 4 heads x 1024 tokens of the llama2-7b-shaped LLM-like default, with one
/// parameter changed by `edit` (or, for kGaussian, the Gaussian generator at that shape).
template <class Edit>
HeadStatistics measure(Edit edit, GeneratorKind kind = GeneratorKind::kLlmLike) {
  WorkloadSpec spec = spec_from_preset("llama2-7b", 1024, 1, 11);
  spec.shape.q_heads = spec.shape.kv_heads = 4;
  spec.kind = kind;
  edit(spec.llm);
  return mean_statistics(inspect_workload(generate_workload(spec)));
}

const HeadStatistics& defaults() {
  static const HeadStatistics d = measure([](LlmLikeParams&) {});
  return d;
}

TEST(LlmLikeDefault, ShowsTheStructureOfRealAttention) {
  const HeadStatistics& d = defaults();
  EXPECT_GT(d.sparsity, 0.90);                 // H2O: attention is over 90% sparse at tau = 1%
  EXPECT_GT(d.power_law_r2, 0.9);              // accumulated attention is close to a power law
  EXPECT_GT(d.heavy_share, 0.5);               // top 10% of tokens hold most received attention
  EXPECT_GT(d.sink_mass, 0.2);                 // a large share of mass sits on the sinks
  EXPECT_LT(d.norm_attention_spearman, -0.1);  // low-norm keys attract attention
}

TEST(LlmLikeSwitches, SinksOffRemovesSinkMass) {
  const HeadStatistics off = measure([](LlmLikeParams& p) { p.sink_logit = 0; });
  EXPECT_LT(off.sink_mass, 0.25 * defaults().sink_mass);
}

TEST(LlmLikeSwitches, HeavyHittersOffThinsTheTail) {
  const HeadStatistics off = measure([](LlmLikeParams& p) { p.heavy_logit = 0; });
  EXPECT_LT(off.heavy_share, defaults().heavy_share - 0.15);
  EXPECT_LT(off.power_law_exponent, defaults().power_law_exponent);
}

TEST(LlmLikeSwitches, LowNormOffRemovesTheNegativeCorrelation) {
  const HeadStatistics off = measure([](LlmLikeParams& p) { p.norm_logit_range = 0; });
  EXPECT_GT(off.norm_attention_spearman, -0.05);
}

TEST(LlmLikeSwitches, RecencyOffLowersRecentMass) {
  const HeadStatistics off = measure([](LlmLikeParams& p) { p.recency_logit = 0; });
  EXPECT_LT(off.recent_mass, 0.75 * defaults().recent_mass);
}

// The scores fall with distance only through the recency term: without it the slope is noise
// around 0 (content, types and norms do not depend on the distance).
TEST(LlmLikeSwitches, RecencyOffFlattensTheRecencySlope) {
  const HeadStatistics off = measure([](LlmLikeParams& p) { p.recency_logit = 0; });
  EXPECT_GT(defaults().recency_slope, 0.2);
  EXPECT_LT(std::abs(off.recency_slope), 0.05);
}

TEST(LlmLikeSwitches, HigherTemperatureLowersSparsity) {
  const HeadStatistics hot = measure([](LlmLikeParams& p) { p.temperature = 2; });
  EXPECT_LT(hot.sparsity, defaults().sparsity - 0.1);
}

TEST(GaussianWorkload, ShowsNoneOfTheStructures) {
  const HeadStatistics g = measure([](LlmLikeParams&) {}, GeneratorKind::kGaussian);
  EXPECT_LT(g.sparsity, 0.5);
  EXPECT_LT(g.sink_mass, 0.05);
  EXPECT_LT(g.heavy_share, defaults().heavy_share);
}

TEST(Inspect, SlidingWindowLayersAreMeasuredUnderTheirMask) {
  WorkloadSpec spec = spec_from_preset("tiny", 96, 2, 5);
  spec.layer_params = {spec.llm, spec.llm};
  spec.layer_params[1].window = 16;
  const Workload w = generate_workload(spec);
  ASSERT_EQ(w.windows(), (std::vector<int>{0, 16}));  // the generator records the mask
  InspectOptions options;
  options.recent_window = 8;
  for (int layer : {0, 1}) {
    const HeadStatistics st = inspect_head(w, layer, 0, options);
    EXPECT_EQ(st.window, w.window(layer));
    // By hand from the masked rows (core/attention.hpp attention_row, tested on its own).
    const int n = w.shape().tokens, window = w.window(layer);
    long long below = 0, visible = 0;
    double first = 0;
    const int first_from = std::min(options.first_token_from, n / 2);
    for (int i = 0; i < n; ++i) {
      const Eigen::VectorXd row = attention_row(w.q(layer, 0), w.k(layer, 0), i, w.score_scale(), window);
      const int from = first_visible_key(i, window);
      below += count_below(row.tail(i + 1 - from), options.tau);
      visible += i + 1 - from;
      if (i >= first_from) first += row[0];
    }
    EXPECT_NEAR(st.sparsity, double(below) / double(visible), 1e-12) << "layer " << layer;
    EXPECT_NEAR(st.first_token_mass, first / double(n - first_from), 1e-12) << "layer " << layer;
  }
  // Beyond the window no query sees token 0: its first-token mass is that of the first 16 rows only.
  EXPECT_LT(inspect_head(w, 1, 0, options).first_token_mass, inspect_head(w, 0, 0, options).first_token_mass);
}

// A score that depends on the distance alone, s_ij = scale R cos((i - j) theta) (head_dim 2, q_i
// and k_j on the unit circle at angles i theta and j theta): recency_slope is its mean over the
// near distances minus its mean over the far ones, over the doublings between them, in every row
// that qualifies, whatever the length; a sliding window narrows the far distances.
TEST(Inspect, RecencySlopeIsTheFallOfTheScoresPerDoublingOfDistance) {
  const double theta = 0.011, radius = 20.0;
  for (const int tokens : {600, 1200}) {
    Shape shape{2, 1, 1, tokens, 2};
    Workload w(shape);
    w.set_windows({0, 48});
    for (int layer : {0, 1}) {
      for (int i = 0; i < tokens; ++i) {
        w.q(layer, 0).row(i) << float(radius * std::cos(i * theta)), float(radius * std::sin(i * theta));
        w.k(layer, 0).row(i) << float(std::cos(i * theta)), float(std::sin(i * theta));
      }
    }
    InspectOptions options;  // wide_recent_window 256: far distances [128, 256), near [8, 16)
    const auto expected = [&](int layer, int near, int far) {
      // The float rounding of q and k, as the workload holds them.
      double total = 0;
      long long rows = 0;
      for (int i = far - 1 + options.sinks; i < tokens; ++i, ++rows) {
        const auto score = [&](int d) { return w.score_scale() * w.q(layer, 0).row(i).cast<double>().dot(
                                                                      w.k(layer, 0).row(i - d).cast<double>()); };
        double near_sum = 0, far_sum = 0;
        for (int d = near; d < 2 * near; ++d) near_sum += score(d);
        for (int d = far / 2; d < far; ++d) far_sum += score(d);
        total += near_sum / near - far_sum / (far - far / 2);
      }
      return total / double(rows) / std::log2(double(far / 2) / near);
    };
    const HeadStatistics global = inspect_head(w, 0, 0, options), window = inspect_head(w, 1, 0, options);
    EXPECT_NEAR(global.recency_slope, expected(0, 8, 256), 1e-9) << tokens << " tokens";
    EXPECT_NEAR(window.recency_slope, expected(1, 1, 48), 1e-9) << tokens << " tokens";
    // The closed form (cos falls from ~1 near to cos(192 theta) far): a positive slope, and the
    // same at both lengths since every row sees the same distances.
    EXPECT_GT(global.recency_slope, 0.5);
  }
  // Fewer than 4 keys in the far window: no slope to measure.
  Workload tiny(Shape{1, 1, 1, 7, 2});
  InspectOptions short_windows;
  short_windows.sinks = 0;
  short_windows.recent_window = 1;
  EXPECT_EQ(inspect_head(tiny, 0, 0, short_windows).recency_slope, 0.0);
}

TEST(Inspect, RejectsWorkloadsTooShortForTheWindows) {
  const Workload w = generate_workload(spec_from_preset("tiny", 16, 1, 0));
  EXPECT_THROW(inspect_workload(w), std::invalid_argument);
}

}  // namespace
}  // namespace subevict
