// Tests proofs_checks/attention_identities_checks.hpp: with core/attention.hpp the identities of
// theory.md §1 measure rounding only and the output bound holds; broken softmax or tracked-attention
// implementations move the identities' deviations beyond rounding and violate the bound.
#include <gtest/gtest.h>

#include <cmath>

#include "core/attention.hpp"
#include "core/generator.hpp"
#include "core/tolerance.hpp"
#include "proofs_checks/attention_identities_checks.hpp"

namespace subevict::proofs_checks {
namespace {

const Workload& workload() {
  static const Workload w = generate_workload(spec_from_preset("tiny-gqa", 64, 1, 3));
  return w;
}

const RowSample kSample{4, 2};

Eigen::VectorXd exact(const Eigen::VectorXd& x) { return softmax(x); }
Eigen::VectorXd tracked(const Eigen::VectorXd& x, const std::vector<bool>& g) { return tracked_attention(x, g); }

/// Def D.10 as printed: evicted keys padded with zeros keep weight exp(0 - max) / Z.
Eigen::VectorXd zero_padded(const Eigen::VectorXd& x, const std::vector<bool>& g) {
  Eigen::VectorXd padded = x;
  for (Eigen::Index j = 0; j < x.size(); ++j)
    if (!g[std::size_t(j)]) padded[j] = 0;
  return softmax(padded);
}

TEST(AttentionIdentities, RoundingOnlyAndBoundHeldWithTheLibraryAttention) {
  const double rounding = Tol<double>::sum(64);
  for (const CheckResult& r : {check_row_sums(workload(), kSample, exact),
                               check_tv_identity(workload(), kSample, exact, tracked)}) {
    EXPECT_EQ(r.outcome, Outcome::measured);
    EXPECT_EQ(r.instances, 4 * 4);
    EXPECT_LE(measurement_value(r, "max_deviation"), rounding);
    EXPECT_EQ(measurement_value(r, "rows_beyond_rounding"), 0.0);
  }
  const CheckResult bound = check_output_bound(workload(), kSample, exact, tracked);
  EXPECT_EQ(bound.outcome, Outcome::held);
  EXPECT_EQ(bound.instances, 4 * 4);  // rows per head x query heads
}

TEST(AttentionIdentities, RowSumsOfAnUnnormalisedSoftmaxAreBeyondRounding) {
  const auto broken = [](const Eigen::VectorXd& x) { return Eigen::VectorXd(x.array().exp()); };
  const CheckResult r = check_row_sums(workload(), kSample, broken);
  EXPECT_EQ(r.outcome, Outcome::measured);  // a measurement: the numbers move, no verdict
  EXPECT_GT(measurement_value(r, "max_deviation"), 1e-3);
  EXPECT_GT(measurement_value(r, "rows_beyond_rounding"), 0.0);
  EXPECT_NE(r.notes.find("First row beyond rounding"), std::string::npos) << r.notes;
}

TEST(AttentionIdentities, TvIdentityOfZeroPaddingIsBeyondRounding) {
  const CheckResult r = check_tv_identity(workload(), kSample, exact, zero_padded);
  EXPECT_EQ(r.outcome, Outcome::measured);
  EXPECT_GT(measurement_value(r, "rows_beyond_rounding"), 0.0);
}

TEST(AttentionIdentities, OutputBoundViolatedByUnnormalisedTrackedWeights) {
  const auto broken = [](const Eigen::VectorXd& x, const std::vector<bool>& g) {
    return Eigen::VectorXd(100.0 * tracked_attention(x, g));
  };
  EXPECT_EQ(check_output_bound(workload(), kSample, exact, broken).outcome, Outcome::violated);
}

/// A workload on which the output bound is attained: every row i >= 1 puts weight 1/2 on token 0
/// and 1/2 on itself (logit 1000 on both, every other weight underflows to 0), token 0's value is
/// -u and every other value u (|u| = 1). When the sampled G leaves token 0 out, r(G) = 1/2,
/// o = 0 and o~ = u, so |o - o~| = 1 = 2 (1 - r(G)) max |v| exactly; when G holds it, o = o~.
const Workload& output_bound_attained() {
  static const Workload w = [] {
    constexpr int kTokens = 16;
    Workload out(Shape{1, 1, 1, kTokens, kTokens});
    out.set_score_scale(1.0);
    HeadMap q = out.q(0, 0), k = out.k(0, 0), v = out.v(0, 0);
    q.setZero();
    k.setZero();
    v.setZero();
    for (int i = 0; i < kTokens; ++i) {
      k(i, i) = 1.0f;
      q(i, 0) = 1000.0f;
      q(i, i) = 1000.0f;
      v(i, 0) = i == 0 ? -1.0f : 1.0f;
    }
    return out;
  }();
  return w;
}

/// Tracked weights pushed `stretch` times as far from the exact ones: |o - o~| grows by `stretch`.
TrackedAttentionFunction stretched(double stretch) {
  return [stretch](const Eigen::VectorXd& x, const std::vector<bool>& g) {
    const Eigen::VectorXd a = softmax(x);
    return Eigen::VectorXd(a + stretch * (tracked_attention(x, g) - a));
  };
}

TEST(AttentionIdentities, OutputBoundIsAttainedSoASmallerFactorFails) {
  const RowSample sample{16, 5};
  const CheckResult r = check_output_bound(output_bound_attained(), sample, exact, tracked);
  EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
  EXPECT_LE(std::fabs(r.worst_slack), 1e-12) << r.worst_slack;  // some row leaves token 0 out
  EXPECT_EQ(check_output_bound(output_bound_attained(), sample, exact, tracked, 0.99 * kOutputBoundFactor).outcome,
            Outcome::violated);
}

TEST(AttentionIdentities, OutputTwoPercentBeyondTheBoundIsViolatedUnlessTheFactorIsWeakened) {
  const RowSample sample{16, 5};
  const CheckResult r = check_output_bound(output_bound_attained(), sample, exact, stretched(1.02));
  EXPECT_EQ(r.outcome, Outcome::violated);
  EXPECT_TRUE(near(r.worst_slack, -0.02, 1e-9)) << r.worst_slack;
  EXPECT_EQ(check_output_bound(output_bound_attained(), sample, exact, stretched(1.02), 1.05 * kOutputBoundFactor)
                .outcome,
            Outcome::held);
}

}  // namespace
}  // namespace subevict::proofs_checks
