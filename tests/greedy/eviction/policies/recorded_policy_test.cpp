// Tests greedy/eviction/policies/recorded_policy.*: replaying any policy's recorded schedule
// through the simulator reproduces its trace bit for bit; replaying the offline optimum's schedule
// reproduces OPT; schedules that break the process at the run's budget are rejected at reset.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/input_error.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/optimum/offline_optimum.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/policies/recorded_policy.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"
#include "greedy/eviction/process/recorded_schedule.hpp"
#include "tests/greedy/naive_eviction.hpp"

namespace subevict::greedy {
namespace {

/// Every field a policy's decisions determine, compared exactly (bit for bit for the metrics).
void expect_same_trace(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (std::size_t i = 0; i < a.steps.size(); ++i) {
    EXPECT_EQ(a.steps[i].evicted, b.steps[i].evicted) << "step " << i;
    EXPECT_EQ(a.steps[i].retained_mass, b.steps[i].retained_mass) << "step " << i;
    EXPECT_EQ(a.steps[i].total_variation, b.steps[i].total_variation) << "step " << i;
    EXPECT_EQ(a.steps[i].output_error, b.steps[i].output_error) << "step " << i;
  }
  EXPECT_EQ(a.head_retained_mass, b.head_retained_mass);
  EXPECT_EQ(a.head_output_error, b.head_output_error);
  EXPECT_EQ(a.prefill_evicted, b.prefill_evicted);
  EXPECT_EQ(a.budget, b.budget);
  EXPECT_EQ(a.total_retained_mass(), b.total_retained_mass());
  EXPECT_EQ(a.last_step(), b.last_step());
}

RC_GTEST_PROP(RecordedPolicy, ReplayReproducesEveryPolicyExactly, ()) {
  const int n = *rc::gen::inRange(1, 40);
  const naive::Instance in = naive::random_instance(*rc::gen::inRange<std::uint64_t>(0, 1u << 30), n,
                                                    *rc::gen::inRange(1, 9), *rc::gen::inRange(1, 4), 2.0);
  HeadGroup group = in.group();
  group.window = *rc::gen::element(0, *rc::gen::inRange(1, n + 2));  // global, or a sliding window
  SimulationOptions options;
  options.budget = *rc::gen::inRange(6, 14);  // room for the parameters below
  options.prefill = *rc::gen::element(0, *rc::gen::inRange(0, n + 1));
  options.aggregation = *rc::gen::element(GroupAggregation::kSum, GroupAggregation::kMean, GroupAggregation::kMax);
  options.seed = 3;
  PolicyParams params;
  params.sinks = 2;
  params.observation_window = 3;
  params.sink_size_start = params.sink_size_end = 2;
  for (const std::string& name : policy_names()) {
    auto policy = make_policy(name, params);
    const Trace original = simulate(group, *policy, options);
    // Replay at the budget the policy used (l2norm's skipped layers keep all: budget n).
    SimulationOptions replay = options;
    replay.budget = original.budget;
    // Through the exported form: eviction steps, admitted back.
    const AdmittedSchedule admitted =
        admit_eviction_steps(eviction_steps(original.last_step()), replay.budget, replay.prefill,
                             ScheduleAdmission::kExact, name, group.window);
    RC_ASSERT(admitted.last_step == original.last_step());
    if (replay.prefill <= replay.budget) {  // pure streaming: the process rules, window included
      RC_ASSERT(is_process_schedule(original.last_step(), replay.budget, group.window));
    }
    RecordedPolicy recorded("recorded:" + name, admitted.last_step, name);
    const Trace again = simulate(group, recorded, replay);
    RC_ASSERT(again.policy == "recorded:" + name);
    RC_ASSERT(!again.oracle);
    for (int i = 0; i < n; ++i) {
      RC_ASSERT(again.steps[std::size_t(i)].evicted == original.steps[std::size_t(i)].evicted);
      RC_ASSERT(again.steps[std::size_t(i)].output_error == original.steps[std::size_t(i)].output_error);
    }
    RC_ASSERT(again.head_retained_mass == original.head_retained_mass);
    RC_ASSERT(again.prefill_evicted == original.prefill_evicted);
    RC_ASSERT(again.total_retained_mass() == original.total_retained_mass());
  }
}

TEST(RecordedPolicy, OptimumOfAWindowedLayerReplaysToOpt) {
  // The optimum frees a slot when a token leaves the window (its gains end there); the process
  // form of its schedule with the window (the token leaves first, then at most one eviction) is
  // a schedule of the simulator's process and replays to OPT.
  for (const int window : {5, 9, 20}) {
    for (const int k : {1, 4, window - 1}) {
      const naive::Instance in = naive::random_instance(17 + std::uint64_t(k * window), 60, 8, 2, 4.0);
      HeadGroup group = in.group();
      group.window = window;
      const Eigen::MatrixXd gains = gain_matrix(group);
      OfflineOptimumOptions raw;
      raw.process_form = false;
      const ScheduleSummary opt = offline_optimum(gains, k, raw);
      ASSERT_EQ(opt.status, ScheduleStatus::kOptimal);
      const std::vector<int> schedule = to_process_schedule(drop_outside_window(opt.last_step, window), k, window);
      ASSERT_TRUE(is_process_schedule(schedule, k, window)) << "W " << window << " k " << k;
      SimulationOptions options;
      options.budget = k;
      RecordedPolicy recorded("recorded:OPT", schedule, "opt.npy");
      const Trace trace = simulate(group, recorded, options);
      EXPECT_EQ(trace.last_step(), schedule);
      EXPECT_NEAR(trace.total_retained_mass(), opt.value, 1e-12 * double(in.n) * in.g) << "W " << window << " k " << k;
      if (k == window - 1) EXPECT_NEAR(opt.value, double(in.n) * in.g, 1e-12 * double(in.n) * in.g);
    }
  }
}

TEST(RecordedPolicy, AWindowedRecordEvictsNothingWhereTheWindowMadeRoom) {
  // W = 4, k = 2, n = 8, worked by hand: steps 2, 4 and 6 are full (G_i holds 3 and token i - 3
  // is not among them) and evict 1, 3 and 5; at steps 3, 5 and 7 tokens 0, 2 and 4 leave the
  // window, which makes the room: those steps evict nothing. The record writes n (never evicted)
  // for the tokens only the window dropped.
  const std::vector<std::int64_t> steps = {8, 2, 8, 4, 8, 6, 8, 8};
  const std::vector<int> expected = {2, 1, 4, 3, 6, 5, 7, 7};
  EXPECT_EQ(admit_eviction_steps(steps, 2, 0, ScheduleAdmission::kExact, "x.npy", 4).last_step, expected);
  EXPECT_EQ(admit_keep_mask(keep_mask(expected), 8, 2, 0, ScheduleAdmission::kExact, "x.npy", 4).last_step, expected);
  EXPECT_TRUE(is_process_schedule(expected, 2, 4));
  const naive::Instance in = naive::random_instance(5, 8, 4, 1, 2.0);
  HeadGroup group = in.group();
  group.window = 4;
  SimulationOptions options;
  options.budget = 2;
  std::vector<int> as_recorded(steps.size());
  for (std::size_t j = 0; j < steps.size(); ++j) as_recorded[j] = int(steps[j]) - 1;
  RecordedPolicy replay("recorded:x", as_recorded, "x.npy");
  const Trace trace = simulate(group, replay, options);
  EXPECT_EQ(trace.last_step(), expected);
  for (int i : {3, 5, 7}) EXPECT_EQ(trace.steps[std::size_t(i)].evicted, kNoEviction) << i;
  // Evicting token 2 at step 3, where token 0 left the window, is refused.
  std::vector<std::int64_t> extra = steps;
  extra[2] = 3;
  try {
    (void)admit_eviction_steps(extra, 2, 0, ScheduleAdmission::kExact, "x.npy", 4);
    FAIL() << "an eviction where the window made room was admitted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("step 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("left the window"), std::string::npos) << e.what();
  }
  // k = 3 = W - 1: nothing is ever evicted; the window alone empties the cache.
  const AdmittedSchedule whole =
      admit_eviction_steps(std::vector<std::int64_t>(8, 8), 3, 0, ScheduleAdmission::kExact, "x.npy", 4);
  for (int j = 0; j < 8; ++j) EXPECT_EQ(whole.last_step[std::size_t(j)], std::min(j + 2, 7)) << j;
}

TEST(RecordedPolicy, H2oTraceReplaysBitForBit) {
  const naive::Instance in = naive::random_instance(7, 96, 8, 2, 4.0);
  SimulationOptions options;
  options.budget = 19;
  auto h2o = make_policy("h2o");
  const Trace original = simulate(in.group(), *h2o, options);
  RecordedPolicy recorded("recorded:h2o", original.last_step(), "h2o.npy");
  expect_same_trace(simulate(in.group(), recorded, options), original);
  // The instance is reusable: a second run replays the same.
  expect_same_trace(simulate(in.group(), recorded, options), original);
}

TEST(RecordedPolicy, OptimumScheduleReplaysToOpt) {
  for (const int k : {1, 5, 19, 40}) {
    const naive::Instance in = naive::random_instance(11 + std::uint64_t(k), 80, 8, 3, 4.0);
    const HeadGroup group = in.group();
    const Eigen::MatrixXd gains = gain_matrix(group);
    const ScheduleSummary opt = offline_optimum(gains, k);
    ASSERT_EQ(opt.status, ScheduleStatus::kOptimal);
    SimulationOptions options;
    options.budget = k;
    RecordedPolicy recorded("recorded:OPT", opt.last_step, "opt.npy");
    const Trace trace = simulate(group, recorded, options);
    EXPECT_EQ(trace.last_step(), opt.last_step);
    EXPECT_EQ(schedule_value(gains, trace.last_step()), opt.value);
    // The simulator's retained mass (full-row normalizers) against the optimum's (summed rows):
    // the same sets, so equal up to rounding.
    EXPECT_NEAR(trace.total_retained_mass(), opt.value, 1e-12 * double(in.n) * in.g) << "k = " << k;
    for (int i = 0; i < in.n; ++i) {
      EXPECT_NEAR(trace.steps[std::size_t(i)].retained_mass * in.g, opt.step_mass[i], 1e-12 * in.g) << i;
    }
  }
}

TEST(RecordedPolicy, ResetRejectsARecordThatIsNotThisRunsProcess) {
  const naive::Instance in = naive::random_instance(3, 12, 4, 1, 2.0);
  SimulationOptions options;
  options.budget = 4;
  auto local = make_policy("local");
  const std::vector<int> t = simulate(in.group(), *local, options).last_step();
  // Another n.
  RecordedPolicy shorter("recorded:x", std::vector<int>(t.begin(), t.end() - 1), "x.npy");
  try {
    (void)simulate(in.group(), shorter, options);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "x.npy: tokens: expected a record of n = 12 tokens (the run's), got 11 tokens");
  }
  // Recorded at k = 4, replayed at k = 6: local evicts token 0 at step 4, when the cache holds 4 < 6.
  options.budget = 6;
  RecordedPolicy wider("recorded:x", t, "x.npy");
  try {
    (void)simulate(in.group(), wider, options);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("x.npy: step 4: expected no eviction while the cache holds fewer than k = 6"),
              std::string::npos)
        << e.what();
  }
  // At k = 3 the cache would hold 4 after step 3.
  options.budget = 3;
  try {
    (void)simulate(in.group(), wider, options);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("x.npy: step 3: expected a cache of at most k = 3 tokens"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace subevict::greedy
