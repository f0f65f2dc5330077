// Tests core/attention.hpp and core/metrics.hpp: the identities of theory.md §1 as properties.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/attention.hpp"
#include "core/metrics.hpp"
#include "core/tolerance.hpp"

namespace subevict {
namespace {

using T = Tol<double>;

/// A random head: n tokens x d dims of Q, K and V with entries in [-scale, scale].
struct Head {
  int n, d;
  std::vector<float> q, k, v;
  ConstHeadMap Q() const { return {q.data(), n, d}; }
  ConstHeadMap K() const { return {k.data(), n, d}; }
  ConstHeadMap V() const { return {v.data(), n, d}; }
};

Head gen_head(float scale, int max_n = 24) {
  Head h;
  h.n = *rc::gen::inRange(1, max_n + 1);
  h.d = *rc::gen::inRange(1, 9);
  const auto entry = rc::gen::map(rc::gen::inRange(-1000, 1001), [scale](int x) { return scale * float(x) / 1000.f; });
  const std::size_t size = std::size_t(h.n) * h.d;
  h.q = *rc::gen::container<std::vector<float>>(size, entry);
  h.k = *rc::gen::container<std::vector<float>>(size, entry);
  h.v = *rc::gen::container<std::vector<float>>(size, entry);
  return h;
}

/// A random tracked set over positions 0..i that always contains i (the query itself).
std::vector<bool> gen_set(int i) {
  auto set = *rc::gen::container<std::vector<bool>>(std::size_t(i + 1), rc::gen::arbitrary<bool>());
  set[i] = true;
  return set;
}

/// A random query row i of a random head with a random tracked set, its exact and tracked rows.
struct TrackedCase {
  Head h;
  int i;
  std::vector<bool> set;
  Eigen::VectorXd logits, a, tracked;
};

TrackedCase gen_tracked_case() {
  TrackedCase c{gen_head(4.0f), 0, {}, {}, {}, {}};
  c.i = *rc::gen::inRange(0, c.h.n);
  c.set = gen_set(c.i);
  c.logits = causal_logits(c.h.Q(), c.h.K(), c.i, 0.5);
  c.a = softmax(c.logits);
  c.tracked = tracked_attention(c.logits, c.set);
  return c;
}

RC_GTEST_PROP(ExactAttention, RowsSumToOne, ()) {
  const Head h = gen_head(4.0f);
  for (int i = 0; i < h.n; ++i) {
    const Eigen::VectorXd a = attention_row(h.Q(), h.K(), i, 1.0);
    RC_ASSERT(a.size() == i + 1);
    RC_ASSERT((a.array() >= 0).all());
    RC_ASSERT(std::abs(a.sum() - 1.0) <= T::sum(a.size()));
  }
}

RC_GTEST_PROP(ExactAttention, ShiftingLogitsChangesNothing, ()) {
  const auto x = *rc::gen::nonEmpty(rc::gen::container<std::vector<int>>(rc::gen::inRange(-2000, 2001)));
  const double c = *rc::gen::inRange(-100000, 100001) / 100.0;
  Eigen::VectorXd logits(x.size());
  for (std::size_t j = 0; j < x.size(); ++j) logits[j] = x[j] / 100.0;
  const Eigen::VectorXd shifted = (logits.array() + c).matrix();
  // Rounding of x + c perturbs each logit by eps (|x| + |c|), hence each probability relatively.
  const double tol = T::sum(x.size()) + 8 * T::kEps * (logits.cwiseAbs().maxCoeff() + std::abs(c));
  RC_ASSERT((softmax(logits) - softmax(shifted)).cwiseAbs().maxCoeff() <= tol);
}

RC_GTEST_PROP(ExactAttention, SoftmaxMatchesTheNaiveFormulaOnSmallLogits, ()) {
  const auto x = *rc::gen::nonEmpty(rc::gen::container<std::vector<int>>(rc::gen::inRange(-500, 501)));
  Eigen::VectorXd logits(x.size());
  for (std::size_t j = 0; j < x.size(); ++j) logits[j] = x[j] / 100.0;
  const Eigen::VectorXd naive = logits.array().exp() / logits.array().exp().sum();
  RC_ASSERT((softmax(logits) - naive).cwiseAbs().maxCoeff() <= T::sum(x.size()));
}

RC_GTEST_PROP(ExactAttention, HugeLogitsStayFinite, ()) {
  // Entries up to 100 in d <= 8 dims with scale 1 give logits of magnitude up to 8e4.
  const Head h = gen_head(100.0f);
  for (int i = 0; i < h.n; ++i) {
    const Eigen::VectorXd a = attention_row(h.Q(), h.K(), i, 1.0);
    RC_ASSERT(a.allFinite());
    RC_ASSERT(std::abs(a.sum() - 1.0) <= T::sum(a.size()));
    const Eigen::VectorXd o = attention_output(a, h.V());
    RC_ASSERT(o.allFinite());
  }
}

TEST(ExactAttention, LogitsOfMagnitude1e4AreFinite) {
  Eigen::VectorXd logits(3);
  logits << 1e4, -1e4, 1e4 - 1;
  const Eigen::VectorXd a = softmax(logits);
  ASSERT_TRUE(a.allFinite());
  EXPECT_NEAR(a[0], 1.0 / (1.0 + std::exp(-1.0)), T::kValue);
  EXPECT_LT(a[1], 1e-300);  // exp(-2e4) underflows (Eigen's exp flushes to ~5e-309)
  EXPECT_TRUE(std::isfinite(log_sum_exp(logits)));
}

RC_GTEST_PROP(TrackedAttention, OverTheFullSetEqualsExactAttention, ()) {
  const Head h = gen_head(4.0f);
  const int i = *rc::gen::inRange(0, h.n);
  const Eigen::VectorXd logits = causal_logits(h.Q(), h.K(), i, 0.5);
  const Eigen::VectorXd tracked = tracked_attention(logits, std::vector<bool>(i + 1, true));
  RC_ASSERT((tracked - softmax(logits)).cwiseAbs().maxCoeff() <= T::sum(i + 1));
}

RC_GTEST_PROP(TrackedAttention, EvictedPositionsAreExactlyZeroAndTheRestIsRenormalised, ()) {
  const TrackedCase c = gen_tracked_case();
  const double r = retained_mass(c.a, c.set);
  for (int j = 0; j <= c.i; ++j) {
    if (!c.set[j]) {
      RC_ASSERT(c.tracked[j] == 0.0);
    } else {
      RC_ASSERT(std::abs(c.tracked[j] - c.a[j] / r) <= T::sum(c.i + 1) * std::max(1.0, c.tracked[j]));
    }
  }
}

RC_GTEST_PROP(TrackedAttention, TotalVariationIsOneMinusRetainedMass, ()) {
  const TrackedCase c = gen_tracked_case();
  const double tv = total_variation(c.a, c.tracked);
  RC_ASSERT(std::abs(tv - (1.0 - retained_mass(c.a, c.set))) <= T::sum(c.i + 1));
}

RC_GTEST_PROP(TrackedAttention, OutputErrorIsBoundedByTwiceTheLostMass, ()) {
  const TrackedCase c = gen_tracked_case();
  const ConstHeadMap v = c.h.V();
  double max_v = 0;
  for (int j = 0; j <= c.i; ++j) max_v = std::max(max_v, double(v.row(j).cast<double>().norm()));
  const double err = (attention_output(c.a, v) - attention_output(c.tracked, v)).norm();
  const double lost = 1.0 - retained_mass(c.a, c.set);
  RC_ASSERT(err <= 2.0 * lost * max_v + T::sum(c.i + 1) * std::max(1.0, max_v));
}

RC_GTEST_PROP(ExactAttention, BlockedMatrixMatchesRowByRow, ()) {
  const Head h = gen_head(4.0f, 40);
  const int block = *rc::gen::inRange(1, 17);
  for_each_attention_block(h.Q(), h.K(), 0.7, block, [&](int first, const Eigen::MatrixXd& probs) {
    RC_ASSERT(probs.cols() == h.n);
    for (int r = 0; r < probs.rows(); ++r) {
      const int i = first + r;
      const Eigen::VectorXd a = attention_row(h.Q(), h.K(), i, 0.7);
      RC_ASSERT((probs.row(r).head(i + 1).transpose() - a).cwiseAbs().maxCoeff() <= T::sum(h.n * h.d));
      RC_ASSERT((probs.row(r).tail(h.n - i - 1).array() == 0).all());
    }
  });
}

/// Row i under a window of W keys from its own logits: log-sum-exp over the visible keys only.
Eigen::VectorXd windowed_row_by_hand(const Head& h, int i, double scale, int window) {
  const Eigen::VectorXd s = causal_logits(h.Q(), h.K(), i, scale);
  const int from = std::max(0, i - window + 1);
  const double lse = log_sum_exp(s.tail(i + 1 - from));
  Eigen::VectorXd a = Eigen::VectorXd::Zero(i + 1);
  for (int j = from; j <= i; ++j) a[j] = std::exp(s[j] - lse);
  return a;
}

RC_GTEST_PROP(SlidingWindowAttention, RowsAreTheSoftmaxOverTheLastWKeysOnly, ()) {
  const Head h = gen_head(4.0f, 40);
  const int window = *rc::gen::inRange(1, h.n + 2);
  const int block = *rc::gen::inRange(1, 17);
  const Eigen::MatrixXd whole = causal_attention(h.Q(), h.K(), 0.7, window);
  for_each_attention_block(
      h.Q(), h.K(), 0.7, block,
      [&](int first, const Eigen::MatrixXd& probs) {
        for (int r = 0; r < probs.rows(); ++r) {
          const int i = first + r, from = first_visible_key(i, window);
          RC_ASSERT(from == std::max(0, i - window + 1));
          const Eigen::VectorXd expected = windowed_row_by_hand(h, i, 0.7, window);
          const Eigen::VectorXd row = attention_row(h.Q(), h.K(), i, 0.7, window);
          RC_ASSERT((row - expected).cwiseAbs().maxCoeff() <= T::sum(h.n * h.d));
          RC_ASSERT((probs.row(r).head(i + 1).transpose() - expected).cwiseAbs().maxCoeff() <= T::sum(h.n * h.d));
          RC_ASSERT((probs.row(r).head(from).array() == 0).all());  // masked keys: exactly 0
          RC_ASSERT((probs.row(r).tail(h.n - i - 1).array() == 0).all());
          RC_ASSERT(std::abs(probs.row(r).sum() - 1.0) <= T::sum(h.n));
          RC_ASSERT((whole.row(i) - probs.row(r)).cwiseAbs().maxCoeff() <= T::sum(h.n * h.d));
        }
      },
      window);
}

TEST(SlidingWindowAttention, AWindowOfAllTokensIsGlobalAndANegativeOneIsRefused) {
  Head h{6, 2, {}, {}, {}};
  for (int e = 0; e < 12; ++e) {
    h.q.push_back(float(e % 5) - 2.0f);
    h.k.push_back(float(e % 3) - 1.0f);
    h.v.push_back(1.0f);
  }
  EXPECT_EQ(causal_attention(h.Q(), h.K(), 0.5, 6), causal_attention(h.Q(), h.K(), 0.5));
  EXPECT_EQ(causal_attention(h.Q(), h.K(), 0.5, 0), causal_attention(h.Q(), h.K(), 0.5));
  EXPECT_NE(causal_attention(h.Q(), h.K(), 0.5, 5), causal_attention(h.Q(), h.K(), 0.5));
  EXPECT_EQ(attention_row(h.Q(), h.K(), 5, 0.5, 1), (Eigen::VectorXd(6) << 0, 0, 0, 0, 0, 1).finished());
  EXPECT_THROW(causal_attention(h.Q(), h.K(), 0.5, -1), std::invalid_argument);
  EXPECT_THROW(attention_row(h.Q(), h.K(), 2, 0.5, -1), std::invalid_argument);
}

TEST(TrackedAttention, RejectsAnEmptySetAndAMaskOfTheWrongLength) {
  Eigen::VectorXd logits = Eigen::VectorXd::Zero(3);
  EXPECT_THROW(tracked_attention(logits, {false, false, false}), std::invalid_argument);
  EXPECT_THROW(tracked_attention(logits, {true, true}), std::invalid_argument);
  EXPECT_THROW(retained_mass(logits, {true}), std::invalid_argument);
}

TEST(Metrics, SparsityCountsEntriesBelowTheRelativeThreshold) {
  Eigen::VectorXd a(5);
  a << 0.5, 0.004, 0.006, 0.3, 0.19;  // threshold 0.01 * 0.5 = 0.005: one entry below
  EXPECT_DOUBLE_EQ(sparsity(a, 0.01), 0.2);
  EXPECT_DOUBLE_EQ(sparsity(a, 0.0), 0.0);
  EXPECT_THROW(sparsity(a, 1.5), std::invalid_argument);
}

TEST(Metrics, OutputRelativeErrorDoesNotDivideByZero) {
  Eigen::VectorXd zero = Eigen::VectorXd::Zero(2), one = Eigen::VectorXd::Ones(2);
  EXPECT_DOUBLE_EQ(output_relative_error(zero, one), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(output_relative_error(one * 2, one), 0.5);
}

}  // namespace
}  // namespace subevict

namespace subevict {
namespace {

TEST(Softmax, UnderflowedWeightsAreExactlyZeroInEveryLane) {
  // 1 + 40 equal logits 709..760 below the maximum: exp underflows below a normal double there,
  // which Eigen's vectorised exp returns as ~5e-309 in some SIMD lanes and 0 in others. Equal
  // logits must get equal weights (the lowest-index tie rule depends on it): exactly 0.
  for (double gap : {708.5, 709.0, 720.0, 745.0, 760.0}) {
    Eigen::VectorXd logits = Eigen::VectorXd::Constant(41, -gap);
    logits[0] = 0;
    const Eigen::VectorXd a = softmax(logits);
    EXPECT_EQ(a[0], 1.0) << gap;
    for (Eigen::Index j = 1; j < a.size(); ++j) EXPECT_EQ(a[j], 0.0) << "gap " << gap << " entry " << j;
  }
  // Just above the threshold the weights are normal doubles, equal to each other.
  Eigen::VectorXd logits = Eigen::VectorXd::Constant(41, -708.0);
  logits[0] = 0;
  const Eigen::VectorXd a = softmax(logits);
  for (Eigen::Index j = 2; j < a.size(); ++j) EXPECT_EQ(a[j], a[1]);
  EXPECT_GT(a[1], 0.0);
}

}  // namespace
}  // namespace subevict
