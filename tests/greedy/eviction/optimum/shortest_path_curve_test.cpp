// The budget curve by successive shortest paths (greedy/eviction/optimum/shortest_path_curve.*)
// against the exhaustive dynamic program (cache_dp) and separate column-generation solves
// (implicit_flow_optimum) and the explicit network simplex (offline_optimum), every budget's certificate against an independent evaluation of the
// Lagrangian bound.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/generator.hpp"
#include "core/input_error.hpp"
#include "core/tolerance.hpp"
#include "greedy/eviction/optimum/cache_dp.hpp"
#include "greedy/eviction/optimum/implicit_flow.hpp"
#include "greedy/eviction/optimum/offline_optimum.hpp"
#include "greedy/eviction/optimum/shortest_path_curve.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/process/triangular_gains.hpp"
#include "tests/greedy/attention_instances.hpp"

namespace subevict::greedy {
namespace {

/// The agreement the acceptance criteria ask of the exact solvers.
constexpr double kAgreement = 1e-9;

/// The curve with every certificate kept, by budget.
struct CurveWithCertificates {
  ShortestPathCurve curve;
  std::map<int, std::vector<double>> certificates;
};

template <class Scalar>
CurveWithCertificates curve_with_certificates(const TriangularGains<Scalar>& gains, int max_budget, int threads = 1) {
  CurveWithCertificates out;
  ShortestPathCurveOptions options;
  options.threads = threads;
  int last = 0;
  options.on_certificate = [&](int k, const std::vector<double>& y) {
    EXPECT_EQ(k, last + 1) << "certificates arrive once each, in increasing order of budget";
    last = k;
    out.certificates[k] = y;
  };
  out.curve = shortest_path_curve(gains, max_budget, options);
  return out;
}

void property(int zero_per_mille) {
  const int n = *rc::gen::inRange(1, 13);
  const int max_budget = *rc::gen::inRange(1, n + 1);
  const Eigen::MatrixXd a = testing::random_attention(n, zero_per_mille);
  const auto gains = TriangularGains<double>::from_dense(a, "test");
  const CurveWithCertificates got = curve_with_certificates(gains, max_budget);
  RC_ASSERT(int(got.curve.points.size()) == max_budget);
  for (int k = 1; k <= max_budget; ++k) {
    const CurveOptimum& p = got.curve.points[k - 1];
    RC_ASSERT(p.budget == k);
    const double exact = cache_dp(a, k).value;
    RC_ASSERT(near(p.value, exact, kAgreement));
    RC_ASSERT(p.upper_bound >= exact - kAgreement);
    RC_ASSERT(p.upper_bound - p.value <= kAgreement * std::max(1.0, p.value));
    // The certificate is a bound on its own, from any evaluation of the Lagrangian.
    const double bound = lagrangian_upper_bound(gains, k, got.certificates.at(k));
    RC_ASSERT(near(std::max(bound, p.value), p.upper_bound, kAgreement));
  }
}

RC_GTEST_PROP(ShortestPathCurve, EveryBudgetEqualsTheDynamicProgramWithItsCertificate, ()) { property(300); }

RC_GTEST_PROP(ShortestPathCurve, EveryBudgetEqualsTheDynamicProgramWithManyZeroGains, ()) {
  // Zero-gain entries make ties and degenerate flows (arcs of equal cost, empty columns).
  property(800);
}

RC_GTEST_PROP(ShortestPathCurve, EveryBudgetOverSeveralBlocksEqualsItsOwnSolve, ()) {
  // n past two blocks of 64 steps: the block bounds, the queued blocks and the skipped ones all
  // decide; every 7th budget against its own column generation.
  const int n = *rc::gen::inRange(70, 161);
  const int max_budget = *rc::gen::inRange(1, n / 2 + 1);
  const Eigen::MatrixXd a = testing::random_attention(n, *rc::gen::element(0, 900));
  const auto gains = TriangularGains<double>::from_dense(a, "test");
  const CurveWithCertificates got = curve_with_certificates(gains, max_budget);
  RC_ASSERT(int(got.curve.points.size()) == max_budget);
  for (int k = 1; k <= max_budget; k += 7) {
    const CurveOptimum& p = got.curve.points[k - 1];
    const ImplicitFlowResult single = implicit_flow_optimum(gains, k);
    RC_ASSERT(near(p.value, single.summary.value, kAgreement));
    RC_ASSERT(p.upper_bound - p.value <= kAgreement * std::max(1.0, p.value));
    RC_ASSERT(near(std::max(lagrangian_upper_bound(gains, k, got.certificates.at(k)), p.value), p.upper_bound,
                   kAgreement));
  }
}

/// Budgets 1..max_budget of an LLM-like head against separate column-generation solves.
template <class Scalar>
void check_llm_like_head(const std::string& preset, int tokens, int head, int max_budget, int every) {
  const Workload w = generate_workload(spec_from_preset(preset, tokens, 1, 17));
  const HeadGroup group = head_group(w, 0, head);
  const auto gains = triangular_gain_matrix<Scalar>(group);
  const CurveWithCertificates got = curve_with_certificates(gains, max_budget);
  ASSERT_EQ(int(got.curve.points.size()), max_budget);
  // Both ways of a later block must have run on these heads: skipped on its bound, and queued and
  // walked (otherwise this test would not cover them).
  EXPECT_GT(got.curve.stats.blocks_skipped, 0u);
  EXPECT_GT(got.curve.stats.blocks_walked, 0u);
  for (int k = 1; k <= max_budget; ++k) {
    SCOPED_TRACE(preset + " k " + std::to_string(k));
    const CurveOptimum& p = got.curve.points[k - 1];
    EXPECT_LE(p.upper_bound - p.value, kAgreement * std::max(1.0, p.value));
    if (k % every == 0 || k == 1 || k == max_budget) {
      const ImplicitFlowResult single = implicit_flow_optimum(gains, k);
      EXPECT_TRUE(near(p.value, single.summary.value, kAgreement)) << p.value << " vs " << single.summary.value;
      EXPECT_TRUE(near(std::max(p.value, lagrangian_upper_bound(gains, k, got.certificates.at(k))), p.upper_bound,
                       kAgreement));
    }
    // OPT(k) is nondecreasing and concave in k.
    if (k >= 2) {
      EXPECT_GE(p.value, got.curve.points[k - 2].value - kAgreement);
    }
    if (k >= 3) {
      EXPECT_LE(p.value - got.curve.points[k - 2].value,
                got.curve.points[k - 2].value - got.curve.points[k - 3].value + kAgreement);
    }
  }
}

TEST(ShortestPathCurve, EqualsSeparateSolvesOnLlmLikeHeads) {
  // n = 300 spans five pricing blocks of 64 steps; an odd largest budget ends on a single budget.
  check_llm_like_head<double>("tiny", 300, 1, 151, 10);
  check_llm_like_head<double>("tiny-gqa", 300, 0, 150, 25);
}

TEST(ShortestPathCurve, EqualsSeparateSolvesOnFloatGains) {
  check_llm_like_head<float>("tiny", 260, 0, 130, 13);
}

TEST(ShortestPathCurve, RunsOnSeveralThreadsGiveTheSamePointsAndCertificatesInOrder) {
  // 560 budgets: two runs of 280 on two threads (each at least 256), three runs on three.
  const Workload w = generate_workload(spec_from_preset("tiny", 600, 1, 23));
  const auto gains = triangular_gain_matrix<double>(head_group(w, 0, 0));
  const CurveWithCertificates one = curve_with_certificates(gains, 560, 1);
  for (int threads : {2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    const CurveWithCertificates many = curve_with_certificates(gains, 560, threads);  // checks the order
    ASSERT_EQ(many.curve.points.size(), 560u);
    ASSERT_EQ(many.certificates.size(), 560u);
    // One augmentation per budget after each run's first, which its own column generation solves.
    const int runs = std::min(threads, 560 / 256);
    EXPECT_EQ(many.curve.stats.augmentations, std::size_t(560 - runs));
    for (int k = 1; k <= 560; ++k) {
      const CurveOptimum& p = many.curve.points[k - 1];
      ASSERT_EQ(p.budget, k);
      EXPECT_TRUE(near(p.value, one.curve.points[k - 1].value, kAgreement)) << "k " << k;
      EXPECT_LE(p.upper_bound - p.value, kAgreement * std::max(1.0, p.value));
      if (k % 40 == 1) {
        EXPECT_TRUE(near(std::max(lagrangian_upper_bound(gains, k, many.certificates.at(k)), p.value),
                         p.upper_bound, kAgreement));
      }
    }
    // A run's first budget is its own solve: the one after the split equals a separate solve.
    const int second = 1 + 560 / runs;
    EXPECT_TRUE(near(many.curve.points[second - 1].value, implicit_flow_optimum(gains, second).summary.value,
                     kAgreement));
  }
}

TEST(ShortestPathCurve, TheWholeRangeOfBudgetsReachesEveryTokenCached) {
  const Workload w = generate_workload(spec_from_preset("tiny", 90, 1, 5));
  const HeadGroup group = head_group(w, 0, 0);
  const Eigen::MatrixXd a = gain_matrix(group);
  const auto curve = shortest_path_curve(triangular_gain_matrix<double>(group), 90);
  ASSERT_EQ(curve.points.size(), 90u);
  // Budget n keeps every token: OPT is the whole attention mass.
  EXPECT_TRUE(near(curve.points.back().value, a.sum(), kAgreement));
  EXPECT_TRUE(near(curve.points[44].value, offline_optimum(a, 45).value, kAgreement));
}

TEST(ShortestPathCurve, RefusesABudgetOutsideItsRange) {
  const auto gains = TriangularGains<double>::from_dense(Eigen::MatrixXd::Identity(4, 4), "test");
  EXPECT_THROW((void)shortest_path_curve(gains, 0), InputError);
  EXPECT_THROW((void)shortest_path_curve(gains, 5), InputError);
  ShortestPathCurveOptions none_threads;
  none_threads.threads = 0;
  EXPECT_THROW((void)shortest_path_curve(gains, 2, none_threads), InputError);
  const auto none = shortest_path_curve(TriangularGains<double>(0), 1);
  ASSERT_EQ(none.points.size(), 1u);
  EXPECT_EQ(none.points[0].value, 0.0);
}

}  // namespace
}  // namespace subevict::greedy
