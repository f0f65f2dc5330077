// Tests proofs_checks/attention_identities_checks.hpp: the identities of theory.md §1 hold with
// core/attention.hpp and fail with broken softmax or tracked-attention implementations.
#include <gtest/gtest.h>

#include <cmath>

#include "core/attention.hpp"
#include "core/generator.hpp"
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

TEST(AttentionIdentities, HeldWithTheLibraryAttention) {
  EXPECT_EQ(check_row_sums(workload(), kSample, exact).outcome, Outcome::held);
  EXPECT_EQ(check_tv_identity(workload(), kSample, exact, tracked).outcome, Outcome::held);
  const CheckResult bound = check_output_bound(workload(), kSample, exact, tracked);
  EXPECT_EQ(bound.outcome, Outcome::held);
  EXPECT_EQ(bound.instances, 4 * 4);  // rows per head x query heads
}

TEST(AttentionIdentities, RowSumsViolatedByAnUnnormalisedSoftmax) {
  const auto broken = [](const Eigen::VectorXd& x) { return Eigen::VectorXd(x.array().exp()); };
  const CheckResult r = check_row_sums(workload(), kSample, broken);
  EXPECT_EQ(r.outcome, Outcome::violated);
  ASSERT_TRUE(r.counterexample.has_value());
}

TEST(AttentionIdentities, TvIdentityViolatedByZeroPadding) {
  const CheckResult r = check_tv_identity(workload(), kSample, exact, zero_padded);
  EXPECT_EQ(r.outcome, Outcome::violated);
  ASSERT_TRUE(r.counterexample.has_value());
}

TEST(AttentionIdentities, OutputBoundViolatedByUnnormalisedTrackedWeights) {
  const auto broken = [](const Eigen::VectorXd& x, const std::vector<bool>& g) {
    return Eigen::VectorXd(100.0 * tracked_attention(x, g));
  };
  EXPECT_EQ(check_output_bound(workload(), kSample, exact, broken).outcome, Outcome::violated);
}

}  // namespace
}  // namespace subevict::proofs_checks
