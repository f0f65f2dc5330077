// Tests greedy/functions/attention_fidelity.hpp: the ∅ convention, agreement with core attention, the
// incremental state under adds and removes, and that it is not submodular.
#include "greedy/functions/attention_fidelity.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "core/tolerance.hpp"
#include "tests/greedy/random_instances.hpp"

namespace subevict::greedy {
namespace {

/// Random logits (rows × n) and values (n × d) with entries in [−scale, scale].
AttentionFidelity random_fidelity(std::size_t n, double scale) {
  const auto rows = *rc::gen::inRange<Eigen::Index>(1, 4);
  const auto d = *rc::gen::inRange<Eigen::Index>(1, 4);
  const auto entry = [scale] { return scale * *rc::gen::inRange(-1000, 1001) / 1000.0; };
  Eigen::MatrixXd logits(rows, Eigen::Index(n));
  Eigen::MatrixXd values(Eigen::Index(n), d);
  for (Eigen::Index i = 0; i < logits.size(); ++i) logits.data()[i] = entry();
  for (Eigen::Index i = 0; i < values.size(); ++i) values.data()[i] = 1.0 + entry();
  return {logits, values};
}

TEST(AttentionFidelity, EmptySetOutputsZeroAndTheFullSetIsExact) {
  // One query, two keys with logits 0 and log 3: weights 1/4 and 3/4; values 4 and 8: o = 7.
  Eigen::MatrixXd logits(1, 2);
  logits << 0.0, std::log(3.0);
  Eigen::MatrixXd values(2, 1);
  values << 4.0, 8.0;
  const AttentionFidelity f(logits, values);
  EXPECT_TRUE(near(f.evaluate({}), -49.0, Tol<double>::kValue));
  const std::vector<Element> all{0, 1};
  const std::vector<Element> first{0};
  EXPECT_TRUE(near(f.evaluate(all), 0.0, Tol<double>::kValue));
  EXPECT_TRUE(near(f.evaluate(first), -9.0, Tol<double>::kValue));  // õ = 4
  auto state = f.empty_state();
  EXPECT_TRUE(near(state->value(), -49.0, Tol<double>::kValue));
  EXPECT_TRUE(near(state->gain(1), 48.0, Tol<double>::kValue));  // õ = 8: −1 − (−49)
}

TEST(AttentionFidelity, RejectsMismatchedShapesAndNonFiniteEntries) {
  EXPECT_THROW(AttentionFidelity(Eigen::MatrixXd::Zero(1, 3), Eigen::MatrixXd::Zero(2, 1)),
               std::invalid_argument);
  Eigen::MatrixXd logits = Eigen::MatrixXd::Zero(1, 2);
  logits(0, 1) = std::numeric_limits<double>::infinity();
  EXPECT_THROW(AttentionFidelity(logits, Eigen::MatrixXd::Zero(2, 1)), std::invalid_argument);
}

/// f(S) computed from its definition with plain loops, independently of the class and of core
/// attention: per query row i, õ_i(S) = Σ_{j∈S} e^{l_ij} v_j / Σ_{j∈S} e^{l_ij} (0 for S = ∅) and
/// o_i = õ_i(V); f(S) = −Σ_i ‖o_i − õ_i(S)‖². `members` is a bit mask over the n keys.
double fidelity_by_definition(const Eigen::MatrixXd& logits, const Eigen::MatrixXd& values,
                              unsigned members) {
  const auto output = [&](Eigen::Index i, unsigned mask) {
    std::vector<double> numerator(std::size_t(values.cols()), 0.0);
    double denominator = 0.0;
    for (Eigen::Index j = 0; j < logits.cols(); ++j) {
      if ((mask >> j & 1u) == 0) continue;
      const double weight = std::exp(logits(i, j));
      denominator += weight;
      for (Eigen::Index c = 0; c < values.cols(); ++c) numerator[std::size_t(c)] += weight * values(j, c);
    }
    for (double& x : numerator) x = denominator > 0 ? x / denominator : 0.0;
    return numerator;
  };
  const unsigned all = (1u << logits.cols()) - 1;
  double total = 0.0;
  for (Eigen::Index i = 0; i < logits.rows(); ++i) {
    const std::vector<double> exact = output(i, all), approx = output(i, members);
    for (std::size_t c = 0; c < exact.size(); ++c) total += (exact[c] - approx[c]) * (exact[c] - approx[c]);
  }
  return -total;
}

std::vector<Element> elements_of(unsigned mask, std::size_t n) {
  std::vector<Element> set;
  for (std::size_t j = 0; j < n; ++j) {
    if (mask >> j & 1u) set.push_back(j);
  }
  return set;
}

TEST(AttentionFidelity, IsNotSubmodular) {
  // One query with equal logits over three keys with values 1, −1, 0: o = 0 and õ(S) is the mean
  // of the values in S, so f(S) = −mean(S)² and f(∅) = 0. Adding key 1 (value −1) to A = {2}
  // moves the mean from 0 to −1/2: Δ(1|A) = −1/4; adding it to B = {0, 2} moves the mean from 1/2
  // to 0: Δ(1|B) = +1/4 > Δ(1|A) although A ⊆ B.
  Eigen::MatrixXd logits = Eigen::MatrixXd::Zero(1, 3);
  Eigen::MatrixXd values(3, 1);
  values << 1.0, -1.0, 0.0;
  const AttentionFidelity f(logits, values);
  constexpr std::size_t n = 3;
  constexpr double kTol = Tol<double>::kValue;
  std::vector<double> value(1u << n);
  for (unsigned s = 0; s < value.size(); ++s) {
    value[s] = fidelity_by_definition(logits, values, s);
    ASSERT_TRUE(near(f.evaluate(elements_of(s, n)), value[s], kTol)) << "set mask " << s;
  }
  EXPECT_TRUE(near(value[0b100], 0.0, kTol));     // f({2}) = −0²
  EXPECT_TRUE(near(value[0b110], -0.25, kTol));   // f({1, 2}) = −(−1/2)²
  EXPECT_TRUE(near(value[0b101], -0.25, kTol));   // f({0, 2}) = −(1/2)²
  EXPECT_TRUE(near(value[0b111], 0.0, kTol));     // f(V) = 0
  // Exhaustive search over every A ⊆ B and x ∉ B for the largest violation Δ(x|B) − Δ(x|A) of
  // submodularity (Δ(x|A) ≥ Δ(x|B) for submodular functions), over all A and over A ≠ ∅.
  double worst = -std::numeric_limits<double>::infinity();
  double worst_nonempty = worst;
  for (unsigned b = 0; b < value.size(); ++b) {
    for (unsigned a = b;; a = (a - 1) & b) {  // every subset a of b
      for (unsigned x = 0; x < n; ++x) {
        if (b >> x & 1u) continue;
        const double excess = (value[b | 1u << x] - value[b]) - (value[a | 1u << x] - value[a]);
        worst = std::max(worst, excess);
        if (a != 0) worst_nonempty = std::max(worst_nonempty, excess);
      }
      if (a == 0) break;
    }
  }
  // Overall: Δ(0|{1}) − Δ(0|∅) = (0 − (−1)) − (−1 − 0) = 2; with A ≠ ∅ the triple above, 1/2.
  EXPECT_TRUE(near(worst, 2.0, kTol)) << worst;
  EXPECT_TRUE(near(worst_nonempty, 0.5, kTol)) << worst_nonempty;
  // The triple above is a violation of exactly that size, seen through the incremental state too.
  auto at_a = f.empty_state();
  at_a->add(2);
  auto at_b = at_a->clone();
  at_b->add(0);
  EXPECT_TRUE(near(at_a->gain(1), -0.25, kTol));
  EXPECT_TRUE(near(at_b->gain(1), 0.25, kTol));
}

RC_GTEST_PROP(AttentionFidelity, IncrementalGainsMatchScratchAfterAddsAndRemoves, ()) {
  const auto n = *rc::gen::inRange<std::size_t>(1, 8);
  // Logits up to ±30 spread the weights over 26 orders of magnitude: removes then cancel most
  // of the denominators, which the state must survive.
  const AttentionFidelity f = random_fidelity(n, *rc::gen::element(1.0, 30.0));
  testing::check_incremental_gains(f, Tol<double>::grad());
}

}  // namespace
}  // namespace subevict::greedy
