// Tests softmax_regression/lemma_checks.hpp: Lemma D.47 holds where the w condition holds and can
// fail where it does not; Lemma D.48's bound is never exceeded (and is very loose).
#include <gtest/gtest.h>

#include "softmax_regression/instances.hpp"
#include "softmax_regression/lemma_checks.hpp"

namespace subevict::softmax_regression {
namespace {

InstanceSpec small_spec(Violation v, std::uint64_t seed) {
  InstanceSpec spec;
  spec.n = 40;
  spec.d = 5;
  spec.seed = seed;
  spec.violation = v;
  return spec;
}

TEST(LemmaD47, StrongConvexityHoldsUnderTheWCondition) {
  for (std::uint64_t seed : {1, 2, 3}) {
    const Instance inst = make_instance(small_spec(Violation::kNone, seed));
    const LemmaD47Result r = measure_lemma_d47(inst.problem, inst.parameters, 40, seed);
    EXPECT_TRUE(r.w_condition_holds);
    EXPECT_TRUE(r.conclusion_holds) << "margin " << r.margin;
    EXPECT_GE(r.margin, 0);
  }
}

TEST(LemmaD47, BoundCanFailWithoutTheWCondition) {
  const Instance inst = make_instance(small_spec(Violation::kWeakW, 1));
  const LemmaD47Result r = measure_lemma_d47(inst.problem, inst.parameters, 40, 1);
  EXPECT_FALSE(r.w_condition_holds);
  EXPECT_FALSE(r.conclusion_holds) << "margin " << r.margin;
  EXPECT_LT(r.min_eigenvalue, r.l);
}

TEST(LemmaD48, MeasuredLipschitzRatioNeverExceedsTheBound) {
  for (double R : {1.0, 2.0, 10.0}) {
    InstanceSpec spec = small_spec(Violation::kNone, 5);
    spec.parameters.R = R;
    spec.norm_A = R;
    const Instance inst = make_instance(spec);
    const LemmaD48Result r = measure_lemma_d48(inst.problem, inst.parameters, 20, 5);
    EXPECT_TRUE(r.conclusion_holds);
    EXPECT_GT(r.max_ratio, 0);
    EXPECT_GT(r.log_looseness, 0) << "R = " << R;
  }
}

TEST(BallPoint, StaysInsideTheBall) {
  for (std::uint64_t k = 0; k < 50; ++k) EXPECT_LE(ball_point(7, 2.5, 3, k).norm(), 2.5 + 1e-12);
  EXPECT_EQ(ball_point(7, 2.5, 3, 0), Vector::Zero(7));
}

}  // namespace
}  // namespace subevict::softmax_regression
