// The receding-horizon lookahead rule (greedy/lookahead.*): a process schedule between the
// policies and the offline optimum, equal to the optimum with a full horizon; as a simulator
// policy it reproduces lookahead_schedule.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "core/generator.hpp"
#include "core/input_error.hpp"
#include "core/tolerance.hpp"
#include "tests/greedy/attention_instances.hpp"
#include "greedy/eviction/optimum/cache_dp.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/policies/lookahead.hpp"
#include "greedy/eviction/optimum/offline_optimum.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"

namespace subevict::greedy {
namespace {

constexpr double kAgreement = 1e-9;

Eigen::MatrixXd random_attention(int n) { return testing::random_attention(n, 0); }

RC_GTEST_PROP(Lookahead, FullHorizonIsOptimalAndAnyHorizonIsFeasible, ()) {
  const int n = *rc::gen::inRange(1, 11);
  const int k = *rc::gen::inRange(0, n + 1);
  const int horizon = *rc::gen::inRange(1, n + 1);
  const Eigen::MatrixXd a = random_attention(n);
  const double opt = cache_dp(a, k).value;
  const ScheduleSummary full = lookahead_schedule(a, k, n);
  RC_ASSERT(near(full.value, opt, kAgreement));
  const ScheduleSummary part = lookahead_schedule(a, k, horizon);
  RC_ASSERT(is_process_schedule(part.last_step, k));
  RC_ASSERT(part.value <= opt + kAgreement);
}

TEST(Lookahead, HorizonOneEvictsTheLeastAttendedByTheNextQuery) {
  // Step 2 is full (k = 2): the next query attends 0.5, 0.1, 0.3 to tokens 0, 1, 2.
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(4, 4);
  a << 1, 0, 0, 0,  //
      0.5, 0.5, 0, 0,  //
      0.2, 0.3, 0.5, 0,  //
      0.5, 0.1, 0.3, 0.1;
  EXPECT_EQ(lookahead_victim(a, {0, 1, 2}, 2, 1), 1);
  EXPECT_THROW((void)lookahead_schedule(a, 2, 0), InputError);
}

TEST(Lookahead, PolicyMatchesTheScheduleOnAnLlmLikeGroup) {
  const Workload w = generate_workload(spec_from_preset("tiny-gqa", 40, 1, 3));
  const HeadGroup group = head_group(w, 0, 1);
  const Eigen::MatrixXd gains = gain_matrix(group);
  LookaheadPolicy policy(4);
  SimulationOptions options;
  options.budget = 8;
  const Trace trace = simulate(group, policy, options);
  const ScheduleSummary schedule = lookahead_schedule(gains, 8, 4);
  EXPECT_TRUE(trace.oracle);
  EXPECT_EQ(trace.last_step(), schedule.last_step);
  EXPECT_TRUE(near(trace.total_retained_mass(), schedule.value, kAgreement));
  EXPECT_LE(schedule.value, offline_optimum(gains, 8).value + kAgreement);
}

}  // namespace
}  // namespace subevict::greedy
