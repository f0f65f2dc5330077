// Tests greedy/attention_fidelity.hpp: the ∅ convention, agreement with core attention, the
// incremental state under adds and removes, and that it is not submodular.
#include "greedy/attention_fidelity.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <stdexcept>

#include "core/tolerance.hpp"
#include "random_instances.hpp"

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

RC_GTEST_PROP(AttentionFidelity, IncrementalGainsMatchScratchAfterAddsAndRemoves, ()) {
  const auto n = *rc::gen::inRange<std::size_t>(1, 8);
  // Logits up to ±30 spread the weights over 26 orders of magnitude: removes then cancel most
  // of the denominators, which the state must survive.
  const AttentionFidelity f = random_fidelity(n, *rc::gen::element(1.0, 30.0));
  testing::check_incremental_gains(f, Tol<double>::grad());
}

}  // namespace
}  // namespace subevict::greedy
