// Tests greedy/policy_registry.hpp and greedy/policies/: every policy agrees step by step with the
// independent naive implementation of its documented rule (naive_eviction.hpp), with and without
// prefill, for every group aggregation rule.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

#include "core/input_error.hpp"
#include "greedy/policy_registry.hpp"
#include "greedy/simulator.hpp"
#include "naive_eviction.hpp"

namespace subevict::greedy {
namespace {

TEST(PolicyRegistry, StableNamesInOrder) {
  const std::vector<std::string> expected = {
      "h2o",   "h2o-alg1",       "h2o-alg2-linear", "h2o-alg2-sqrt", "h2o-alg2-log", "h2o-flexgen",
      "h2o-oracle", "local",     "streamingllm",    "sparse-strided", "sparse-fixed", "random",
      "l2norm", "tova",          "snapkv",          "h2o-noisy"};
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
  p.skipped_layers = {1};
  return c;
}

RC_GTEST_PROP(PolicyRegistry, EveryPolicyAgreesWithItsNaiveRuleStepByStep, ()) {
  Config c = gen_config();
  const HeadGroup group = c.instance.group();
  for (const std::string& name : policy_names()) {
    c.setup.policy = name;
    const naive::Result expected = naive::simulate(c.instance, c.setup);
    auto policy = make_policy(name, c.setup.params);
    SimulationOptions options;
    options.budget = c.setup.budget;
    options.prefill = c.setup.prefill;
    options.aggregation = c.setup.rule;
    options.seed = c.setup.seed;
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

}  // namespace
}  // namespace subevict::greedy
