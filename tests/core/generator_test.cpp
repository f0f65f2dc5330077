// Tests core/generator.hpp, core/llm_like_model.hpp, core/generator_profile.hpp and
// core/presets.hpp.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <nlohmann/json.hpp>

#include "core/generator.hpp"
#include "core/generator_profile.hpp"
#include "core/input_error.hpp"
#include "core/llm_like_model.hpp"
#include "core/presets.hpp"
#include "core/statistics.hpp"
#include "core/workload_stats.hpp"
#include "io_test_support.hpp"

namespace subevict {
namespace {

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

bool bit_identical(const Workload& a, const Workload& b) {
  return a.shape() == b.shape() && bit_identical(a.q_data(), b.q_data()) &&
         bit_identical(a.k_data(), b.k_data()) && bit_identical(a.v_data(), b.v_data());
}

WorkloadSpec gen_spec() {
  const std::vector<std::string> names = {"tiny", "tiny-gqa", "tiny-mqa"};
  WorkloadSpec spec = spec_from_preset(*rc::gen::elementOf(names), *rc::gen::inRange(1, 40),
                                       *rc::gen::inRange(1, 3), *rc::gen::arbitrary<std::uint64_t>());
  spec.kind = *rc::gen::element(GeneratorKind::kGaussian, GeneratorKind::kLlmLike);
  return spec;
}

RC_GTEST_PROP(Generator, IsBitIdenticalAcrossRerunsAndThreadCounts, ()) {
  const WorkloadSpec spec = gen_spec();
  const Workload one = generate_workload(spec, 1);
  RC_ASSERT(bit_identical(one, generate_workload(spec, 1)));
  RC_ASSERT(bit_identical(one, generate_workload(spec, 2)));
}

RC_GTEST_PROP(Generator, ATokenDoesNotDependOnTheSequenceLength, ()) {
  // Every element is a pure function of (seed, tensor, element): a longer workload extends a
  // shorter one (same layer/head layout, RoPE tables indexed by position).
  WorkloadSpec spec = gen_spec();
  spec.shape.layers = 1;
  const Workload short_w = generate_workload(spec, 1);
  spec.shape.tokens += *rc::gen::inRange(1, 10);
  const Workload long_w = generate_workload(spec, 1);
  for (int h = 0; h < spec.shape.kv_heads; ++h) {
    RC_ASSERT(long_w.k(0, h).topRows(short_w.shape().tokens) == short_w.k(0, h));
    RC_ASSERT(long_w.v(0, h).topRows(short_w.shape().tokens) == short_w.v(0, h));
  }
  RC_ASSERT(long_w.q(0, 0).topRows(short_w.shape().tokens) == short_w.q(0, 0));
}

TEST(Generator, DifferentSeedsGiveDifferentWorkloads) {
  const Workload a = generate_workload(spec_from_preset("tiny", 16, 1, 1));
  const Workload b = generate_workload(spec_from_preset("tiny", 16, 1, 2));
  EXPECT_FALSE(bit_identical(a, b));
}

TEST(Generator, GaussianEntriesAreStandardNormal) {
  WorkloadSpec spec = spec_from_preset("tiny", 1024, 2, 5);
  spec.kind = GeneratorKind::kGaussian;
  const Workload w = generate_workload(spec);
  for (const auto* data : {&w.q_data(), &w.k_data(), &w.v_data()}) {
    const std::vector<double> x(data->begin(), data->end());
    const Summary s = summarize(x);
    const double se = 1.0 / std::sqrt(double(x.size()));
    EXPECT_LT(std::abs(s.mean), 5 * se);
    EXPECT_LT(std::abs(s.stddev - 1.0), 5 * se);
  }
}

TEST(Generator, RejectsInvalidSpecsNamingTheField) {
  WorkloadSpec spec = spec_from_preset("tiny", 16, 1, 0);
  spec.llm.temperature = 0;
  try {
    generate_workload(spec);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("temperature"), std::string::npos) << e.what();
  }
  spec = spec_from_preset("tiny", 16, 1, 0);
  spec.shape.head_dim = 6;
  EXPECT_THROW(generate_workload(spec), InputError);
  spec.shape.head_dim = 8;
  spec.shape.kv_heads = 3;
  EXPECT_THROW(generate_workload(spec), std::invalid_argument);
  EXPECT_THROW(find_preset("llama-9000"), InputError);
  EXPECT_THROW(generate_workload(spec_from_preset("tiny", 16, 1, 0), -1), InputError);
}

TEST(Presets, HaveTheRealModelShapes) {
  EXPECT_EQ(find_preset("llama2-7b").q_heads, 32);
  EXPECT_EQ(find_preset("llama2-7b").kv_heads, 32);
  EXPECT_EQ(find_preset("llama3-8b").kv_heads, 8);
  EXPECT_EQ(find_preset("mistral-7b").kv_heads, 8);
  EXPECT_EQ(find_preset("opt-30b").q_heads, 56);
  for (const Preset& p : presets()) {
    EXPECT_EQ(p.q_heads % p.kv_heads, 0) << p.name;
    if (p.name.rfind("tiny", 0) != 0) {
      EXPECT_EQ(p.head_dim, 128) << p.name;
    }
  }
}

/// FNV-1a over the bytes of Q, K and V.
std::uint64_t tensor_hash(const Workload& w) {
  std::uint64_t h = 1469598103934665603ull;
  for (const auto* data : {&w.q_data(), &w.k_data(), &w.v_data()}) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(data->data());
    for (std::size_t i = 0; i < data->size() * sizeof(float); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  }
  return h;
}

TEST(Generator, DefaultSpecIsBitIdenticalToTheGeneratorBeforePerLayerParameters) {
  // Hashes recorded from the generator before layer_params and sink_head_fraction existed: the
  // default (uniform, every head a sink head) output must never change.
  EXPECT_EQ(tensor_hash(generate_workload(spec_from_preset("tiny-gqa", 40, 2, 7), 1)), 0x3646ee2a31176e8cull);
  EXPECT_EQ(tensor_hash(generate_workload(spec_from_preset("llama2-7b", 64, 2, 3), 1)), 0x671e07f649dcb202ull);
  EXPECT_EQ(tensor_hash(generate_workload(spec_from_preset("llama3-8b", 48, 1, 5), 1)), 0x7fa2081e87198c96ull);
  // Spelling the uniform parameters out per layer changes nothing either.
  WorkloadSpec spec = spec_from_preset("llama2-7b", 64, 2, 3);
  spec.layer_params.assign(2, spec.llm);
  EXPECT_EQ(tensor_hash(generate_workload(spec, 1)), 0x671e07f649dcb202ull);
}

/// A small LLM-like spec (d = 64, 128 tokens) whose layers all use `layer`.
WorkloadSpec small_llm_spec(int layers, int q_heads, int kv_heads, const LlmLikeParams& layer) {
  WorkloadSpec spec;
  spec.shape = {layers, q_heads, kv_heads, 128, 64};
  spec.layer_params.assign(std::size_t(layers), layer);
  spec.seed = 17;
  return spec;
}

/// One strong sink (token 0) in every head, little else.
LlmLikeParams strong_sink() {
  LlmLikeParams p;
  p.sinks = 1;
  p.sink_logit = 14;
  p.heavy_logit = 0;
  p.norm_logit_range = 0;
  return p;
}

TEST(Generator, PerLayerParametersTakeEffectInTheirLayerOnly) {
  WorkloadSpec spec = small_llm_spec(3, 4, 2, strong_sink());
  spec.layer_params[1].sink_logit = 0;  // the middle layer has no sink, its neighbours do
  const auto layers = per_layer_statistics(inspect_workload(generate_workload(spec)));
  ASSERT_EQ(layers.size(), 3u);
  EXPECT_GT(layers[0].mean.first_token_mass, 0.5);
  EXPECT_LT(layers[1].mean.first_token_mass, 0.05);
  EXPECT_GT(layers[2].mean.first_token_mass, 0.5);
  // Layer 2 is exactly what a workload of that layer's parameters alone generates there.
  WorkloadSpec uniform = small_llm_spec(3, 4, 2, strong_sink());
  const Workload a = generate_workload(spec), b = generate_workload(uniform);
  EXPECT_TRUE(a.q(2, 3) == b.q(2, 3) && a.k(2, 1) == b.k(2, 1));
  EXPECT_FALSE(a.k(1, 1) == b.k(1, 1));
}

TEST(Generator, EachLayerRotatesWithItsOwnRopeBase) {
  // Layers 0 and 2 on one base, layer 1 on another (as a model with sliding-window layers on a
  // local base): each layer is bit for bit the layer of a workload with its base in every layer.
  WorkloadSpec mixed = small_llm_spec(3, 4, 2, strong_sink());
  mixed.shape.tokens = 48;
  const double bases[] = {10000.0, 50.0, 10000.0};
  for (int l = 0; l < 3; ++l) mixed.layer_params[std::size_t(l)].rope_base = bases[l];
  const Workload got = generate_workload(mixed);
  for (int l = 0; l < 3; ++l) {
    SCOPED_TRACE(l);
    WorkloadSpec uniform = mixed;
    for (LlmLikeParams& p : uniform.layer_params) p.rope_base = bases[l];
    const Workload expected = generate_workload(uniform);
    for (int h = 0; h < 4; ++h) EXPECT_TRUE(got.q(l, h) == expected.q(l, h));
    for (int h = 0; h < 2; ++h) EXPECT_TRUE(got.k(l, h) == expected.k(l, h));
  }
  // ... and the base matters: layer 1 on layer 0's base is another workload.
  WorkloadSpec one_base = mixed;
  for (LlmLikeParams& p : one_base.layer_params) p.rope_base = 10000.0;
  EXPECT_FALSE(generate_workload(one_base).k(1, 0) == got.k(1, 0));
}

TEST(Generator, GenerateLayersIsTheRangeOfTheWholeWorkloadBitForBit) {
  WorkloadSpec spec = small_llm_spec(4, 4, 2, strong_sink());
  spec.layer_params[2].sink_head_fraction = 0.5;
  spec.layer_params[3].content_logit_std = 0.7;
  const Workload whole = generate_workload(spec, 2);
  for (const auto& [first, count] : {std::pair{0, 4}, {2, 2}, {3, 1}, {1, 1}}) {
    SCOPED_TRACE(first);
    const Workload part = generate_layers(spec, first, count, 1);
    ASSERT_EQ(part.shape().layers, count);
    EXPECT_EQ(part.metadata, whole.metadata);
    for (int l = 0; l < count; ++l) {
      for (int h = 0; h < 4; ++h) EXPECT_TRUE(part.q(l, h) == whole.q(first + l, h)) << "q layer " << l;
      for (int h = 0; h < 2; ++h) {
        EXPECT_TRUE(part.k(l, h) == whole.k(first + l, h)) << "k layer " << l;
        EXPECT_TRUE(part.v(l, h) == whole.v(first + l, h)) << "v layer " << l;
      }
    }
  }
  WorkloadSpec gaussian = spec;
  gaussian.kind = GeneratorKind::kGaussian;
  EXPECT_TRUE(generate_layers(gaussian, 3, 1).k(0, 1) == generate_workload(gaussian).k(3, 1));
  for (const auto& [first, count] : {std::pair{-1, 1}, {0, 0}, {3, 2}, {4, 1}}) {
    EXPECT_THROW((void)generate_layers(spec, first, count), InputError) << first << " " << count;
  }
}

TEST(Generator, GenerateKvHeadsIsThoseHeadsOfTheWholeWorkloadBitForBit) {
  // 3 KV heads of 2 query heads each: the chosen KV heads' K, V and their query heads' Q are the
  // whole workload's; every other head is zero.
  WorkloadSpec spec = small_llm_spec(2, 6, 3, strong_sink());
  spec.layer_params[1].content_logit_std = 0.7;
  for (const GeneratorKind kind : {GeneratorKind::kLlmLike, GeneratorKind::kGaussian}) {
    spec.kind = kind;
    const Workload whole = generate_workload(spec, 2);
    for (const std::vector<int>& chosen : {std::vector<int>{1}, {0, 2}, {0, 1, 2}}) {
      SCOPED_TRACE(::testing::PrintToString(chosen));
      const Workload part = generate_kv_heads(spec, 0, 2, chosen, 2);
      const bool all = chosen.size() == 3;
      EXPECT_EQ(part.metadata.count("generated_kv_heads"), all ? 0u : 1u);
      if (!all) {
        EXPECT_EQ(part.metadata.at("generated_kv_heads"), chosen.size() == 1 ? "1" : "0,2");
      }
      for (int l = 0; l < 2; ++l) {
        for (int kv = 0; kv < 3; ++kv) {
          const bool generated = std::find(chosen.begin(), chosen.end(), kv) != chosen.end();
          const auto expect = [&](const auto& got, const auto& want, const char* tensor) {
            if (generated) {
              EXPECT_TRUE(got == want) << tensor << " layer " << l << " KV head " << kv;
            } else {
              EXPECT_EQ(got.cwiseAbs().maxCoeff(), 0.0f) << tensor << " layer " << l << " KV head " << kv;
            }
          };
          expect(part.k(l, kv), whole.k(l, kv), "k");
          expect(part.v(l, kv), whole.v(l, kv), "v");
          for (int h = 2 * kv; h < 2 * kv + 2; ++h) expect(part.q(l, h), whole.q(l, h), "q");
        }
      }
    }
  }
  for (const std::vector<int>& bad : {std::vector<int>{}, {3}, {-1}, {1, 1}, {2, 0}}) {
    EXPECT_THROW((void)generate_kv_heads(spec, 0, 2, bad), InputError) << ::testing::PrintToString(bad);
  }
}

TEST(Generator, SinkHeadFractionSetsTheShareOfHeadsThatAttendToTheSinks) {
  for (const auto& [fraction, low, high] : {std::tuple{0.0, 0.0, 0.0}, {1.0, 1.0, 1.0}, {0.5, 0.35, 0.65}}) {
    SCOPED_TRACE(fraction);
    LlmLikeParams p = strong_sink();
    p.sink_head_fraction = fraction;
    const WorkloadSpec spec = small_llm_spec(4, 32, 8, p);
    const double rate = sink_head_rate(inspect_workload(generate_workload(spec)));
    EXPECT_GE(rate, low);
    EXPECT_LE(rate, high);
  }
}

TEST(Generator, SinkHeadsIsAnExactCountForEverySeed) {
  // issue 28 item 5: with sink_head_fraction the number of sink heads is a coin toss per seed;
  // sink_heads fixes HOW MANY (the seed still chooses WHICH).
  LlmLikeParams p = strong_sink();
  p.sink_head_fraction = 0.1;  // ignored once sink_heads is set
  for (int count : {0, 1, 3, 8, 9}) {
    p.sink_heads = count;
    std::set<std::vector<std::uint8_t>> chosen;
    std::set<int> fraction_counts;
    for (std::uint64_t seed = 0; seed < 24; ++seed) {
      WorkloadSpec spec = small_llm_spec(2, 9, 3, p);
      spec.seed = seed;
      const LlmLikeTables t = build_llm_like_tables(spec);
      for (int l = 0; l < 2; ++l) {
        const auto first = t.sink_head.begin() + l * 9;
        EXPECT_EQ(std::count(first, first + 9, std::uint8_t(1)), count) << "seed " << seed << " layer " << l;
        chosen.insert(std::vector<std::uint8_t>(first, first + 9));
      }
      WorkloadSpec by_fraction = spec;
      for (LlmLikeParams& l : by_fraction.layer_params) std::tie(l.sink_heads, l.sink_head_fraction) = std::pair{-1, count / 9.0};
      const LlmLikeTables f = build_llm_like_tables(by_fraction);
      fraction_counts.insert(int(std::count(f.sink_head.begin(), f.sink_head.begin() + 9, std::uint8_t(1))));
    }
    if (count > 0 && count < 9) {
      EXPECT_GT(chosen.size(), 1u) << "the seed chooses which heads";
      EXPECT_GT(fraction_counts.size(), 1u) << "the defect: the fraction's count varies with the seed";
    }
  }
  // Measured: the same sink-head rate at every seed.
  p.sink_heads = 2;
  for (std::uint64_t seed : {0, 1, 2}) {
    WorkloadSpec spec = small_llm_spec(1, 4, 2, p);
    spec.seed = seed;
    EXPECT_DOUBLE_EQ(sink_head_rate(inspect_workload(generate_workload(spec))), 0.5) << "seed " << seed;
  }
  WorkloadSpec too_many = small_llm_spec(1, 4, 2, p);
  too_many.layer_params[0].sink_heads = 5;
  EXPECT_THROW(generate_workload(too_many), InputError);
  too_many.layer_params[0].sink_heads = -2;
  EXPECT_THROW(generate_workload(too_many), InputError);
}

/// Mean over queries of the first key's logit in query head `q_head` of `layer`.
double mean_first_key_logit(const Workload& w, int layer, int q_head) {
  const auto q = w.q(layer, q_head);
  const auto k = w.k(layer, w.shape().kv_head_of(q_head));
  double sum = 0;
  for (int i = 0; i < w.shape().tokens; ++i) {
    double dot = 0;
    for (int x = 0; x < w.shape().head_dim; ++x) dot += double(q(i, x)) * k(0, x);
    sum += dot * w.score_scale();
  }
  return sum / w.shape().tokens;
}

TEST(Generator, ExactSinksHaveTheSinkLogitUnderEverySeed) {
  LlmLikeParams p;  // the default structures, every one on
  p.sinks = 1;
  p.sink_logit = 8;
  p.fixed_structure = 1;  // the sink direction is the same under every seed
  p.norm_logit_range = 0;
  p.recency_logit = 0;  // no positional term: the mean over queries is the sink's logit alone
  double exact_spread = 0, drawn_spread = 0;
  std::vector<float> first_key;
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    SCOPED_TRACE(seed);
    WorkloadSpec spec = small_llm_spec(1, 2, 1, p);
    spec.shape.head_dim = 64;
    spec.shape.tokens = 1024;
    spec.seed = seed;
    spec.layer_params[0].exact_sinks = 1;
    const Workload exact = generate_workload(spec);
    spec.layer_params[0].exact_sinks = 0;
    const Workload drawn = generate_workload(spec);
    // The sink key is the sink direction alone: the same row under every seed.
    const auto k = exact.k(0, 0);
    std::vector<float> row;
    for (int x = 0; x < 64; ++x) row.push_back(k(0, x));
    if (first_key.empty()) first_key = row;
    EXPECT_EQ(row, first_key);
    // Its logit, averaged over the queries (whose own noise along u averages out), is sink_logit.
    exact_spread = std::max(exact_spread, std::abs(mean_first_key_logit(exact, 0, 0) - p.sink_logit));
    drawn_spread = std::max(drawn_spread, std::abs(mean_first_key_logit(drawn, 0, 0) - p.sink_logit));
  }
  EXPECT_LT(exact_spread, 0.15);
  EXPECT_GT(drawn_spread, 0.3) << "the defect: a drawn sink key moves the sink logit with the seed";
}

// With every structure but recency off, the logit of (i, j) is recency_logit * sum_p share_p
// cos((i - j) theta_p), the shares 1 / (1 + (lambda_p / reach)^4) normalized (equal without a
// reach), computed here from that definition; a short reach leaves no recency far back.
TEST(Generator, RecencyReachShapesTheRecencyLogitAsDocumented) {
  LlmLikeParams p;
  p.content_logit_std = p.sink_logit = p.heavy_logit = p.norm_logit_range = 0;
  p.sinks = 0;
  p.recency_logit = 4;
  p.exact_recency = 1;
  const int d = 64, n = 300, pairs = (d - 6) / 2;
  for (const double reach : {0.0, 16.0, 100.0}) {
    SCOPED_TRACE(reach);
    p.recency_reach = reach;
    WorkloadSpec spec = small_llm_spec(1, 1, 1, p);
    spec.shape.tokens = n;
    spec.shape.head_dim = d;
    const Workload w = generate_workload(spec);
    std::vector<double> share(pairs), theta(pairs);
    double total = 0;
    for (int x = 0; x < pairs; ++x) {
      theta[std::size_t(x)] = std::pow(p.rope_base, -2.0 * x / d);
      const double ratio = 1 / theta[std::size_t(x)] / reach;
      share[std::size_t(x)] = reach == 0 ? 1.0 : 1 / (1 + ratio * ratio * ratio * ratio);
      total += share[std::size_t(x)];
    }
    const auto q = w.q(0, 0), k = w.k(0, 0);
    double worst = 0, far_sum = 0;
    int far_count = 0;
    for (int i = 0; i < n; i += 7) {
      for (int j = 0; j <= i; ++j) {
        double logit = 0, expected = 0;
        for (int x = 0; x < d; ++x) logit += double(q(i, x)) * k(j, x);
        logit /= std::sqrt(double(d));
        for (int x = 0; x < pairs; ++x) expected += share[std::size_t(x)] / total * std::cos((i - j) * theta[std::size_t(x)]);
        expected *= p.recency_logit;
        worst = std::max(worst, std::abs(logit - expected));
        if (i - j > 4 * std::max(reach, 1.0)) far_sum += logit, ++far_count;
      }
    }
    EXPECT_LT(worst, 1e-4);  // float entries of norm ~2: a few ulps of the logit
    if (reach == 16) {
      EXPECT_LT(std::abs(far_sum / far_count), 0.1) << "no recency beyond the reach";
    } else if (reach == 0) {
      EXPECT_GT(far_sum / far_count, 0.5) << "the longest wavelengths reach back";
    }
  }
}

// sink_token_rate keys exactly K = round(rate · (n - 1)) later tokens as sinks, one in each of K
// equal stretches of the later tokens: with exact sinks their keys are the first token's bare sink
// key bit for bit and every other key differs from it; at rate 0 there is none; another seed
// moves them within their stretches. inspect's sink_token_rate then measures about the share
// generated, and about 0 without them.
TEST(Generator, SinkTokenRateKeysLaterTokensAsTheFirstOne) {
  LlmLikeParams p = strong_sink();
  p.sink_logit = 8;
  p.heavy_logit = 0.5;
  p.exact_sinks = 1;
  WorkloadSpec spec = small_llm_spec(3, 2, 1, p);
  spec.shape.tokens = 1000;
  const double rates[] = {0.0, 0.01, 0.02};
  for (int l = 0; l < 3; ++l) spec.layer_params[std::size_t(l)].sink_token_rate = rates[l];
  const Workload w = generate_workload(spec);
  const int n = spec.shape.tokens, d = spec.shape.head_dim;
  std::vector<std::set<int>> sinks(3);
  for (int l = 0; l < 3; ++l) {
    SCOPED_TRACE(l);
    const auto k = w.k(l, 0);
    for (int j = 1; j < n; ++j) {
      bool same = true;
      for (int x = 0; x < d; ++x) same = same && k(j, x) == k(0, x);
      if (same) sinks[std::size_t(l)].insert(j);
    }
    const long count = std::lround(rates[l] * (n - 1));
    EXPECT_EQ(long(sinks[std::size_t(l)].size()), count);
    for (long s = 0; s < count; ++s) {  // offsets j - 1 in [s (n - 1) / K, (s + 1) (n - 1) / K)
      const long first = 1 + s * (n - 1) / count, end = 1 + (s + 1) * (n - 1) / count;
      const auto in = std::count_if(sinks[std::size_t(l)].begin(), sinks[std::size_t(l)].end(),
                                    [&](int j) { return j >= first && j < end; });
      EXPECT_EQ(in, 1) << "stretch " << s;
    }
  }
  EXPECT_TRUE(sinks[0].empty());
  EXPECT_GT(sinks[1].size(), 0u);
  WorkloadSpec reseeded = spec;
  reseeded.seed = spec.seed + 1;
  const Workload other = generate_workload(reseeded);
  int moved = 0;
  for (int j : sinks[2]) {
    bool same = true;
    for (int x = 0; x < d; ++x) same = same && other.k(2, 0)(j, x) == other.k(2, 0)(0, x);
    moved += !same;
  }
  EXPECT_GT(moved, 0) << "another seed places the sink tokens elsewhere";

  InspectOptions inspect;
  inspect.recent_window = 64;
  const int keys = n - inspect.wide_recent_window;
  for (int l = 1; l < 3; ++l) {
    SCOPED_TRACE(l);
    const auto counted = std::count_if(sinks[std::size_t(l)].begin(), sinks[std::size_t(l)].end(),
                                       [&](int j) { return j >= inspect.sinks && j < keys; });
    const double share = double(counted) / (keys - inspect.sinks);
    for (int h = 0; h < spec.shape.q_heads; ++h) {
      const double measured = inspect_head(w, l, h, inspect).sink_token_rate;
      EXPECT_GE(measured, 0.8 * share) << "head " << h;
      EXPECT_LE(measured, 1.25 * share) << "head " << h;
    }
  }
  EXPECT_LT(inspect_head(w, 0, 0, inspect).sink_token_rate, 0.002) << "only the first token is a sink";
}

// salient_low_norm scales the content, the recency and the norm component of exactly the
// heavy-hitter types' keys (salience_ramp(cos phi_t) > 0 in the generator's own tables): every
// other key keeps its bits, a salient key's rotated dims (content plus recency) and its component
// along c (content along c plus m_j) are 1 - salient_low_norm · ramp times what they were and its
// norm is lower, and at 1 the lowest-norm tenth of the keys receives more of the attention
// (inspect's low_norm_share) than without.
TEST(Generator, SalientLowNormLowersTheNormOfHeavyHitterKeysOnly) {
  // The ramp as documented: 0 up to a quarter of the cap, linear to 1 at half of it, 1 above.
  EXPECT_EQ(salience_ramp(0.0), 0.0);
  EXPECT_EQ(salience_ramp(0.25), 0.0);
  EXPECT_DOUBLE_EQ(salience_ramp(0.375), 0.5);
  EXPECT_EQ(salience_ramp(0.5), 1.0);
  EXPECT_EQ(salience_ramp(1.0), 1.0);
  LlmLikeParams p;
  p.sinks = 0;
  p.sink_logit = 0;
  p.heavy_logit = 1.5;
  p.norm_spread = 24;
  WorkloadSpec spec = small_llm_spec(1, 2, 1, p);
  spec.shape.tokens = 400;
  const Workload plain = generate_workload(spec);
  const LlmLikeTables tables = build_llm_like_tables(spec);
  const LlmLikeHeadTables& head = tables.heads.front();
  InspectOptions inspect;
  const double plain_share = inspect_head(plain, 0, 0, inspect).low_norm_share;
  for (const double lowered : {0.5, 1.0}) {
    SCOPED_TRACE(lowered);
    spec.layer_params[0].salient_low_norm = lowered;
    const Workload w = generate_workload(spec);
    EXPECT_TRUE(bit_identical(w.q_data(), plain.q_data()));
    const int d = spec.shape.head_dim, base = d - kStructureDims;
    int salient = 0;
    for (int j = 0; j < spec.shape.tokens; ++j) {
      auto along_c = [&](const Workload& x) {
        double dot = 0;
        for (int e = 0; e < kStructureDims; ++e) dot += double(x.k(0, 0)(j, base + e)) * head.c[e];
        return dot;
      };
      const double ramp = salience_ramp(head.cos_phi[std::size_t(tables.token_type[std::size_t(j)])]);
      const bool is_salient = ramp > 0;
      salient += is_salient;
      bool same = true;
      for (int x = 0; x < d; ++x) same = same && plain.k(0, 0)(j, x) == w.k(0, 0)(j, x);
      if (!is_salient) {
        EXPECT_TRUE(same) << "key " << j;
      } else {
        // The other structure terms are orthogonal to c: only content and m_j lie along it.
        EXPECT_NEAR(along_c(w), (1 - lowered * ramp) * along_c(plain), 1e-4) << "key " << j;
        // The rotated dims hold content and recency only, both scaled (float rounding apart).
        for (int x = 0; x < base; ++x) {
          const double before = plain.k(0, 0)(j, x);
          EXPECT_NEAR(w.k(0, 0)(j, x), (1 - lowered * ramp) * before, 1e-5 * (1 + std::abs(before)))
              << "key " << j << " dim " << x;
        }
        double plain_norm = 0, norm = 0;
        for (int x = 0; x < d; ++x) {
          plain_norm += double(plain.k(0, 0)(j, x)) * plain.k(0, 0)(j, x);
          norm += double(w.k(0, 0)(j, x)) * w.k(0, 0)(j, x);
        }
        EXPECT_LT(norm, plain_norm) << "key " << j;
      }
    }
    EXPECT_GT(salient, 10) << "the test needs heavy-hitter keys";
    if (lowered == 1.0) {
      EXPECT_GT(inspect_head(w, 0, 0, inspect).low_norm_share, plain_share + 0.1);
    }
  }
}

TEST(Generator, ANegativeNormRangeMakesHighNormKeysAttract) {
  LlmLikeParams p;
  p.sinks = 0;
  p.sink_logit = 0;
  p.heavy_logit = 0;
  p.recency_logit = 0;
  p.content_logit_std = 0.5;
  for (const double range : {4.0, -4.0}) {
    SCOPED_TRACE(range);
    p.norm_logit_range = range;
    WorkloadSpec spec = small_llm_spec(1, 2, 1, p);
    spec.shape.tokens = 512;
    const auto stats = per_layer_statistics(inspect_workload(generate_workload(spec)));
    EXPECT_GT(range * -stats[0].mean.norm_attention_spearman, 0.5);  // its sign is the range's opposite
  }
}

TEST(Generator, LowNormSinksHaveTheLowestKeyNormAndKeepTheirLogit) {
  LlmLikeParams p;  // the default structures, every one on
  p.sinks = 2;
  p.sink_logit = 9;
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    WorkloadSpec spec = small_llm_spec(2, 4, 2, p);
    spec.shape.tokens = 512;
    spec.seed = seed;
    spec.layer_params[1].low_norm_sinks = 1;
    const Workload w = generate_workload(spec);
    for (int h = 0; h < 2; ++h) {
      auto norms = [&](int layer) {
        std::vector<double> n;
        const auto k = w.k(layer, h);
        for (int j = 0; j < w.shape().tokens; ++j) {
          double sq = 0;
          for (int x = 0; x < w.shape().head_dim; ++x) sq += double(k(j, x)) * k(j, x);
          n.push_back(std::sqrt(sq));
        }
        return n;
      };
      const std::vector<double> drawn = norms(0), low = norms(1);
      const double drawn_rest = *std::min_element(drawn.begin() + 2, drawn.end());
      const double low_rest = *std::min_element(low.begin() + 2, low.end());
      // The defect: a drawn norm component puts the sink mid-range, above the lowest key.
      EXPECT_GT(std::max(drawn[0], drawn[1]), drawn_rest) << "seed " << seed;
      EXPECT_LT(std::max(low[0], low[1]), low_rest) << "seed " << seed << " kv head " << h;
    }
    // The sink logit is unchanged (the amplitude moved to the query side): a query's score on a
    // low-norm sink key is sink_logit plus a little content noise (a_k u . sigma z').
    for (int h = 0; h < 4; ++h) {
      EXPECT_NEAR(mean_first_key_logit(w, 1, h), p.sink_logit, 0.3) << "seed " << seed << " head " << h;
    }
    EXPECT_GT(per_layer_statistics(inspect_workload(w))[1].mean.sink_mass, 0.05) << "seed " << seed;
  }
}

// sink_norm_quantile q puts the sink keys (the first and the later ones alike, one bare key) at
// about the q-quantile of the other keys' norms (layer 0, off: the lowest, as low_norm_sinks makes
// it), and a sink head's logit on them stays sink_logit (the amplitude along u rises by the norm
// term's logit, which it would otherwise lose: gamma m / sqrt(d) ~ 2.6 here).
TEST(Generator, SinkNormQuantilePutsTheSinkKeysThereAndKeepsTheirLogit) {
  LlmLikeParams p;  // the default structures, every one on
  p.sinks = 1;
  p.sink_logit = 9;
  p.low_norm_sinks = 1;
  p.sink_token_rate = 0.01;
  const double quantiles[] = {-1.0, 0.6, 0.95};
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    SCOPED_TRACE(seed);
    WorkloadSpec spec = small_llm_spec(3, 4, 2, p);
    spec.shape.tokens = 512;
    spec.seed = seed;
    for (int l = 0; l < 3; ++l) spec.layer_params[std::size_t(l)].sink_norm_quantile = quantiles[l];
    const Workload w = generate_workload(spec);
    const int n = w.shape().tokens;
    const LlmLikeTables tables = build_llm_like_tables(spec);
    for (int l = 0; l < 3; ++l) {
      SCOPED_TRACE(l);
      const int later = tables.layers[std::size_t(l)].sink_tokens;
      ASSERT_GT(later, 0);
      for (int h = 0; h < w.shape().kv_heads; ++h) {
        const auto k = w.k(l, h);
        std::vector<double> rest;
        int same = 0;
        for (int j = 1; j < n; ++j) {
          if (is_sink_token(spec.seed, 1, later, n, j)) {
            same += k.row(j) == k.row(0);
          } else {
            rest.push_back(k.row(j).cast<double>().norm());
          }
        }
        EXPECT_EQ(same, later) << "the later sinks' key is the first one's";
        const double first = k.row(0).cast<double>().norm();
        const double below =
            double(std::count_if(rest.begin(), rest.end(), [&](double v) { return v < first; })) / double(rest.size());
        EXPECT_NEAR(below, std::max(0.0, quantiles[l]), 0.1) << "kv head " << h;
      }
      for (int h = 0; h < w.shape().q_heads; ++h) {
        EXPECT_NEAR(mean_first_key_logit(w, l, h), p.sink_logit, 0.6) << "head " << h;
      }
    }
  }
}

TEST(Generator, RecordsPerLayerParametersInTheMetadata) {
  WorkloadSpec spec = small_llm_spec(3, 4, 2, strong_sink());
  spec.layer_params[1].sink_head_fraction = 0.5;
  spec.profile = "test-profile";
  const Workload w = generate_workload(spec);
  EXPECT_EQ(w.metadata.at("profile"), "test-profile");
  EXPECT_EQ(w.metadata.at("llm.sink_logit"), "14");
  EXPECT_EQ(w.metadata.count("llm.sink_head_fraction"), 0u);
  const auto per_layer = nlohmann::json::parse(w.metadata.at("llm.per_layer"));
  EXPECT_EQ(per_layer, nlohmann::json::parse(R"({"sink_head_fraction": [1.0, 0.5, 1.0]})"));
  EXPECT_EQ(generate_workload(spec_from_preset("tiny", 16, 1, 0)).metadata.count("llm.per_layer"), 0u);
}

TEST(Generator, RejectsLayerParametersThatDoNotFitTheSpec) {
  auto expect_error = [](const WorkloadSpec& spec, const std::string& needle) {
    try {
      generate_workload(spec);
      FAIL() << "expected an InputError naming " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  WorkloadSpec spec = small_llm_spec(3, 4, 2, strong_sink());
  spec.layer_params.pop_back();
  expect_error(spec, "one entry per layer (3)");
  spec = small_llm_spec(3, 4, 2, strong_sink());
  spec.layer_params[2].zipf_alpha = 1.5;
  expect_error(spec, "layer 2 zipf_alpha");
  spec.layer_params[2] = strong_sink();
  spec.layer_params[1].sink_head_fraction = 1.5;
  expect_error(spec, "layer 1");
  expect_error(spec, "sink_head_fraction");
}

GeneratorProfile small_profile() {
  GeneratorProfile profile;
  profile.name = "small \"test\"";
  profile.shape = {3, 4, 2, 1, 16};
  profile.score_scale = 0.3;
  profile.layers.assign(3, strong_sink());
  profile.layers[0].sink_head_fraction = 0;
  profile.layers[1].content_logit_std = 0.7;
  profile.layers[2].sinks = 2;
  for (LlmLikeParams& p : profile.layers) p.rope_base = 250000;
  return profile;
}

TEST(Profile, RoundTripsThroughItsFileBitForBit) {
  testing::ScratchDir dir;
  for (const GeneratorProfile& profile : {small_profile(), *preset_profile("llama2-7b")}) {
    const std::string path = dir.unique(".toml");
    write_profile(path, profile);
    const GeneratorProfile back = read_profile(path);
    EXPECT_EQ(back, profile);
    const WorkloadSpec a = spec_from_profile(profile, 24, 3, 9), b = spec_from_profile(back, 24, 3, 9);
    EXPECT_EQ(a.layer_params, b.layer_params);
    EXPECT_TRUE(bit_identical(generate_workload(a), generate_workload(b)));
  }
  const Workload w = generate_workload(spec_from_profile(small_profile(), 24, 0, 9));
  EXPECT_EQ(w.score_scale(), 0.3);
  EXPECT_EQ(w.metadata.at("profile"), "small \"test\"");
}

TEST(Profile, ReadsDefaultsAndLayerOverrides) {
  testing::ScratchDir dir;
  const std::string path = dir.path("p.toml");
  testing::write_bytes(path, testing::to_bytes(R"(format = "subevict.profile.v1"
[shape]
layers = 2
q_heads = 4
kv_heads = 2
head_dim = 16
[defaults]
rope_base = 500000
sinks = 1
[[layers]]
sink_head_fraction = 0.0
[[layers]]
content_logit_std = 2
)"));
  const GeneratorProfile p = read_profile(path);
  EXPECT_EQ(p.name, "");
  EXPECT_EQ(p.score_scale, 0.0);
  ASSERT_EQ(p.layers.size(), 2u);
  EXPECT_EQ(p.layers[0].sink_head_fraction, 0.0);
  EXPECT_EQ(p.layers[1].sink_head_fraction, 1.0);
  EXPECT_EQ(p.layers[1].content_logit_std, 2.0);
  EXPECT_EQ(p.layers[0].content_logit_std, LlmLikeParams().content_logit_std);
  for (const LlmLikeParams& l : p.layers) EXPECT_TRUE(l.rope_base == 500000 && l.sinks == 1);
  // A profile written before sink_heads and low_norm_sinks existed: the fraction decides, sink
  // keys are drawn as before.
  for (const LlmLikeParams& l : p.layers) EXPECT_TRUE(l.sink_heads == -1 && l.low_norm_sinks == 0);
}

TEST(Profile, RejectsMalformedFilesNamingTheKey) {
  testing::ScratchDir dir;
  const std::string head = "format = \"subevict.profile.v1\"\n[shape]\nlayers = 2\nq_heads = 4\nkv_heads = 2\nhead_dim = 16\n";
  const std::string two = "[[layers]]\n[[layers]]\n";
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {head + "[[layers]]\n[[layers]]\nsink_logit_typo = 3\n", {"[[layers]] #1 unknown key 'sink_logit_typo'", "sink_logit"}},
      {head + "[defaults]\nsinks = 1.5\n" + two, {"[defaults] sinks", "an integer"}},
      {head + "[[layers]]\nsink_logit = \"high\"\n[[layers]]\n", {"[[layers]] #0 sink_logit", "a finite number"}},
      {head + "[[layers]]\ntemperature = nan\n[[layers]]\n", {"[[layers]] #0 temperature", "a finite number"}},
      {head + "[[layers]]\n", {"[[layers]]", "2 tables", "got 1"}},
      {head + two + "[[layers]]\n", {"[[layers]]", "got 3"}},
      {head + "[[layers]]\nzipf_alpha = 1.5\n[[layers]]\n", {"zipf_alpha", "layer 0"}},
      {head + "[[layers]]\nsink_head_fraction = 2\n[[layers]]\n", {"sink_head_fraction", "[0, 1]"}},
      {"format = \"subevict.profile.v0\"\n" + head.substr(head.find('[')) + two, {"format", "subevict.profile.v1"}},
      {head + "extra = 1\n" + two, {"[shape] unknown key 'extra'"}},
      {head.substr(0, head.find("head_dim")) + two, {"[shape] head_dim", "required"}},
      {head + "[defaults\n", {"TOML at line 7"}},
      {"format = \"subevict.profile.v1\"\n" + two, {"[shape]", "required"}},
  };
  for (const auto& [text, needles] : cases) {
    const std::string path = dir.unique(".toml");
    testing::write_bytes(path, testing::to_bytes(text));
    try {
      (void)read_profile(path);
      ADD_FAILURE() << "accepted:\n" << text;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(path, 0), 0u) << what;  // the message starts with the file
      for (const std::string& needle : needles) EXPECT_NE(what.find(needle), std::string::npos) << what;
    }
  }
  EXPECT_THROW((void)read_profile(dir.path("missing.toml")), InputError);
}

/// Text TOML reads back as exactly `v` (shortest round trip, always a float: a '.' or exponent).
std::string toml_float(double v) {
  char buffer[64];
  std::string text(buffer, std::to_chars(buffer, buffer + sizeof buffer, v).ptr);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

/// One value of one key of a profile at or next to a bound the reader enforces. `section` is
/// "shape", "defaults" or "layer" (the [[layers]] table #0); `shape` overrides [shape]'s other
/// keys (layers 1, q_heads 4, kv_heads 2, head_dim 16). Accepted iff `needles` is empty; else the
/// error must contain the file, then every needle (the key and the expected range).
struct BoundCase {
  std::string section, key, value;
  std::vector<std::string> needles;
  std::map<std::string, std::string> shape = {};
};

std::string bound_case_text(const BoundCase& c) {
  std::map<std::string, std::string> shape = {{"layers", "1"}, {"q_heads", "4"}, {"kv_heads", "2"}, {"head_dim", "16"}};
  for (const auto& [key, value] : c.shape) shape[key] = value;
  if (c.section == "shape") shape[c.key] = c.value;
  std::string text = "format = \"subevict.profile.v1\"\n[shape]\n";
  for (const auto& [key, value] : shape) text += key + " = " + value + "\n";
  if (c.section == "defaults") text += "[defaults]\n" + c.key + " = " + c.value + "\n";
  text += "[[layers]]\n";
  if (c.section == "layer") text += c.key + " = " + c.value + "\n";
  // As many tables as [shape] layers asks for while that is small (a larger count is rejected).
  const long long layers = std::strtoll(shape["layers"].c_str(), nullptr, 10);
  for (long long l = 1; l < layers && l < 4; ++l) text += "[[layers]]\n";
  return text;
}

/// The value `profile` holds for the case's key, as a double (exact for the integers).
double read_back(const GeneratorProfile& profile, const BoundCase& c) {
  const Shape& s = profile.shape;
  if (c.section == "shape") {
    const std::map<std::string, double> shape = {{"layers", s.layers}, {"q_heads", s.q_heads},
                                                 {"kv_heads", s.kv_heads}, {"head_dim", s.head_dim},
                                                 {"score_scale", profile.score_scale}};
    return shape.at(c.key);
  }
  double out = std::nan("");
  for_each_llm_param(profile.layers.at(0), [&](const char* name, const auto& field, const char*) {
    if (c.key == name) out = double(field);
  });
  return out;
}

void expect_bound_cases(const std::vector<BoundCase>& cases) {
  testing::ScratchDir dir;
  for (const BoundCase& c : cases) {
    const std::string path = dir.unique(".toml");
    testing::write_bytes(path, testing::to_bytes(bound_case_text(c)));
    SCOPED_TRACE("[" + c.section + "] " + c.key + " = " + c.value);
    if (c.needles.empty()) {
      try {
        const GeneratorProfile profile = read_profile(path);
        // The value, parsed independently of the TOML reader, arrived unchanged.
        EXPECT_EQ(read_back(profile, c), std::strtod(c.value.c_str(), nullptr));
      } catch (const InputError& e) {
        ADD_FAILURE() << "rejected: " << e.what();
      }
      continue;
    }
    std::vector<std::string> parts = {path + ": "};
    parts.insert(parts.end(), c.needles.begin(), c.needles.end());
    EXPECT_TRUE(testing::rejects([&] { (void)read_profile(path); }, parts));
    try {
      (void)read_profile(path);
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();  // the file comes first
    }
  }
}

constexpr double kTiny = std::numeric_limits<double>::denorm_min();
constexpr double kHuge = std::numeric_limits<double>::max();
const std::string kIntMax = "2147483647", kIntMaxPlus1 = "2147483648";
const std::string kIntRange = "an integer in [-2147483648, 2147483647]";

double above(double v) { return std::nextafter(v, kHuge); }
double below(double v) { return std::nextafter(v, -kHuge); }

TEST(ProfileBounds, IntegersAreReadUpToIntMaxAndRejectedBeyond) {
  std::vector<BoundCase> cases;
  for (const std::string key : {"layers", "q_heads", "kv_heads", "head_dim"}) {
    cases.push_back({"shape", key, kIntMaxPlus1, {"[shape] " + key + ": expected " + kIntRange, "got " + kIntMaxPlus1}});
    cases.push_back({"shape", key, "-2147483649", {"[shape] " + key + ": expected " + kIntRange}});
  }
  cases.push_back({"layer", "sinks", kIntMax, {}});
  cases.push_back({"layer", "token_types", kIntMax, {"token_types: expected an integer in [1, 262144]"}});
  for (const std::string key : {"sinks", "token_types"}) {
    cases.push_back({"layer", key, kIntMaxPlus1, {"[[layers]] #0 " + key + ": expected " + kIntRange, "got " + kIntMaxPlus1}});
    cases.push_back({"defaults", key, kIntMaxPlus1, {"[defaults] " + key + ": expected " + kIntRange}});
  }
  cases.push_back({"layer", "sinks", "-2147483649", {"[[layers]] #0 sinks: expected " + kIntRange}});
  // INT_MAX itself passes the integer read: the errors are the next checks' (table count, range).
  cases.push_back({"shape", "layers", kIntMax, {"[[layers]]: expected 2147483647 tables", "got 4"}});
  cases.push_back({"shape", "head_dim", kIntMax, {"head_dim", "an even number in [8, 1024]", "got 2147483647"}});
  // q_heads = kv_heads = INT_MAX: 2^31 - 1 heads of 8 dims, 2^34 elements (<= 2^40).
  cases.push_back({"shape", "q_heads", kIntMax, {}, {{"kv_heads", "1"}, {"head_dim", "8"}}});
  cases.push_back({"shape", "kv_heads", kIntMax, {}, {{"q_heads", kIntMax}, {"head_dim", "8"}}});
  expect_bound_cases(cases);
}

TEST(ProfileBounds, ShapeIsAcceptedAtItsLimitsAndRejectedOneStepOutside) {
  const std::map<std::string, std::string> mqa = {{"kv_heads", "1"}};
  const std::string q_2_30 = std::to_string(1LL << 30);
  expect_bound_cases({
      {"shape", "layers", "1", {}},
      {"shape", "layers", "2", {}},
      {"shape", "layers", "0", {"[shape]", "layers must be positive, got 0"}},
      {"shape", "q_heads", "1", {}, mqa},
      {"shape", "q_heads", "2", {}, mqa},
      {"shape", "q_heads", "0", {"[shape]", "q_heads must be positive, got 0"}, mqa},
      {"shape", "kv_heads", "1", {}},
      {"shape", "kv_heads", "4", {}},
      {"shape", "kv_heads", "0", {"[shape]", "kv_heads must be positive, got 0"}},
      {"shape", "kv_heads", "3", {"[shape]", "kv_heads (3) must divide q_heads (4)"}},
      {"shape", "head_dim", "8", {}},
      {"shape", "head_dim", "10", {}},
      {"shape", "head_dim", "1022", {}},
      {"shape", "head_dim", "1024", {}},
      {"shape", "head_dim", "6", {"head_dim", "an even number in [8, 1024]", "got 6"}},
      {"shape", "head_dim", "7", {"head_dim", "an even number in [8, 1024]", "got 7"}},
      {"shape", "head_dim", "9", {"head_dim", "an even number in [8, 1024]", "got 9"}},
      {"shape", "head_dim", "1025", {"head_dim", "an even number in [8, 1024]", "got 1025"}},
      {"shape", "head_dim", "1026", {"head_dim", "an even number in [8, 1024]", "got 1026"}},
      {"shape", "head_dim", "0", {"[shape]", "head_dim must be positive, got 0"}},
      // layers * q_heads * head_dim (tokens are 1) at 2^40 elements, one head below, one above.
      {"shape", "q_heads", q_2_30, {}, {{"kv_heads", "1"}, {"head_dim", "1024"}}},
      {"shape", "q_heads", std::to_string((1LL << 30) - 1), {}, {{"kv_heads", "1"}, {"head_dim", "1024"}}},
      {"shape", "q_heads", std::to_string((1LL << 30) + 1), {"[shape]", "more than 2^40 elements"},
       {{"kv_heads", "1"}, {"head_dim", "1024"}}},
      {"shape", "score_scale", toml_float(kLlmMinMagnitude), {}},
      {"shape", "score_scale", toml_float(above(kLlmMinMagnitude)), {}},
      {"shape", "score_scale", toml_float(kHuge), {}},
      {"shape", "score_scale", toml_float(below(kLlmMinMagnitude)), {"[shape] score_scale: expected a number >= 1e-06"}},
      {"shape", "score_scale", toml_float(kTiny), {"[shape] score_scale: expected a number >= 1e-06"}},
      {"shape", "score_scale", "0.0", {"[shape] score_scale: expected a number >= 1e-06"}},
      {"shape", "score_scale", toml_float(-kTiny), {"[shape] score_scale: expected a number >= 1e-06"}},
      {"shape", "score_scale", "inf", {"[shape] score_scale: expected a finite number"}},
  });
}

TEST(ProfileBounds, ParametersAreAcceptedAtTheirLimitsAndRejectedOneStepOutside) {
  std::vector<BoundCase> cases;
  auto accept = [&](const std::string& key, double v) { cases.push_back({"layer", key, toml_float(v), {}}); };
  auto reject = [&](const std::string& key, double v, const std::string& range) {
    for (const std::string section : {"layer", "defaults"}) {
      cases.push_back({section, key, toml_float(v),
                       {std::string(section == "layer" ? "[[layers]] #0" : "[defaults]") + ": expected valid parameters",
                        key + ": expected " + range}});
    }
  };
  const std::string magnitude = "a finite value in [0, 1000000]";
  for (const std::string key : {"content_logit_std", "sink_logit", "heavy_logit", "recency_logit", "value_std"}) {
    for (double v : {0.0, kTiny, below(kLlmMaxMagnitude), kLlmMaxMagnitude}) accept(key, v);
    reject(key, -kTiny, magnitude);
    reject(key, above(kLlmMaxMagnitude), magnitude);
  }
  // The key-norm term may favour high-norm keys: a negative range, bounded as the positive one.
  for (double v : {-kLlmMaxMagnitude, -kTiny, 0.0, kLlmMaxMagnitude}) accept("norm_logit_range", v);
  for (double v : {-above(kLlmMaxMagnitude), above(kLlmMaxMagnitude)}) {
    reject("norm_logit_range", v, "a finite value in [-1000000, 1000000]");
  }
  for (double v : {0.0, 1.0, above(1.0), kLlmMaxMagnitude}) accept("recency_reach", v);
  for (double v : {-kTiny, kTiny, below(1.0), above(kLlmMaxMagnitude)}) {
    reject("recency_reach", v, "0 (no cut) or a finite number of keys in [1, 1000000]");
  }
  for (double v : {0.0, kTiny, below(1.0), 1.0}) accept("salient_low_norm", v);
  for (double v : {0.0, kTiny, below(1.0)}) accept("sink_token_rate", v);
  for (double v : {-kTiny, 1.0}) reject("sink_token_rate", v, "a share in [0, 1)");
  for (double v : {-1.0, 0.0, kTiny, below(1.0), 1.0}) accept("sink_norm_quantile", v);
  for (double v : {-2.0, -kTiny, above(1.0)}) reject("sink_norm_quantile", v, "-1 (off) or a quantile in [0, 1]");
  for (double v : {-kTiny, above(1.0)}) reject("salient_low_norm", v, "a value in [0, 1]");
  for (double v : {0.0, kTiny, below(1.0), 1.0}) accept("sink_head_fraction", v);
  reject("sink_head_fraction", -kTiny, "a value in [0, 1]");
  reject("sink_head_fraction", above(1.0), "a value in [0, 1]");
  for (double v : {0.0, kTiny, kHuge}) accept("zipf_alpha", v);
  reject("zipf_alpha", -kTiny, "a finite value >= 0");
  for (double v : {kLlmMinMagnitude, above(kLlmMinMagnitude), below(kLlmMaxMagnitude), kLlmMaxMagnitude}) accept("norm_spread", v);
  for (double v : {below(kLlmMinMagnitude), 0.0, -kTiny, above(kLlmMaxMagnitude)}) reject("norm_spread", v, "a finite value in [1e-06, 1000000]");
  for (double v : {above(1.0), 2.0, kHuge}) accept("rope_base", v);
  for (double v : {1.0, below(1.0)}) reject("rope_base", v, "a finite value > 1");
  for (double v : {kLlmMinMagnitude, above(kLlmMinMagnitude), kHuge}) accept("temperature", v);
  for (double v : {below(kLlmMinMagnitude), kTiny, 0.0, -kTiny}) reject("temperature", v, "a finite value >= 1e-06");
  for (const char* v : {"1", "2", "262143", "262144"}) cases.push_back({"layer", "token_types", v, {}});
  for (const char* v : {"0", "-1", "262145"}) {
    cases.push_back({"layer", "token_types", v,
                     {"[[layers]] #0: expected valid parameters", "token_types: expected an integer in [1, 262144]"}});
  }
  for (const char* v : {"0", "1"}) cases.push_back({"layer", "sinks", v, {}});
  cases.push_back({"layer", "sinks", "-1", {"[[layers]] #0: expected valid parameters", "sinks: expected a count >= 0"}});
  expect_bound_cases(cases);
}

TEST(Generator, StaysFiniteWithEveryParameterAtItsBound) {
  // Each parameter where it enlarges the entries most: logits and value_std at the maximum,
  // temperature and score_scale at the minimum, norm_spread at both ends (it scales the keys'
  // norm offset and divides the queries' norm term).
  // norm_logit_range at both ends of its range too.
  for (const double norm_spread : {kLlmMinMagnitude, kLlmMaxMagnitude}) {
    for (const int head_dim : {8, 1024}) {
      for (const double norm_sign : {1.0, -1.0}) {
      SCOPED_TRACE("norm_spread " + std::to_string(norm_spread) + ", head_dim " + std::to_string(head_dim));
      LlmLikeParams p;
      p.content_logit_std = p.sink_logit = p.heavy_logit = p.recency_logit = p.value_std = kLlmMaxMagnitude;
      p.norm_logit_range = norm_sign * kLlmMaxMagnitude;
      p.norm_spread = norm_spread;
      p.temperature = kLlmMinMagnitude;
      WorkloadSpec spec = small_llm_spec(1, 2, 1, p);
      spec.shape.head_dim = head_dim;
      spec.shape.tokens = 16;
      spec.score_scale = kLlmMinMagnitude;
      const Workload w = generate_workload(spec);
      for (const std::vector<float>* data : {&w.q_data(), &w.k_data(), &w.v_data()}) {
        EXPECT_TRUE(std::all_of(data->begin(), data->end(), [](float x) { return std::isfinite(x); }));
      }
      }
    }
  }
}

// sink_norm_quantile solves for the sink key's norm component without squaring g = gamma / a_q,
// which reaches 1e166 at the smallest positive sink_logit (squared: Inf, and the key NaN).
TEST(Generator, SinkNormQuantileStaysFiniteAtEverySinkLogit) {
  for (const double sink_logit : {std::numeric_limits<double>::denorm_min(), 1e-300, 1e-8, kLlmMaxMagnitude}) {
    for (const double norm_sign : {1.0, -1.0}) {
      SCOPED_TRACE("sink_logit " + std::to_string(sink_logit) + ", norm sign " + std::to_string(norm_sign));
      LlmLikeParams p;
      p.sink_logit = sink_logit;
      p.norm_logit_range = norm_sign * kLlmMaxMagnitude;
      p.norm_spread = kLlmMaxMagnitude;
      p.sink_norm_quantile = 1;
      WorkloadSpec spec = small_llm_spec(1, 2, 1, p);
      spec.shape.tokens = 16;
      const Workload w = generate_workload(spec);
      for (const std::vector<float>* data : {&w.q_data(), &w.k_data(), &w.v_data()}) {
        EXPECT_TRUE(std::all_of(data->begin(), data->end(), [](float x) { return std::isfinite(x); }));
      }
      // The sink key has the norm asked for: sqrt(ref^2 + norm_spread^2), about norm_spread here.
      EXPECT_NEAR(w.k(0, 0).row(0).cast<double>().norm() / kLlmMaxMagnitude, 1.0, 1e-3);
    }
  }
}

TEST(Generator, TakesAScoreScaleOfZeroOrAtLeastTheMinimum) {
  WorkloadSpec spec = small_llm_spec(1, 2, 1, LlmLikeParams());
  for (const double scale : {0.0, kLlmMinMagnitude, above(kLlmMinMagnitude), kHuge}) {
    spec.score_scale = scale;
    EXPECT_NO_THROW(validate_spec(spec)) << scale;
  }
  for (const double scale : {kTiny, below(kLlmMinMagnitude)}) {
    spec.score_scale = scale;
    EXPECT_TRUE(testing::rejects([&] { validate_spec(spec); }, {"score_scale", ">= 1e-06"})) << scale;
  }
  spec.kind = GeneratorKind::kGaussian;  // no logits to inflate: any finite scale >= 0
  EXPECT_NO_THROW(validate_spec(spec));
  spec.score_scale = -kTiny;
  EXPECT_THROW(validate_spec(spec), InputError);
}

/// Statistics of all 32 layers of preset `name` with its profile, 512 tokens, seed 1, on the first 8
/// query heads of each layer (generated as an 8-query-head model with the KV heads scaled alike,
/// which leaves those heads' tensors bit-identical to the full model's). Computed once per preset.
const std::vector<HeadStatistics>& preset_statistics(const std::string& name) {
  static std::map<std::string, std::vector<HeadStatistics>> cache;
  if (!cache.count(name)) {
    WorkloadSpec spec = spec_from_preset(name, 512, 0, 1, PresetParams::kProfile);
    EXPECT_EQ(spec.shape.layers, 32);
    spec.shape.kv_heads = spec.shape.kv_heads * 8 / spec.shape.q_heads;
    spec.shape.q_heads = 8;
    cache[name] = inspect_workload(generate_workload(spec));
  }
  return cache[name];
}

TEST(Presets, Llama2ProfileHasDenseEarlyLayersAndSinksInTheDeepOnes) {
  const auto layers = per_layer_statistics(preset_statistics("llama2-7b"));
  ASSERT_EQ(layers.size(), 32u);
  double mass = 0, rate = 0, sparsity = 0;
  for (int l = 0; l < 32; ++l) {
    SCOPED_TRACE(l);
    if (l < 2) {
      EXPECT_LT(layers[l].mean.sparsity, 0.6);
      EXPECT_LT(layers[l].mean.first_token_mass, 0.05);
    } else {
      mass += layers[l].mean.first_token_mass / 30;
      rate += layers[l].sink_head_rate / 30;
      sparsity += layers[l].mean.sparsity / 30;
    }
  }
  EXPECT_GT(mass, 0.5);
  EXPECT_GE(rate, 0.9);
  EXPECT_GT(sparsity, 0.95);
}

TEST(Presets, ProfilesMatchThePublishedSinkHeadRates) {
  for (const auto& [name, published] : {std::pair{"llama2-7b", 0.925}, {"llama3-8b", 0.990}, {"mistral-7b", 0.975}}) {
    SCOPED_TRACE(name);
    EXPECT_NEAR(sink_head_rate(preset_statistics(name)), published, 0.03);
  }
}

TEST(Presets, OnlyTheRealLlamaFamilyPresetsHaveProfiles) {
  for (const Preset& p : presets()) {
    const bool has = p.name == "llama2-7b" || p.name == "llama3-8b" || p.name == "mistral-7b";
    EXPECT_EQ(preset_profile(p.name).has_value(), has) << p.name;
    if (!has) {
      EXPECT_TRUE(spec_from_preset(p.name, 8, 1, 0, PresetParams::kProfile).layer_params.empty()) << p.name;
    }
  }
  const WorkloadSpec spec = spec_from_preset("llama3-8b", 16, 2, 0, PresetParams::kProfile);
  EXPECT_EQ(spec.layer_params.size(), 2u);
  EXPECT_EQ(spec.preset, "llama3-8b");
  EXPECT_EQ(spec.profile, "llama3-8b");
  EXPECT_EQ(spec.layer_llm(1).rope_base, 500000.0);
}

}  // namespace
}  // namespace subevict
