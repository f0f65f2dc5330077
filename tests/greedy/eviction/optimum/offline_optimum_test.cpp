// The exact offline optimum of the irreversible process (greedy/offline_optimum.*) against two
// independent solvers: exhaustive dynamic programming over cache states (greedy/cache_dp.*, the
// process rules of theory.md §2, n ≤ 12) and the CBC integer program over y_{j,t}
// (greedy/offline_optimum_ip.*, n ≤ 60), including its status when a time or node limit stops CBC
// early; and the decomposition policy ≤ OPT ≤ Σ U_i ≤ n.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <vector>

#include "core/attention.hpp"
#include "core/generator.hpp"
#include "core/input_error.hpp"
#include "core/tolerance.hpp"
#include "tests/greedy/attention_instances.hpp"
#include "greedy/eviction/optimum/cache_dp.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/optimum/offline_optimum.hpp"
#include "greedy/eviction/optimum/offline_optimum_ip.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/optimum/step_oracle.hpp"

namespace subevict::greedy {
namespace {

/// The agreement the acceptance criteria ask of the three exact solvers.
constexpr double kAgreement = 1e-9;

/// A random attention-like matrix with about 30% exact zeros.
Eigen::MatrixXd random_attention(int n) { return testing::random_attention(n, 300); }

/// The tiny LLM-like workload (core/generator.hpp) with `tokens` tokens.
Workload tiny_workload(const std::string& preset, int tokens, std::uint64_t seed) {
  return generate_workload(spec_from_preset(preset, tokens, 1, seed));
}

/// Every exact property of one instance: the flow optimum is feasible, in process form, recomputed
/// consistently, certified, and between every schedule we know and Σ U_i ≤ total gain.
void check_flow(const Eigen::MatrixXd& w, int k, const ScheduleSummary& flow) {
  const int n = int(w.rows());
  ASSERT_EQ(flow.status, ScheduleStatus::kOptimal);
  EXPECT_TRUE(is_feasible_schedule(flow.last_step, k));
  EXPECT_TRUE(is_process_schedule(flow.last_step, k));
  EXPECT_TRUE(near(schedule_value(w, flow.last_step), flow.value, Tol<double>::sum(n * n)));
  EXPECT_LE(flow.upper_bound - flow.value, kAgreement * std::max(1.0, flow.value));
  const StepOracle oracle = step_oracle(w, k);
  for (int i = 0; i < n; ++i) {
    EXPECT_LE(flow.step_mass[i], oracle.per_step[i] + Tol<double>::sum(n)) << "step " << i;
  }
  EXPECT_LE(oracle.total, w.sum() + Tol<double>::sum(n * n));
}

RC_GTEST_PROP(OfflineOptimum, FlowEqualsDynamicProgramOnRandomInstances, ()) {
  const int n = *rc::gen::inRange(1, 11);
  const int k = *rc::gen::inRange(0, n + 2);
  const Eigen::MatrixXd a = random_attention(n);
  const ScheduleSummary flow = offline_optimum(a, k);
  const ScheduleSummary dp = cache_dp(a, k);
  RC_ASSERT(near(flow.value, dp.value, kAgreement));
  RC_ASSERT(near(dp.value, dp.upper_bound, kAgreement));
  RC_ASSERT(is_process_schedule(dp.last_step, k));
  RC_ASSERT(is_process_schedule(flow.last_step, k));
  RC_ASSERT(flow.value <= step_oracle(a, k).total + kAgreement);
  RC_ASSERT(step_oracle(a, k).total <= n + kAgreement);
}

RC_GTEST_PROP(OfflineOptimum, PruningAndRawFormDoNotChangeTheOptimum, ()) {
  const int n = *rc::gen::inRange(1, 16);
  const int k = *rc::gen::inRange(0, n + 1);
  const Eigen::MatrixXd a = random_attention(n);
  OfflineOptimumOptions raw;
  raw.prune_dominated_arcs = false;
  raw.process_form = false;
  const ScheduleSummary pruned = offline_optimum(a, k);
  const ScheduleSummary full = offline_optimum(a, k, raw);
  RC_ASSERT(near(pruned.value, full.value, kAgreement));
  RC_ASSERT(is_feasible_schedule(full.last_step, k));
  // The process form keeps every token at least as long as the raw flow schedule.
  const std::vector<int> process = to_process_schedule(full.last_step, k);
  for (int j = 0; j < n; ++j) RC_ASSERT(process[j] >= full.last_step[j]);
  RC_ASSERT(near(schedule_value(a, process), full.value, kAgreement));
}

RC_GTEST_PROP(OfflineOptimum, FlowEqualsIntegerProgramOnRandomInstances, ()) {
  const int n = *rc::gen::inRange(1, 25);
  const int k = *rc::gen::inRange(1, n + 1);
  const Eigen::MatrixXd a = random_attention(n);
  const ScheduleSummary flow = offline_optimum(a, k);
  const ScheduleSummary ip = offline_optimum_ip(a, k);
  RC_ASSERT(ip.status == ScheduleStatus::kOptimal);
  RC_ASSERT(is_feasible_schedule(ip.last_step, k));
  RC_ASSERT(near(flow.value, ip.value, kAgreement));
}

TEST(OfflineOptimum, AllThreeSolversAgreeOnLlmLikeHeads) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const Workload w = tiny_workload("tiny", 12, seed);
    for (int head = 0; head < w.shape().kv_heads; ++head) {
      const Eigen::MatrixXd a = gain_matrix(head_group(w, 0, head));
      for (int k : {1, 3, 6}) {
        const ScheduleSummary flow = offline_optimum(a, k);
        check_flow(a, k, flow);
        EXPECT_TRUE(near(flow.value, cache_dp(a, k).value, kAgreement)) << "seed " << seed << " k " << k;
        EXPECT_TRUE(near(flow.value, offline_optimum_ip(a, k).value, kAgreement));
      }
    }
  }
}

TEST(OfflineOptimum, FlowEqualsIntegerProgramAtSixtyTokens) {
  const Workload w = tiny_workload("tiny", 60, 7);
  const Eigen::MatrixXd a = gain_matrix(head_group(w, 0, 0));
  for (int k : {6, 12}) {
    const ScheduleSummary flow = offline_optimum(a, k);
    check_flow(a, k, flow);
    const ScheduleSummary ip = offline_optimum_ip(a, k);
    ASSERT_EQ(ip.status, ScheduleStatus::kOptimal);
    EXPECT_TRUE(near(flow.value, ip.value, kAgreement)) << flow.value << " vs " << ip.value;
  }
}

/// What an integer-program run stopped by a limit must satisfy against the flow optimum `opt`:
/// never kOptimal; kFailed with an empty schedule and a reason, or kFeasible with a feasible
/// schedule whose recomputed value is ≤ OPT ≤ upper_bound and a message saying it is unproven.
void check_stopped_ip(const Eigen::MatrixXd& gains, int k, const ScheduleSummary& stopped,
                      double opt) {
  const int n = int(gains.rows());
  EXPECT_NE(stopped.status, ScheduleStatus::kOptimal);
  EXPECT_FALSE(stopped.message.empty());
  if (stopped.status == ScheduleStatus::kFailed) {
    EXPECT_TRUE(stopped.last_step.empty());
    return;
  }
  ASSERT_EQ(stopped.status, ScheduleStatus::kFeasible);
  EXPECT_TRUE(is_feasible_schedule(stopped.last_step, k));
  EXPECT_TRUE(near(schedule_value(gains, stopped.last_step), stopped.value, Tol<double>::sum(n * n)));
  EXPECT_LE(stopped.value, opt + kAgreement);
  EXPECT_GE(stopped.upper_bound, opt - kAgreement);
}

TEST(OfflineOptimum, IntegerProgramStoppedByALimitIsFeasibleButNotProven) {
  const Workload w = tiny_workload("tiny", 60, 7);
  const Eigen::MatrixXd a = gain_matrix(head_group(w, 0, 0));
  constexpr int k = 6;
  const ScheduleSummary flow = offline_optimum(a, k);  // the independent proven optimum
  check_flow(a, k, flow);
  ASSERT_EQ(offline_optimum_ip(a, k).status, ScheduleStatus::kOptimal);
  // The root LP of this program comes out integral, so CBC holds the optimum as its incumbent
  // right after it; a limit of one microsecond has passed by then on any machine, and CBC stops
  // before it declares the proof.
  const ScheduleSummary timed = offline_optimum_ip(a, k, {.time_limit_seconds = 1e-6});
  EXPECT_EQ(timed.status, ScheduleStatus::kFeasible);
  check_stopped_ip(a, k, timed, flow.value);
  // A node limit of 0 stops CBC at the root, whatever the machine's speed.
  check_stopped_ip(a, k, offline_optimum_ip(a, k, {.max_nodes = 0}), flow.value);
}

TEST(OfflineOptimum, ValueWeightedAndGqaSummedObjectivesAgree) {
  // tiny-gqa: 4 query heads over 2 KV heads; the objective sums the group and weights by ‖v_j‖.
  const Workload w = tiny_workload("tiny-gqa", 11, 5);
  for (int head = 0; head < w.shape().kv_heads; ++head) {
    const HeadGroup group = head_group(w, 0, head);
    ASSERT_EQ(group.group_size(), 2);
    for (bool weighted : {false, true}) {
      const Eigen::MatrixXd gains = gain_matrix(group, weighted);
      for (int k : {2, 5}) {
        const ScheduleSummary flow = offline_optimum(gains, k);
        check_flow(gains, k, flow);
        EXPECT_TRUE(near(flow.value, cache_dp(gains, k).value, kAgreement));
        EXPECT_TRUE(near(flow.value, offline_optimum_ip(gains, k).value, kAgreement));
      }
    }
  }
}

TEST(OfflineOptimum, GainMatrixSumsHeadsAndWeightsTokens) {
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(2, 2), b = Eigen::MatrixXd::Zero(2, 2);
  a << 1.0, 0.0, 0.25, 0.75;
  b << 1.0, 0.0, 0.5, 0.5;
  const Eigen::Vector2d weights(2.0, 3.0);
  const Eigen::MatrixXd w = gain_matrix({a, b}, weights);
  EXPECT_EQ(w(0, 0), 4.0);
  EXPECT_EQ(w(1, 0), 1.5);
  EXPECT_EQ(w(1, 1), 3.75);
  EXPECT_EQ(w(0, 1), 0.0);
}

TEST(OfflineOptimum, ClosedFormCases) {
  // Budget >= n keeps everything: OPT = sum of all entries. Budget 0: only the diagonal.
  const Workload w = tiny_workload("tiny", 9, 3);
  const Eigen::MatrixXd a = gain_matrix(head_group(w, 0, 0));
  EXPECT_TRUE(near(offline_optimum(a, 9).value, a.sum(), Tol<double>::sum(81)));
  EXPECT_TRUE(near(offline_optimum(a, 0).value, a.trace(), Tol<double>::sum(9)));
  EXPECT_EQ(offline_optimum(Eigen::MatrixXd(0, 0), 3).value, 0.0);
}

TEST(OfflineOptimum, EveryPolicyIsBelowTheOptimum) {
  const Workload w = tiny_workload("tiny-gqa", 48, 11);
  for (int head = 0; head < w.shape().kv_heads; ++head) {
    const HeadGroup group = head_group(w, 0, head);
    const Eigen::MatrixXd gains = gain_matrix(group);
    for (int k : {8, 16}) {
      const ScheduleSummary flow = offline_optimum(gains, k);
      check_flow(gains, k, flow);
      const double oracle = step_oracle(gains, k).total;
      PolicyParams params;
      params.observation_window = 4;  // snapkv needs w < k
      params.sink_size_start = params.sink_size_end = 2;  // compactor needs a + b <= k
      for (const std::string& name : policy_names()) {
        std::unique_ptr<EvictionPolicy> policy = make_policy(name, params);
        SimulationOptions options;
        options.budget = k;
        const Trace trace = simulate(group, *policy, options);
        if (trace.budget != k) continue;  // the policy does not compress this layer (l2norm)
        EXPECT_LE(trace.total_retained_mass(), flow.value + kAgreement * flow.value)
            << name << " head " << head << " k " << k;
        // The simulator's schedule is a process schedule whose value is its total.
        EXPECT_TRUE(is_process_schedule(trace.last_step(), k)) << name;
        EXPECT_TRUE(near(schedule_value(gains, trace.last_step()), trace.total_retained_mass(),
                         kAgreement))
            << name;
      }
      EXPECT_LE(flow.value, oracle + kAgreement);
      EXPECT_LE(oracle, double(group.group_size()) * 48 + kAgreement);
    }
  }
}

TEST(OfflineOptimum, RejectsInvalidInput) {
  Eigen::MatrixXd upper = Eigen::MatrixXd::Identity(3, 3);
  upper(0, 2) = 0.5;
  EXPECT_THROW((void)offline_optimum(upper, 1), InputError);
  Eigen::MatrixXd negative = Eigen::MatrixXd::Identity(3, 3);
  negative(2, 0) = -0.1;
  EXPECT_THROW((void)offline_optimum(negative, 1), InputError);
  EXPECT_THROW((void)offline_optimum(Eigen::MatrixXd::Identity(3, 3), -1), InputError);
  EXPECT_THROW((void)offline_optimum(Eigen::MatrixXd::Zero(2, 3), 1), InputError);
  EXPECT_THROW((void)cache_dp(Eigen::MatrixXd::Identity(25, 25), 3), InputError);
}

}  // namespace
}  // namespace subevict::greedy
