// Tests greedy/eviction/policies/policy_registry.hpp and greedy/policies/: every policy agrees step by step with the
// independent naive implementation of its documented rule (naive_eviction.hpp), with and without
// prefill, for every group aggregation rule.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/input_error.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "tests/greedy/naive_eviction.hpp"

namespace subevict::greedy {
namespace {

TEST(PolicyRegistry, StableNamesInOrder) {
  const std::vector<std::string> expected = {
      "h2o",   "h2o-alg1",       "h2o-alg2-linear", "h2o-alg2-sqrt", "h2o-alg2-log", "h2o-flexgen",
      "h2o-oracle", "local",     "streamingllm",    "sparse-strided", "sparse-fixed", "random",
      "l2norm", "tova",          "snapkv",          "h2o-noisy",      "knorm",        "streaming_llm",
      "observed_attention",      "keydiff",         "leverage",       "expected_attention", "lagkv", "cur", "cap",
      "compactor",               "non_causal_attention"};
  EXPECT_EQ(policy_names(), expected);
  for (const std::string& name : expected) {
    const auto policy = make_policy(name);
    EXPECT_EQ(policy->name(), name);
    EXPECT_EQ(policy->is_oracle(), name == "h2o-oracle") << name;
  }
}

TEST(PolicyRegistry, UnknownNameAndBadParametersThrowNamingTheInput) {
  try {
    (void)make_policy("lru");
    FAIL() << "no exception";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("lru"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("h2o-flexgen"), std::string::npos);
  }
  PolicyParams bad;
  bad.epsilon = -1.0;
  EXPECT_THROW((void)make_policy("h2o-noisy", bad), InputError);
  EXPECT_THROW((void)parse_pooling("mean"), InputError);
  EXPECT_EQ(parse_pooling("avg"), Pooling::kAvg);

  // Parameters that do not fit the budget fail at reset, naming the policy.
  const naive::Instance in = naive::random_instance(1, 8, 4, 1, 1.0);
  const HeadGroup group = in.group();
  SimulationOptions options;
  options.budget = 3;
  PolicyParams sinks;
  sinks.sinks = 3;
  auto streaming = make_policy("streamingllm", sinks);
  EXPECT_THROW((void)simulate(group, *streaming, options), InputError);
  PolicyParams split;
  split.heavy = 2;
  split.recent = 2;
  auto h2o = make_policy("h2o", split);
  EXPECT_THROW((void)simulate(group, *h2o, options), InputError);
  PolicyParams window;
  window.observation_window = 3;
  auto snap = make_policy("snapkv", window);
  EXPECT_THROW((void)simulate(group, *snap, options), InputError);
}

/// One random configuration valid for every policy.
struct Config {
  naive::Setup setup;
  naive::Instance instance;
};

Config gen_config() {
  Config c;
  const int n = *rc::gen::inRange(2, 41);
  const int d = *rc::gen::inRange(2, 9);
  const int g = *rc::gen::inRange(1, 4);
  const auto seed = *rc::gen::inRange<std::uint64_t>(0, 1u << 30);
  const double sharpness = *rc::gen::element(0.5, 1.5, 3.0);
  c.instance = naive::random_instance(seed, n, d, g, sharpness, *rc::gen::inRange(0, 3));
  c.setup.budget = *rc::gen::inRange(2, n + 1);
  const int k = c.setup.budget;
  c.setup.prefill = *rc::gen::element(0, *rc::gen::inRange(0, n + 1));
  c.setup.rule = *rc::gen::element(GroupAggregation::kSum, GroupAggregation::kMean, GroupAggregation::kMax);
  c.setup.seed = *rc::gen::inRange<std::uint64_t>(0, 1000);
  PolicyParams& p = c.setup.params;
  p.heavy_ratio = *rc::gen::element(0.0, 0.25, 0.5, 0.75, 1.0);
  if (*rc::gen::arbitrary<bool>()) p.recent = *rc::gen::inRange(0, k + 1);
  p.sinks = *rc::gen::inRange(0, k);
  p.stride = *rc::gen::inRange(1, 9);
  p.window = *rc::gen::inRange(0, 9);
  p.summary = *rc::gen::inRange(1, p.stride + 1);
  p.observation_window = *rc::gen::inRange(1, k);
  p.pooling = *rc::gen::element(Pooling::kNone, Pooling::kMax, Pooling::kAvg);
  p.pooling_kernel = *rc::gen::element(1, 3, 5, 7);
  p.epsilon = *rc::gen::element(0.0, 0.01, 0.2);
  p.expected_epsilon = *rc::gen::element(0.0, 0.01, 0.2);
  p.skipped_layers = {1};
  p.ridge = *rc::gen::element(1e-2, 1.0);
  p.use_covariance = *rc::gen::arbitrary<bool>();
  p.use_vnorm = *rc::gen::arbitrary<bool>();
  p.lag_size = *rc::gen::inRange(2, 7);
  p.cross_scoring = *rc::gen::arbitrary<bool>();
  p.cur_leverage = *rc::gen::element(CurLeverage::kKey, CurLeverage::kValue, CurLeverage::kKvAvg, CurLeverage::kKvProduct);
  p.use_local_approximation = *rc::gen::arbitrary<bool>();
  p.local_window_size = *rc::gen::inRange(1, 9);
  p.tau = *rc::gen::element(0.0, 1.0, 5.0);
  p.cap_epsilon = *rc::gen::element(1e-6, 0.5);
  p.sink_size_start = *rc::gen::inRange(0, k / 2 + 1);
  p.sink_size_end = *rc::gen::inRange(0, k - p.sink_size_start + 1);
  p.chunk_size = *rc::gen::element(1, 2, 3, 5, 64);
  p.blending = *rc::gen::element(-1.0, 0.0, 0.5);
  return c;
}

/// The simulation options of a configuration: its budget, prefill, aggregation and seed.
SimulationOptions options_of(const Config& c) {
  SimulationOptions options;
  options.budget = c.setup.budget;
  options.prefill = c.setup.prefill;
  options.aggregation = c.setup.rule;
  options.seed = c.setup.seed;
  return options;
}

RC_GTEST_PROP(PolicyRegistry, EveryPolicyAgreesWithItsNaiveRuleStepByStep, ()) {
  Config c = gen_config();
  const HeadGroup group = c.instance.group();
  for (const std::string& name : policy_names()) {
    c.setup.policy = name;
    const naive::Result expected = naive::simulate(c.instance, c.setup);
    auto policy = make_policy(name, c.setup.params);
    SimulationOptions options = options_of(c);
    options.record_cache = true;
    const Trace trace = simulate(group, *policy, options);
    RC_ASSERT(trace.budget == expected.budget);
    for (int i = 0; i < c.instance.n; ++i) {
      if (trace.steps[i].evicted != expected.evicted[i] || trace.cache[i] != expected.cache[i]) {
        RC_FAIL(name + ": step " + std::to_string(i) + " evicted " + std::to_string(trace.steps[i].evicted) +
                ", naive " + std::to_string(expected.evicted[i]));
      }
    }
  }
}

RC_GTEST_PROP(PolicyRegistry, NoCausalPolicyDecidesWithTheTokensStillToCome, ()) {
  // A causal policy's decision at step i reads tokens 0..i only: run on the workload cut after
  // token m − 1 (first_tokens), every policy that is not an oracle evicts at steps 0..m − 1 exactly
  // as on the whole workload (compactor's compression ratio once read the whole length n).
  // h2o-noisy is left out: its noise stream is indexed by i n + j, so another n draws other noise
  // (a different random draw, not information about later tokens).
  const Config c = gen_config();
  const HeadGroup group = c.instance.group();
  const int shortest = std::max(c.setup.budget, c.setup.prefill) + 1;  // a full step left to compare
  if (shortest > c.instance.n) return;
  const int m = *rc::gen::inRange(shortest, c.instance.n + 1);
  const HeadGroup cut = first_tokens(group, m);
  SimulationOptions options = options_of(c);
  options.compute_metrics = false;
  for (const std::string& name : policy_names()) {
    auto policy = make_policy(name, c.setup.params);
    if (policy->is_oracle() || name == "h2o-noisy") continue;
    const Trace whole = simulate(group, *policy, options);
    const Trace prefix = simulate(cut, *policy, options);
    RC_ASSERT(whole.prefill_evicted == prefix.prefill_evicted);
    for (int i = 0; i < m; ++i) {
      if (whole.steps[i].evicted != prefix.steps[i].evicted) {
        RC_FAIL(name + ": step " + std::to_string(i) + " evicts " + std::to_string(whole.steps[i].evicted) + " with " +
                std::to_string(c.instance.n) + " tokens, " + std::to_string(prefix.steps[i].evicted) + " with " +
                std::to_string(m));
      }
    }
  }
}

TEST(PolicyRegistry, SnapkvPoolingTakesEffectInStreaming) {
  // Pure streaming (no prefill): the pooling keys change which candidate leaves, as at prefill.
  bool differs = false;
  for (std::uint64_t seed = 0; seed < 20 && !differs; ++seed) {
    const naive::Instance in = naive::random_instance(seed, 40, 4, 2, 3.0);
    const HeadGroup group = in.group();
    SimulationOptions options;
    options.budget = 16;
    options.compute_metrics = false;
    std::vector<std::vector<int>> evicted;
    for (const auto& [pooling, kernel] : std::vector<std::pair<Pooling, int>>{
             {Pooling::kNone, 1}, {Pooling::kMax, 5}, {Pooling::kAvg, 5}}) {
      PolicyParams p;
      p.observation_window = 4;
      p.pooling = pooling;
      p.pooling_kernel = kernel;
      const Trace trace = simulate(group, *make_policy("snapkv", p), options);
      evicted.emplace_back();
      for (const auto& step : trace.steps) evicted.back().push_back(step.evicted);
    }
    differs = evicted[0] != evicted[1] && evicted[0] != evicted[2] && evicted[1] != evicted[2];
  }
  EXPECT_TRUE(differs) << "snapkv's pooling none, max and avg evict alike in streaming on 20 workloads";
}

RC_GTEST_PROP(PolicyRegistry, KvpressAliasesEvictExactlyAsTheirRules, ()) {
  // knorm is l2norm with no skipped layer, streaming_llm is streamingllm (kvpress's names).
  const Config c = gen_config();
  const HeadGroup group = c.instance.group();
  SimulationOptions options;
  options.budget = c.setup.budget;
  options.prefill = c.setup.prefill;
  options.aggregation = c.setup.rule;
  options.compute_metrics = false;
  PolicyParams no_skip = c.setup.params;
  no_skip.skipped_layers.clear();
  const std::vector<std::pair<std::pair<const char*, PolicyParams>, const char*>> pairs = {
      {{"l2norm", no_skip}, "knorm"}, {{"streamingllm", c.setup.params}, "streaming_llm"}};
  for (const auto& [original, alias] : pairs) {
    auto a = make_policy(original.first, original.second);
    auto b = make_policy(alias, c.setup.params);
    const Trace ta = simulate(group, *a, options);
    const Trace tb = simulate(group, *b, options);
    RC_ASSERT(ta.prefill_evicted == tb.prefill_evicted);
    for (int i = 0; i < c.instance.n; ++i) RC_ASSERT(ta.steps[i].evicted == tb.steps[i].evicted);
  }
}

RC_GTEST_PROP(PolicyRegistry, ConcaveTransformDoesNotChangeTheSingleEviction, ()) {
  // One accumulator per token and a strictly increasing h: argmax_v h(total − acc_v) is the
  // argmin of acc_v, so every Algorithm 2 variant evicts exactly as Algorithm 1.
  const Config c = gen_config();
  const HeadGroup group = c.instance.group();
  SimulationOptions options;
  options.budget = c.setup.budget;
  options.prefill = c.setup.prefill;
  options.aggregation = c.setup.rule;
  options.compute_metrics = false;
  auto alg1 = make_policy("h2o-alg1");
  const Trace reference = simulate(group, *alg1, options);
  for (const char* name : {"h2o-alg2-linear", "h2o-alg2-sqrt", "h2o-alg2-log"}) {
    auto alg2 = make_policy(name);
    const Trace trace = simulate(group, *alg2, options);
    RC_ASSERT(trace.prefill_evicted == reference.prefill_evicted);
    for (int i = 0; i < c.instance.n; ++i) RC_ASSERT(trace.steps[i].evicted == reference.steps[i].evicted);
  }
}


// ---- policy_spec.hpp: the NAME[:KEY=VALUE,...] grammar ----

/// The message of the InputError that parse_policy_list throws for `text` (fails when none).
std::string spec_error(const std::string& text) {
  try {
    (void)parse_policy_list(text, "simulate", "--policies", 16);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for " << text;
  return "";
}

TEST(PolicySpec, ParsesSharesCountsAndListsAndLabelsThem) {
  const auto specs = parse_policy_list("h2o:heavy=0.25,recent=0.75, local ,streamingllm:sinks=2,lookahead", "s",
                                       "--policies", 9);
  ASSERT_EQ(specs.size(), 4u);
  EXPECT_EQ(specs[0].label(), "h2o:heavy=0.25,recent=0.75");
  EXPECT_DOUBLE_EQ(specs[0].params.heavy_ratio, 0.25);
  EXPECT_EQ(specs[0].params.heavy, -1);
  EXPECT_EQ(specs[1].label(), "local");
  EXPECT_EQ(specs[2].params.sinks, 2);
  EXPECT_EQ(specs[3].horizon, 9);
  // Keys in any order label in the policy's key order; recent alone sets the rest.
  const PolicySpec r = parse_policy_spec("h2o:recent=0.75", "s", "f", 16);
  EXPECT_DOUBLE_EQ(r.params.heavy_ratio, 0.25);
  EXPECT_EQ(parse_policy_spec("h2o:recent=50,heavy=52", "s", "f", 16).label(), "h2o:heavy=52,recent=50");
  const PolicySpec counts = parse_policy_spec("h2o-oracle:heavy=52,recent=50", "s", "f", 16);
  EXPECT_EQ(counts.params.heavy, 52);
  EXPECT_EQ(counts.params.recent, 50);
  EXPECT_EQ(parse_policy_spec("snapkv:pooling=avg,kernel=3,window=4", "s", "f", 16).label(),
            "snapkv:window=4,pooling=avg,kernel=3");
  EXPECT_EQ(parse_policy_spec("l2norm:skip_first=0", "s", "f", 16).params.skipped_layers.size(), 0u);
  EXPECT_EQ(parse_policy_spec("lookahead:horizon=4", "s", "f", 16).horizon, 4);
  // kvpress's names take kvpress's keys.
  EXPECT_EQ(parse_policy_spec("streaming_llm:n_sink=2", "s", "f", 16).params.sinks, 2);
  const PolicySpec ea = parse_policy_spec("expected_attention:use_vnorm=0,n_sink=2,epsilon=0", "s", "f", 16);
  EXPECT_EQ(ea.label(), "expected_attention:n_sink=2,epsilon=0,use_vnorm=0");
  EXPECT_FALSE(ea.params.use_vnorm);
  EXPECT_TRUE(ea.params.use_covariance);
  EXPECT_DOUBLE_EQ(parse_policy_spec("leverage:ridge=0.5", "s", "f", 16).params.ridge, 0.5);
  const PolicySpec cur = parse_policy_spec("cur:leverage_type=kv_avg,local_window_size=8", "s", "f", 16);
  EXPECT_EQ(cur.params.cur_leverage, CurLeverage::kKvAvg);
  EXPECT_EQ(cur.params.local_window_size, 8);
  EXPECT_EQ(parse_policy_spec("lagkv:lag_size=32,cross_scoring=1", "s", "f", 16).params.lag_size, 32);
}

TEST(PolicySpec, CountsAreCheckedAgainstTheBudget) {
  const PolicySpec split = parse_policy_spec("h2o:heavy=52,recent=50", "s", "f", 16);
  check_policy_budget(split, 512, 102, "simulate", "--policies");  // 52 + 50 = k
  for (int k : {101, 103}) {
    try {
      check_policy_budget(split, 512, k, "simulate", "--policies");
      ADD_FAILURE() << "k = " << k << " accepted";
    } catch (const InputError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("k = " + std::to_string(k)), std::string::npos) << m;
      EXPECT_NE(m.find("h2o:heavy=52,recent=50"), std::string::npos) << m;
    }
  }
  const PolicySpec sinks = parse_policy_spec("streamingllm:sinks=8", "s", "f", 16);
  check_policy_budget(sinks, 64, 9, "s", "f");
  EXPECT_THROW(check_policy_budget(sinks, 64, 8, "s", "f"), InputError);
  // With k = 4, "recent=3" (a count) and "heavy=0.25" (a share: floor(0.25 k) = 1) are the split
  // heavy 1 + recent 3 the registry builds from heavy = 1; "heavy=0.5" is another split.
  const naive::Instance in = naive::random_instance(1, 24, 4, 1, 1.0);
  SimulationOptions options;
  options.budget = 4;
  PolicyParams direct;
  direct.heavy = 1;
  auto reference = make_policy("h2o", direct);
  const Trace b = simulate(in.group(), *reference, options);
  for (const char* text : {"h2o:recent=3", "h2o:heavy=0.25"}) {
    auto written = make_policy(parse_policy_spec(text, "s", "f", 16));
    const Trace a = simulate(in.group(), *written, options);
    ASSERT_EQ(a.steps.size(), b.steps.size());
    for (std::size_t i = 0; i < a.steps.size(); ++i) EXPECT_EQ(a.steps[i].evicted, b.steps[i].evicted) << text << i;
  }
  auto other = make_policy(parse_policy_spec("h2o:heavy=0.5", "s", "f", 16));
  const Trace c = simulate(in.group(), *other, options);
  bool differs = false;
  for (std::size_t i = 0; i < c.steps.size(); ++i) differs = differs || c.steps[i].evicted != b.steps[i].evicted;
  EXPECT_TRUE(differs) << "the instance cannot tell the splits apart";
}

TEST(PolicySpec, RejectsBadSpecsNamingTheKeyAndTheValidOnes) {
  const std::string unknown = spec_error("h2o:sink=1");
  EXPECT_NE(unknown.find("unknown key 'sink'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("heavy, recent"), std::string::npos) << unknown;
  EXPECT_NE(spec_error("local:window=3").find("local takes no parameters"), std::string::npos);
  EXPECT_NE(spec_error("lru").find("h2o-flexgen"), std::string::npos);
  EXPECT_NE(spec_error("h2o:heavy=0.2,recent=0.2").find("sum to 1"), std::string::npos);
  EXPECT_NE(spec_error("h2o:heavy=0.25,recent=50").find("a share and a count"), std::string::npos);
  EXPECT_NE(spec_error("h2o:heavy=1.5").find("got 1.5"), std::string::npos);
  EXPECT_NE(spec_error("h2o:heavy=-1").find("got -1"), std::string::npos);
  EXPECT_NE(spec_error("h2o:heavy=x").find("got x"), std::string::npos);
  EXPECT_NE(spec_error("h2o:heavy=1,heavy=2").find("heavy (given twice)"), std::string::npos);
  EXPECT_NE(spec_error("h2o,h2o").find("h2o (listed twice)"), std::string::npos);
  EXPECT_NE(spec_error("local,heavy=0.5").find("got heavy=0.5"), std::string::npos);
  EXPECT_NE(spec_error("h2o:").find("KEY=VALUE"), std::string::npos);
  EXPECT_NE(spec_error("h2o,,local").find("empty item"), std::string::npos);
  EXPECT_NE(spec_error("snapkv:kernel=4").find("odd"), std::string::npos);
  // A key that changes nothing is refused: a kernel without a pooling to act on.
  EXPECT_NE(spec_error("snapkv:kernel=3").find("kernel with pooling none"), std::string::npos);
  EXPECT_NE(spec_error("snapkv:pooling=none,kernel=5").find("pooling=max or pooling=avg"), std::string::npos);
  EXPECT_EQ(parse_policy_spec("snapkv:pooling=avg,kernel=3", "s", "f", 16).label(), "snapkv:pooling=avg,kernel=3");
  EXPECT_NE(spec_error("snapkv:pooling=mean").find("none, max or avg"), std::string::npos);
  EXPECT_NE(spec_error("streamingllm:sinks=2.5").find("got 2.5"), std::string::npos);
  EXPECT_NE(spec_error("h2o-noisy:epsilon=-0.1").find("a number >= 0"), std::string::npos);
  EXPECT_NE(spec_error("expected_attention:use_covariance=2").find("an integer in [0, 1]"), std::string::npos);
  EXPECT_NE(spec_error("cur:leverage_type=both").find("key, value, kv_avg or kv_product"), std::string::npos);
  EXPECT_NE(spec_error("lagkv:lag_size=1").find("an integer in [2, 1000000000]"), std::string::npos);
  EXPECT_NE(spec_error("knorm:skip_first=0").find("knorm takes no parameters"), std::string::npos);
  EXPECT_NE(spec_error("sparse-strided:stride=0").find("an integer in [1, 1000000000]"), std::string::npos);
  // Beyond 10^9: refused, never converted to int (undefined behaviour beyond 2^31 - 1).
  EXPECT_NE(spec_error("streamingllm:sinks=1e12").find("an integer in [0, 1000000000]"), std::string::npos);
  // l2norm stores each skipped layer: a layer count no model has is refused before any allocation.
  EXPECT_NE(spec_error("l2norm:skip_first=999999999").find("an integer in [0, 4096]"), std::string::npos);
  EXPECT_EQ(parse_policy_spec("l2norm:skip_first=4096", "s", "f", 16).params.skipped_layers.size(), 4096u);
  EXPECT_THROW((void)parse_policy_spec("h2o,local", "s", "f", 16), InputError);
}

TEST(PolicySpec, EveryPolicyListsItsParametersWithTheRegistryDefaults) {
  for (const std::string& name : spec_policy_names()) (void)policy_parameters(name);
  const auto h2o = policy_parameters("h2o");
  ASSERT_EQ(h2o.size(), 2u);
  EXPECT_EQ(h2o[0].key, "heavy");
  EXPECT_EQ(h2o[0].default_value, "0.5");
  const PolicyParams defaults;
  EXPECT_EQ(policy_parameters("streamingllm")[0].default_value, std::to_string(defaults.sinks));
  EXPECT_EQ(policy_parameters("snapkv")[1].default_value, to_string(defaults.pooling));
  EXPECT_TRUE(policy_parameters("tova").empty());
  EXPECT_THROW((void)policy_parameters("lru"), InputError);
}

/// Random valid specs: the label parses back to the same spec (label and effective values), and
/// every numeric key reads back the value written.
RC_GTEST_PROP(PolicySpec, LabelsRoundTripAndKeysReadBackTheirValues, ()) {
  // learned needs a model file: its label's round trip is tested in learned_test.cpp.
  std::vector<std::string> names = spec_policy_names();
  std::erase(names, "learned");
  const std::string name = *rc::gen::elementOf(names);
  const std::vector<PolicyParameter> keys = policy_parameters(name);
  std::string text = name;
  std::vector<std::pair<std::string, std::string>> written;
  const bool share = *rc::gen::arbitrary<bool>();
  for (const PolicyParameter& p : keys) {
    if (!*rc::gen::arbitrary<bool>()) continue;
    std::string value;
    if (p.key == "heavy" || p.key == "recent") {
      if (share) {
        // One share only: two would have to sum to exactly 1.
        if (!written.empty()) continue;
        value = std::to_string(*rc::gen::inRange(1, 100)) + "e-2";
      } else {
        value = std::to_string(*rc::gen::inRange(0, 1000));
      }
    } else if (p.key == "pooling") {
      value = *rc::gen::element<std::string>("none", "max", "avg");
    } else if (p.key == "kernel") {
      // A kernel acts only through a pooling (max or avg; none is the default).
      const bool pooled = std::any_of(written.begin(), written.end(), [](const auto& w) {
        return w.first == "pooling" && w.second != "none";
      });
      if (!pooled) continue;
      value = std::to_string(2 * *rc::gen::inRange(0, 10) + 1);
    } else if (p.key == "leverage_type") {
      value = *rc::gen::element<std::string>("key", "value", "kv_avg", "kv_product");
    } else if (p.key == "use_covariance" || p.key == "use_vnorm" || p.key == "cross_scoring" ||
               p.key == "use_local_approximation") {
      value = *rc::gen::element<std::string>("0", "1");
    } else if (p.key == "epsilon") {
      value = std::to_string(*rc::gen::inRange(0, 1000)) + "e-3";
    } else {
      value = std::to_string(*rc::gen::inRange(2, 50));
    }
    text += (written.empty() ? ":" : ",") + p.key + "=" + value;
    written.emplace_back(p.key, value);
  }
  const PolicySpec spec = parse_policy_spec(text, "s", "f", 16);
  const PolicySpec again = parse_policy_spec(spec.label(), "s", "f", 16);
  RC_ASSERT(again.label() == spec.label());
  RC_ASSERT(effective_parameters(again) == effective_parameters(spec));
  const auto effective = effective_parameters(spec);
  for (const auto& [key, value] : written) {
    const auto it = std::find_if(effective.begin(), effective.end(), [&](const auto& e) { return e.first == key; });
    RC_ASSERT(it != effective.end());
    if (key == "pooling" || key == "leverage_type") {
      RC_ASSERT(it->second == value);
    } else {
      // Exact for counts; a share shown through 1 - heavy_ratio keeps 15 digits.
      RC_ASSERT(std::abs(std::stod(it->second) - std::stod(value)) <= 1e-15 * std::max(1.0, std::stod(value)));
    }
  }
}

}  // namespace
}  // namespace subevict::greedy
