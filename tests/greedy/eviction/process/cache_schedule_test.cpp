// Schedules of the irreversible process (greedy/cache_schedule.*) and the per-step oracle
// (greedy/step_oracle.*), against brute force written here; the stored triangular gains of both CPU
// paths against the dense gain matrix.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <functional>
#include <vector>

#include "core/cpu_path.hpp"
#include "core/exact_attention_rows.hpp"
#include "core/generator.hpp"
#include "core/tolerance.hpp"
#include "greedy/eviction/optimum/cache_dp.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"
#include "greedy/eviction/optimum/step_oracle.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/process/triangular_gains.hpp"

namespace subevict::greedy {
namespace {

Eigen::MatrixXd random_gains(int n) {
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j <= i; ++j) a(i, j) = *rc::gen::inRange(0, 9) / 8.0;  // dyadic: exact sums
  }
  return a;
}

TEST(CacheSchedule, SizesAndMassOfAHandSchedule) {
  // n = 4, k = 2: token 0 kept to the end, 1 evicted after step 1, 2 never cached, 3 kept.
  const std::vector<int> t{3, 1, 1, 3};
  EXPECT_EQ(cache_sizes(t), (std::vector<int>{1, 2, 1, 2}));
  EXPECT_TRUE(is_feasible_schedule(t, 2));
  EXPECT_FALSE(is_feasible_schedule(t, 1));
  EXPECT_FALSE(is_process_schedule(t, 2));  // step 2 is under-full
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(4, 4);
  a << 1, 0, 0, 0,  //
      1, 2, 0, 0,   //
      1, 2, 4, 0,   //
      1, 2, 4, 8;
  // G_0 = {0}, G_1 = {0, 1}, G_2 = {0, 1, 2}, G_3 = {0, 3}.
  const Eigen::VectorXd mass = schedule_step_mass(a, t);
  EXPECT_EQ(mass, Eigen::Vector4d(1, 3, 7, 9));
  EXPECT_EQ(schedule_value(a, t), 20.0);
  EXPECT_THROW((void)cache_sizes({0, -1}), std::invalid_argument);  // t_1 < 0
  EXPECT_EQ(schedule_from_caches({{0}, {0, 1}, {0}, {0, 3}}), t);
  EXPECT_THROW((void)schedule_from_caches({{0}, {}, {0}}), std::invalid_argument);
}

RC_GTEST_PROP(CacheSchedule, ProcessFormDominatesAndFollowsTheRules, ()) {
  const int n = *rc::gen::inRange(1, 30);
  const int k = *rc::gen::inRange(0, n + 1);
  // A random feasible schedule: draw t_j, shortening it while some step would overflow.
  std::vector<int> t(n);
  for (int j = 0; j < n; ++j) t[j] = *rc::gen::inRange(j - 1, n);
  for (int j = n - 1; j >= 0 && !is_feasible_schedule(t, k); --j) {
    while (t[j] >= j && !is_feasible_schedule(t, k)) --t[j];
  }
  RC_ASSERT(is_feasible_schedule(t, k));
  const std::vector<int> p = to_process_schedule(t, k);
  RC_ASSERT(is_process_schedule(p, k));
  for (int j = 0; j < n; ++j) RC_ASSERT(p[j] >= t[j]);
  const Eigen::MatrixXd a = random_gains(n);
  RC_ASSERT(schedule_value(a, p) >= schedule_value(a, t));
}

/// Brute force over every feasible schedule (t_j ∈ [j − 1, n − 1], |S_i| ≤ k): the relaxation
/// the flow solves, enumerated without any process rule.
double brute_force_relaxation(const Eigen::MatrixXd& a, int k) {
  const int n = int(a.rows());
  std::vector<int> t(n);
  double best = -1.0;
  std::function<void(int)> assign = [&](int j) {
    if (j == n) {
      if (is_feasible_schedule(t, k)) best = std::max(best, schedule_value(a, t));
      return;
    }
    for (t[j] = j - 1; t[j] < n; ++t[j]) assign(j + 1);
  };
  assign(0);
  return best;
}

RC_GTEST_PROP(CacheSchedule, ProcessOptimumEqualsTheRelaxedOptimum, ()) {
  // The dynamic program follows the process rules; brute force allows any feasible schedule.
  const int n = *rc::gen::inRange(1, 7);
  const int k = *rc::gen::inRange(0, n + 1);
  const Eigen::MatrixXd a = random_gains(n);
  RC_ASSERT(cache_dp(a, k).value == brute_force_relaxation(a, k));  // dyadic: exact
}

RC_GTEST_PROP(StepOracle, MatchesSortingAndBoundsEverySchedule, ()) {
  const int n = *rc::gen::inRange(1, 20);
  const int k = *rc::gen::inRange(0, n + 1);
  const Eigen::MatrixXd a = random_gains(n);
  const StepOracle oracle = step_oracle(a, k, true);
  for (int i = 0; i < n; ++i) {
    std::vector<double> past(a.row(i).data(), a.row(i).data());
    for (int j = 0; j < i; ++j) past.push_back(a(i, j));
    std::sort(past.rbegin(), past.rend());
    double u = a(i, i);
    for (int r = 0; r < std::min(k, i); ++r) u += past[r];
    RC_ASSERT(oracle.per_step[i] == u);
    RC_ASSERT(int(oracle.chosen[i].size()) == std::min(k, i));
    // Ties to the lowest index: every unchosen past token has a smaller gain, or an equal gain
    // and a larger index than every chosen one with that gain.
    for (int j = 0; j < i; ++j) {
      if (std::binary_search(oracle.chosen[i].begin(), oracle.chosen[i].end(), j)) continue;
      for (int c : oracle.chosen[i]) RC_ASSERT(a(i, c) > a(i, j) || (a(i, c) == a(i, j) && c < j));
    }
  }
  const ScheduleSummary dp = n <= 10 ? cache_dp(a, k) : ScheduleSummary{};
  for (int i = 0; i < dp.step_mass.size(); ++i) RC_ASSERT(dp.step_mass[i] <= oracle.per_step[i]);
}

RC_GTEST_PROP(StepOracle, SeveralBudgetsOnStoredGainsEqualOneAtATime, ()) {
  const int n = *rc::gen::inRange(1, 24);
  const std::vector<int> budgets = *rc::gen::container<std::vector<int>>(
      static_cast<std::size_t>(*rc::gen::inRange(1, 4)), rc::gen::inRange(0, n + 1));
  const Eigen::MatrixXd a = random_gains(n);  // dyadic, with ties: sums and orders are exact
  const bool keep_sets = *rc::gen::arbitrary<bool>();
  const std::vector<StepOracle> oracles =
      step_oracles(TriangularGains<double>::from_dense(a, "test"), budgets, keep_sets);
  RC_ASSERT(oracles.size() == budgets.size());
  for (std::size_t b = 0; b < budgets.size(); ++b) {
    const StepOracle one = step_oracle(a, budgets[b], true);
    RC_ASSERT(oracles[b].total == one.total);
    RC_ASSERT(oracles[b].per_step == one.per_step);
    RC_ASSERT(oracles[b].chosen == (keep_sets ? one.chosen : std::vector<std::vector<int>>{}));
  }
}

RC_GTEST_PROP(TriangularGains, EachCpuPathEqualsTheDenseGainMatrix, ()) {
  // Heads over one to five row blocks of 64, with and without GQA and value-norm weights; a
  // sliding window takes the portable rows whatever the path says.
  const int n = *rc::gen::inRange(1, 330);
  const Workload w = generate_workload(
      spec_from_preset(*rc::gen::element<std::string>("tiny", "tiny-gqa"), n, 1, *rc::gen::inRange<std::uint64_t>(0, 1000)));
  const int kv_head = *rc::gen::inRange(0, w.shape().kv_heads);
  HeadGroup group = head_group(w, 0, kv_head);
  if (*rc::gen::weightedOneOf<bool>({{3, rc::gen::just(false)}, {1, rc::gen::just(true)}})) {
    group.window = *rc::gen::inRange(1, n + 1);
  }
  const bool weighted = *rc::gen::arbitrary<bool>();
  const Eigen::MatrixXd want = gain_matrix(group, weighted);
  const double magnitude = score_magnitude(group.q.front(), group.k, group.scale);
  const double relative = 2.0 * exact_rows_tolerance(n, int(group.k.cols()), magnitude).log_normalizer + Tol<double>::sum(n);
  const double norm = weighted ? group.v.cast<double>().rowwise().norm().maxCoeff() : 1.0;
  for (CpuPath path : {CpuPath::kPortable, CpuPath::kAvx2Fma}) {
    if (path == CpuPath::kAvx2Fma && !cpu_supports_avx2_fma()) continue;
    const TriangularGains<double> got = triangular_gain_matrix<double>(group, weighted, path);
    RC_ASSERT(got.size() == n);
    for (int j = 0; j < n; ++j) {
      for (int i = j; i < n; ++i) {
        const double g = got.column(j)[i - j], a = want(i, j);
        RC_ASSERT(std::abs(g - a) <= relative * a + 4 * group.group_size() * norm * DBL_MIN);
      }
    }
  }
}

}  // namespace
}  // namespace subevict::greedy
