// Tests greedy/eviction/evaluation/resumable_simulation.hpp: for every causal policy of the
// registry, rows appended in any split (a prompt run, chunks, one token at a time) give the same
// steps as one simulate() call on all rows, bit for bit (evictions, the cache after every step,
// the prefill drops), under random budgets, prefill, windows, aggregation and seeds; a run forked
// at any step decides as one run on the rows each copy gets; oracles, bad appends and forks of a
// policy that cannot be copied are refused.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "greedy/eviction/evaluation/resumable_simulation.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/policies/recorded_policy.hpp"
#include "tests/greedy/eviction/evaluation/resumable_check.hpp"
#include "tests/greedy/naive_eviction.hpp"

namespace subevict::greedy {
namespace {

using resumable_check::append;
using resumable_check::shape_of;

PolicyParams test_params() {
  PolicyParams params;
  params.sinks = 2;
  params.observation_window = 3;
  params.sink_size_start = 2;
  params.sink_size_end = 2;
  return params;
}

RC_GTEST_PROP(ResumableSimulation, AnySplitGivesSimulatesStepsForEveryCausalPolicy, ()) {
  const int n = *rc::gen::inRange(1, 41);
  const naive::Instance in = naive::random_instance(*rc::gen::inRange<std::uint64_t>(0, 1u << 30), n,
                                                    *rc::gen::inRange(1, 9), *rc::gen::inRange(1, 4),
                                                    *rc::gen::element(0.5, 2.0, 4.0), *rc::gen::inRange(0, 3));
  HeadGroup group = in.group();
  group.window = *rc::gen::element(0, *rc::gen::inRange(1, n + 2));
  SimulationOptions options;
  options.budget = *rc::gen::inRange(6, 12);
  options.prefill = *rc::gen::element(0, *rc::gen::inRange(0, n + 1));
  options.aggregation = *rc::gen::element(GroupAggregation::kSum, GroupAggregation::kMean, GroupAggregation::kMax);
  options.seed = *rc::gen::inRange<std::uint64_t>(0, 100);
  options.record_cache = true;
  options.compute_metrics = false;
  const bool one_at_a_time = *rc::gen::arbitrary<bool>();
  const auto chunks = *rc::gen::container<std::vector<int>>(n, rc::gen::inRange(1, 9));
  for (const std::string& name : policy_names()) {
    auto reference_policy = make_policy(name, test_params());
    if (reference_policy->is_oracle()) continue;
    const Trace trace = simulate(group, *reference_policy, options);
    ResumableSimulation run(make_policy(name, test_params()), shape_of(group), options);
    std::vector<Token> evicted;
    std::vector<std::vector<Token>> caches;
    int from = 0;
    for (std::size_t c = 0; from < n; ++c) {
      int m = one_at_a_time ? 1 : chunks[c];
      if (from == 0 && options.prefill > trace.budget) m = std::max(m, options.prefill);  // prefill at the start
      m = std::min(m, n - from);
      const ResumedSteps steps = append(run, group, from, m);
      RC_ASSERT(steps.first == from);
      RC_ASSERT(int(steps.evicted.size()) == m);
      evicted.insert(evicted.end(), steps.evicted.begin(), steps.evicted.end());
      caches.insert(caches.end(), steps.cache.begin(), steps.cache.end());
      from += m;
      RC_ASSERT(run.tokens() == from);
      RC_ASSERT(run.cache() == trace.cache[std::size_t(from - 1)]);
    }
    RC_ASSERT(run.budget() == trace.budget);
    RC_ASSERT(run.prefill_evicted() == trace.prefill_evicted);
    for (int i = 0; i < n; ++i) {
      if (evicted[std::size_t(i)] != trace.steps[std::size_t(i)].evicted || caches[std::size_t(i)] != trace.cache[std::size_t(i)]) {
        RC_FAIL(name + " differs from simulate at step " + std::to_string(i));
      }
    }
  }
}

RC_GTEST_PROP(ResumableSimulation, AForkDecidesAsOneRunOnTheRowsItGetsForEveryCausalPolicy, ()) {
  const int n = *rc::gen::inRange(2, 41), d = *rc::gen::inRange(1, 9), g = *rc::gen::inRange(1, 4);
  const double sharpness = *rc::gen::element(0.5, 2.0, 4.0);
  const int layer = *rc::gen::inRange(0, 3);
  const naive::Instance a = naive::random_instance(*rc::gen::inRange<std::uint64_t>(0, 1u << 30), n, d, g, sharpness, layer);
  SimulationOptions options;
  options.budget = *rc::gen::inRange(6, 12);  // every policy's parameters (test_params) fit
  options.prefill = *rc::gen::element(0, *rc::gen::inRange(0, n));
  options.aggregation = *rc::gen::element(GroupAggregation::kSum, GroupAggregation::kMean, GroupAggregation::kMax);
  options.seed = *rc::gen::inRange<std::uint64_t>(0, 100);
  const int s = *rc::gen::inRange(options.prefill > options.budget ? options.prefill : 1, n);
  naive::Instance other = naive::random_instance(*rc::gen::inRange<std::uint64_t>(0, 1u << 30), n, d, g, sharpness, layer);
  other.kv_head = a.kv_head;
  const naive::Instance b = resumable_check::spliced(a, other, s);
  HeadGroup on_a = a.group(), on_b = b.group();
  on_a.window = on_b.window = *rc::gen::element(0, *rc::gen::inRange(1, n + 2));
  for (const std::string& name : policy_names()) {
    if (make_policy(name, test_params())->is_oracle()) continue;
    const std::string mismatch =
        resumable_check::fork_mismatch([&] { return make_policy(name, test_params()); }, on_a, on_b, options, s);
    if (!mismatch.empty()) RC_FAIL(name + ": " + mismatch);
  }
}

TEST(ResumableSimulation, AForkOfAPolicyThatCannotBeCopiedIsRefusedNamingIt) {
  const naive::Instance in = naive::random_instance(3, 8, 4, 1, 2.0);
  const HeadGroup group = in.group();
  SimulationOptions options;
  options.budget = 8;  // nothing is evicted: the record keeps every token to the end
  ResumableSimulation run(std::make_unique<RecordedPolicy>("recorded:x", std::vector<int>(8, 7), "x.npy"),
                          shape_of(group), options);
  (void)append(run, group, 0, 4);
  try {
    (void)run.fork();
    ADD_FAILURE() << "the fork was made";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("recorded:x"), std::string::npos) << e.what();
  }
}

TEST(ResumableSimulation, RefusesOraclesNamingThem) {
  for (const std::string name : {"h2o-oracle"}) {  // lookahead is built from a spec only
    SimulationOptions options;
    options.budget = 4;
    try {
      ResumableSimulation run(make_policy(name), ResumableShape{1, 4, 0.5, 0, 16, 0, 0}, options);
      ADD_FAILURE() << name << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
}

TEST(ResumableSimulation, RefusesRowsBeyondTheCapacityAndAShortPrefillRunUnchanged) {
  const naive::Instance in = naive::random_instance(7, 12, 4, 2, 2.0);
  const HeadGroup group = in.group();
  SimulationOptions options;
  options.budget = 3;
  options.prefill = 6;
  ResumableShape shape = shape_of(group);
  shape.capacity = 11;
  ResumableSimulation run(make_policy("h2o"), shape, options);
  EXPECT_THROW((void)append(run, group, 0, 5), std::invalid_argument);  // the prefill needs 6 rows first
  EXPECT_EQ(run.tokens(), 0);
  (void)append(run, group, 0, 10);
  EXPECT_THROW((void)append(run, group, 10, 2), std::invalid_argument);  // 1 row left
  EXPECT_EQ(run.tokens(), 10);
  EXPECT_EQ(append(run, group, 10, 1).evicted.size(), 1u);
  ResumableShape wrong = shape_of(group);
  wrong.capacity = 20;
  ResumableSimulation other(make_policy("h2o"), wrong, options);
  std::vector<ConstHeadMap> one_head{group.q[0]};
  EXPECT_THROW((void)other.extend(one_head, group.k, group.v), std::invalid_argument);  // g = 2 expected
}

}  // namespace
}  // namespace subevict::greedy
