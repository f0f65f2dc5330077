// Tests greedy/diagnostics/submodularity_violations.hpp: no violations on submodular families; the attention
// fidelity function is reported non-submodular on a constructed instance with a hand-checked
// minimal triple; the interval brackets the rate.
#include "greedy/diagnostics/submodularity_violations.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <stdexcept>

#include "core/tolerance.hpp"
#include "greedy/functions/attention_fidelity.hpp"
#include "greedy/diagnostics/submodularity_ratio.hpp"
#include "tests/greedy/random_instances.hpp"

namespace subevict::greedy {
namespace {

RC_GTEST_PROP(SubmodularityViolations, NoneOnSubmodularFamilies, ()) {
  const auto f = testing::random_submodular(10);
  const ViolationReport report =
      find_submodularity_violations(*f, {300, *rc::gen::arbitrary<std::uint64_t>()});
  RC_ASSERT(report.violations == 0u);
  RC_ASSERT(!report.minimal);
  RC_ASSERT(report.interval.lower == 0.0);
}

/// One query over three keys of equal logits with values +1, −1, +1: o = 1/3. f(∅) = −1/9,
/// f({0}) = −4/9, f({1}) = −16/9, f({0, 1}) = −1/9, so Δ(0|∅) = −1/3 < Δ(0|{1}) = 5/3.
/// Tolerances: these values are a few roundings from exact, so Tol<double>::kValue.
AttentionFidelity opposed_values() {
  Eigen::MatrixXd logits = Eigen::MatrixXd::Zero(1, 3);
  Eigen::MatrixXd values(3, 1);
  values << 1.0, -1.0, 1.0;
  return {logits, values};
}

TEST(SubmodularityViolations, AttentionFidelityIsReportedNonSubmodular) {
  const AttentionFidelity f = opposed_values();
  const ViolationReport report = find_submodularity_violations(f, {2000, 11});
  EXPECT_GT(report.violations, 0u);
  EXPECT_GT(report.rate, 0.0);
  EXPECT_GT(report.interval.lower, 0.0);
  EXPECT_LE(report.interval.lower, report.rate);
  EXPECT_GE(report.interval.upper, report.rate);
  ASSERT_TRUE(report.minimal.has_value());
  const SubmodularityViolation& v = *report.minimal;
  const auto gain = [&f](std::vector<Element> set, Element x) {
    const double without = f.evaluate(set);
    set.push_back(x);
    return f.evaluate(set) - without;
  };
  EXPECT_LT(v.gain_small, v.gain_large);
  EXPECT_EQ(v.gain_small, gain(v.x_set, v.element));
  EXPECT_EQ(v.gain_large, gain(v.y_set, v.element));
  // 1-minimal: dropping any element of Y (from Y, and from X when there) ends the violation; on
  // this instance every minimal triple has X = ∅ and |Y| = 1 (X = ∅ has Δ(x|∅) < 0 while any
  // other key makes x's gain ≥ 0).
  EXPECT_TRUE(v.x_set.empty());
  EXPECT_EQ(v.y_set.size(), 1u);
  EXPECT_NE(v.y_set[0], v.element);
  // The hand-computed triple.
  EXPECT_NEAR(gain({}, 0), -1.0 / 3.0, Tol<double>::kValue);
  EXPECT_NEAR(gain({1}, 0), 5.0 / 3.0, Tol<double>::kValue);
  // The ratio diagnostic agrees: γ < 1.
  EXPECT_LT(submodularity_ratio_exact(f, {2, std::nullopt}).gamma, 1.0);
}

TEST(SubmodularityViolations, FindsViolationsOnRandomAttentionInstances) {
  Eigen::MatrixXd logits(2, 6);
  logits << 0.3, -1.2, 2.0, 0.1, -0.4, 1.1, 1.5, 0.2, -0.7, 0.9, 0.0, -1.3;
  Eigen::MatrixXd values(6, 2);
  values << 1.0, -0.5, -0.8, 0.3, 0.2, 1.1, -1.0, -1.0, 0.6, 0.4, 0.9, -0.2;
  const ViolationReport report =
      find_submodularity_violations(AttentionFidelity(logits, values), {2000, 5});
  EXPECT_GT(report.rate, 0.0);
  EXPECT_TRUE(report.minimal.has_value());
}

TEST(SubmodularityViolations, RejectsBadOptions) {
  const AttentionFidelity f = opposed_values();
  EXPECT_THROW((void)find_submodularity_violations(f, {0, 1}), std::invalid_argument);
  ViolationSearchOptions options;
  options.confidence = 1.0;
  EXPECT_THROW((void)find_submodularity_violations(f, options), std::invalid_argument);
}

}  // namespace
}  // namespace subevict::greedy
