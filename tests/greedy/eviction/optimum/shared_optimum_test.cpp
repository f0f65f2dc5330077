// The optimum of one cache shared by several heads (greedy/eviction/optimum/shared_optimum.*)
// against an exhaustive search over shared cache states written here, the single-head dynamic
// program (cache_dp) for one head, and the order uniform per-head OPT <= static optimal
// allocation <= shared OPT.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <vector>

#include "core/input_error.hpp"
#include "core/tolerance.hpp"
#include "greedy/eviction/budgets/budget_allocation.hpp"
#include "greedy/eviction/optimum/cache_dp.hpp"
#include "greedy/eviction/optimum/offline_optimum.hpp"
#include "greedy/eviction/optimum/shared_columns.hpp"
#include "greedy/eviction/optimum/shared_optimum.hpp"
#include "greedy/eviction/process/triangular_gains.hpp"
#include "tests/greedy/attention_instances.hpp"

namespace subevict::greedy {
namespace {

constexpr double kAgreement = 1e-9;

/// The best total over every history of a cache of at most `total` (head, token) entries: after
/// step i's arrivals (token i of every head) the step earns Σ W^h_ij over the entries of head h,
/// then any subset of at most `total` entries stays. States are bitmasks of the entries h·n + j.
double exhaustive_shared(const std::vector<Eigen::MatrixXd>& gains, int total) {
  const int heads = int(gains.size()), n = int(gains.front().rows());
  std::map<unsigned, double> best{{0u, 0.0}};
  for (int i = 0; i < n; ++i) {
    std::map<unsigned, double> next;
    for (const auto& [cached, value] : best) {
      unsigned present = cached;
      for (int h = 0; h < heads; ++h) present |= 1u << (h * n + i);
      double earned = value;
      for (int item = 0; item < heads * n; ++item) {
        if (present >> item & 1u) earned += gains[item / n](i, item % n);
      }
      // Every subset of the present entries with at most `total` of them.
      for (unsigned keep = present;; keep = (keep - 1) & present) {
        if (__builtin_popcount(keep) <= total) {
          auto [it, inserted] = next.emplace(keep, earned);
          if (!inserted) it->second = std::max(it->second, earned);
        }
        if (keep == 0) break;
      }
    }
    best = std::move(next);
  }
  double out = 0.0;
  for (const auto& [cached, value] : best) out = std::max(out, value);
  return out;
}

std::vector<Eigen::MatrixXd> random_heads(int heads, int n, int zero_per_mille) {
  std::vector<Eigen::MatrixXd> out;
  for (int h = 0; h < heads; ++h) out.push_back(testing::random_attention(n, zero_per_mille));
  return out;
}

RC_GTEST_PROP(SharedOptimum, EqualsTheExhaustiveSearchOverSharedCaches, ()) {
  const int heads = *rc::gen::inRange(1, 4);
  const int n = *rc::gen::inRange(1, 5);
  const int total = *rc::gen::inRange(0, heads * n + 2);
  const auto gains = random_heads(heads, n, 300);
  const SharedOptimum got = shared_optimum(gains, total);
  RC_ASSERT(got.status == ScheduleStatus::kOptimal);
  RC_ASSERT(near(got.value, exhaustive_shared(gains, total), kAgreement));
  RC_ASSERT(got.upper_bound - got.value <= kAgreement * std::max(1.0, got.value));
  // The schedule: every entry cached from its arrival to its last step, at most `total` in all.
  double recomputed = 0.0;
  for (int h = 0; h < heads; ++h) recomputed += schedule_value(gains[h], got.last_step[h]);
  RC_ASSERT(near(recomputed, got.value, kAgreement));
  for (int i = 0; i < n; ++i) RC_ASSERT(got.occupancy.row(i).sum() <= total);
}

RC_GTEST_PROP(SharedOptimum, OneHeadEqualsTheSingleHeadDynamicProgram, ()) {
  const int n = *rc::gen::inRange(1, 11);
  const int total = *rc::gen::inRange(0, n + 2);
  const Eigen::MatrixXd a = testing::random_attention(n, 500);
  RC_ASSERT(near(shared_optimum({a}, total).value, cache_dp(a, total).value, kAgreement));
}

/// Each head's curve OPT_h(k), k = 1..n, from the single-head solver.
std::vector<std::vector<double>> curves_of(const std::vector<Eigen::MatrixXd>& gains) {
  std::vector<std::vector<double>> out;
  for (const Eigen::MatrixXd& w : gains) {
    std::vector<double> curve;
    for (int k = 1; k <= w.rows(); ++k) curve.push_back(offline_optimum(w, k).value);
    out.push_back(curve);
  }
  return out;
}

RC_GTEST_PROP(SharedOptimum, UniformIsAtMostStaticIsAtMostShared, ()) {
  const int heads = *rc::gen::inRange(2, 5);
  const int n = *rc::gen::inRange(2, 12);
  const int per_head = *rc::gen::inRange(1, n + 1);
  const auto gains = random_heads(heads, n, 300);
  const auto curves = curves_of(gains);
  double uniform = 0.0;
  for (const auto& c : curves) uniform += c[per_head - 1];
  const double fixed = allocate_budget(curves, (long long)per_head * heads).value;
  const double shared = shared_optimum(gains, (long long)per_head * heads).value;
  RC_ASSERT(uniform <= fixed + kAgreement);
  RC_ASSERT(fixed <= shared + kAgreement);
}

TEST(SharedOptimum, MovingSlotsBetweenHeadsOverTimeBeatsEveryStaticSplit) {
  // Head 0 attends back to its token 0 only at step 1, head 1 to its token 2 only at step 3: one
  // shared slot holds head 0's token 0 after step 0 and head 1's token 2 after step 2, while any
  // static split of the one slot serves one head only.
  const int n = 4;
  Eigen::MatrixXd a = Eigen::MatrixXd::Identity(n, n), b = Eigen::MatrixXd::Identity(n, n);
  a(1, 0) = 1.0;
  b(3, 2) = 1.0;
  const std::vector<Eigen::MatrixXd> gains{a, b};
  const SharedOptimum shared = shared_optimum(gains, 1);
  const double best_static = std::max(offline_optimum(a, 1).value + offline_optimum(b, 0).value,
                                      offline_optimum(a, 0).value + offline_optimum(b, 1).value);
  EXPECT_NEAR(shared.value, exhaustive_shared(gains, 1), kAgreement);
  EXPECT_GT(shared.value, best_static + 0.5);
  // The slot is head 0's after step 0 and head 1's after step 2.
  EXPECT_EQ(shared.occupancy(0, 0), 1);
  EXPECT_EQ(shared.occupancy(2, 1), 1);
}

TEST(SharedOptimum, RefusesBadInputNamingIt) {
  EXPECT_THROW((void)shared_optimum(std::vector<Eigen::MatrixXd>{}, 1), InputError);
  const std::vector<Eigen::MatrixXd> mixed{Eigen::MatrixXd::Identity(3, 3), Eigen::MatrixXd::Identity(4, 4)};
  EXPECT_THROW((void)shared_optimum(mixed, 1), InputError);
  const std::vector<Eigen::MatrixXd> one{Eigen::MatrixXd::Identity(3, 3)};
  EXPECT_THROW((void)shared_optimum(one, -1), InputError);
  Eigen::MatrixXd upper = Eigen::MatrixXd::Identity(3, 3);
  upper(0, 2) = 0.5;
  EXPECT_THROW((void)shared_optimum(std::vector<Eigen::MatrixXd>{upper}, 1), InputError);
}

}  // namespace
}  // namespace subevict::greedy

namespace subevict::greedy {
namespace {

std::vector<TriangularGains<double>> stored(const std::vector<Eigen::MatrixXd>& gains) {
  std::vector<TriangularGains<double>> out;
  for (const auto& g : gains) out.push_back(TriangularGains<double>::from_dense(g, "test"));
  return out;
}

std::vector<const TriangularGains<double>*> pointers(const std::vector<TriangularGains<double>>& gains) {
  std::vector<const TriangularGains<double>*> out;
  for (const auto& g : gains) out.push_back(&g);
  return out;
}

RC_GTEST_PROP(SharedColumns, EqualsTheExplicitNetworkAndCertifiesIt, ()) {
  const int heads = *rc::gen::inRange(1, 5);
  const int n = *rc::gen::inRange(1, 40);
  const long long total = *rc::gen::inRange<long long>(0, heads * n + 2);
  std::vector<Eigen::MatrixXd> gains;
  for (int h = 0; h < heads; ++h) gains.push_back(testing::random_attention(n, 200));
  const auto triangles = stored(gains);
  SharedColumnOptions options;
  options.arcs_per_token = *rc::gen::inRange(2, 5);
  const SharedOptimum got = shared_optimum_columns(pointers(triangles), total, options);
  const SharedOptimum want = shared_optimum(gains, total);
  RC_ASSERT(got.status == ScheduleStatus::kOptimal);
  const double tolerance = 1e-9 * std::max(1.0, want.value);
  RC_ASSERT(std::abs(got.value - want.value) <= tolerance);
  RC_ASSERT(got.upper_bound >= want.value - tolerance);
  RC_ASSERT(got.upper_bound - got.value <= tolerance);
  double recomputed = 0.0;
  for (int h = 0; h < heads; ++h) recomputed += schedule_value(gains[h], got.last_step[h]);
  RC_ASSERT(std::abs(recomputed - got.value) <= tolerance);
  for (int i = 0; i < n; ++i) RC_ASSERT(got.occupancy.row(i).sum() <= total);
}

RC_GTEST_PROP(SharedColumns, StopsAtTheRequestedGapWithABoundThatHolds, ()) {
  const int heads = *rc::gen::inRange(2, 5);
  const int n = *rc::gen::inRange(20, 60);
  const long long total = *rc::gen::inRange<long long>(1, heads * n / 4 + 2);
  std::vector<Eigen::MatrixXd> gains;
  for (int h = 0; h < heads; ++h) gains.push_back(testing::random_attention(n, 0));
  const auto triangles = stored(gains);
  SharedColumnOptions options;
  options.relative_gap = 0.05;
  int rounds = 0;
  options.on_round = [&](const ImplicitFlowRound& r) { rounds = r.round; };
  const SharedOptimum got = shared_optimum_columns(pointers(triangles), total, options);
  const double exact = shared_optimum(gains, total).value;
  RC_ASSERT(rounds >= 1);
  RC_ASSERT(got.value <= exact + 1e-9 * exact);
  RC_ASSERT(got.upper_bound >= exact - 1e-9 * exact);
  RC_ASSERT(got.upper_bound - got.value <= 0.05 * got.upper_bound + 1e-9 * exact);
}

TEST(SharedColumns, RefusesBadInput) {
  const Eigen::MatrixXd five = Eigen::MatrixXd(Eigen::MatrixXd::Constant(5, 5, 0.2).triangularView<Eigen::Lower>());
  const Eigen::MatrixXd six = Eigen::MatrixXd(Eigen::MatrixXd::Constant(6, 6, 0.2).triangularView<Eigen::Lower>());
  const auto triangles = stored({five, six});
  EXPECT_THROW((void)shared_optimum_columns({}, 3), InputError);
  EXPECT_THROW((void)shared_optimum_columns(pointers(triangles), 3), InputError);  // sizes differ
  const auto one = stored({five});
  EXPECT_THROW((void)shared_optimum_columns(pointers(one), -1), InputError);
  SharedColumnOptions options;
  options.arcs_per_token = 1;
  EXPECT_THROW((void)shared_optimum_columns(pointers(one), 3, options), InputError);
  options = {};
  options.relative_gap = -1;
  EXPECT_THROW((void)shared_optimum_columns(pointers(one), 3, options), InputError);
}

}  // namespace
}  // namespace subevict::greedy
