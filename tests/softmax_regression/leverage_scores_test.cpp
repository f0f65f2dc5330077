// Tests softmax_regression/leverage_scores.hpp against the definition M_i (M^T M)^{-1} M_i^T.
#include <gtest/gtest.h>

#include "core/tolerance.hpp"
#include "softmax_regression/instances.hpp"
#include "softmax_regression/leverage_scores.hpp"

namespace subevict::softmax_regression {
namespace {

TEST(LeverageScores, ExactScoresMatchTheDefinitionAndSumToTheRank) {
  InstanceSpec spec;
  spec.n = 60;
  spec.d = 5;
  const Problem p = make_instance(spec).problem;
  const Vector s = p.w.cwiseSqrt();
  const Matrix M = s.asDiagonal() * p.A;
  const Matrix G = (M.transpose() * M).inverse();
  const Vector tau = exact_leverage_scores(p.A, s);
  for (Index i = 0; i < spec.n; ++i) {
    EXPECT_NEAR(tau[i], M.row(i) * G * M.row(i).transpose(), Tol<double>::sum(spec.n));
  }
  EXPECT_NEAR(tau.sum(), 5.0, Tol<double>::sum(spec.n));
  // A zero weight removes the row: its score is 0 and the rank is unchanged.
  Vector s0 = s;
  s0[0] = 0;
  EXPECT_NEAR(exact_leverage_scores(p.A, s0)[0], 0.0, Tol<double>::sum(spec.n));
}

TEST(LeverageScores, SketchedScoresAreWithinAConstantFactor) {
  InstanceSpec spec;
  spec.n = 5000;
  spec.d = 10;
  const Problem p = make_instance(spec).problem;
  const Vector s = Vector::Ones(spec.n);
  const Vector exact = exact_leverage_scores(p.A, s);
  SketchOptions options;
  options.jl_columns = 64;
  const Vector approx = sketched_leverage_scores(p.A, s, options);
  // Mean of 64 squared normals: within a factor 2 of its mean except with tiny probability, and
  // the CountSketch of 200 rows distorts by less than a factor 1.5 here.
  const Vector ratio = approx.cwiseQuotient(exact);
  EXPECT_GT(ratio.minCoeff(), 0.3);
  EXPECT_LT(ratio.maxCoeff(), 3.0);
  EXPECT_NEAR(approx.sum() / exact.sum(), 1.0, 0.2);
}

TEST(LeverageScores, SamplingIsUnbiasedAndDeterministic) {
  const Vector p{{0.5, 0.0, 0.25, 0.25}};
  const RowSample a = sample_rows(p, 4000, 7, 1);
  const RowSample b = sample_rows(p, 4000, 7, 1);
  EXPECT_EQ(a.rows, b.rows);
  ASSERT_EQ(a.rows, (std::vector<Index>{0, 2, 3}));  // the zero-probability row is never drawn
  // weight_i = count_i / (draws p_i) averages to 1: 4000 draws, relative error ~ 1/sqrt(1000).
  for (Index j = 0; j < a.weights.size(); ++j) EXPECT_NEAR(a.weights[j], 1.0, 0.1);
}

}  // namespace
}  // namespace subevict::softmax_regression
