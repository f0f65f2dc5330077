// Tests softmax_regression/hypotheses.hpp and instances.hpp: conforming instances meet every
// hypothesis, and each violating generator breaks exactly the one it names.
#include <gtest/gtest.h>

#include <map>

#include "softmax_regression/hypotheses.hpp"
#include "softmax_regression/instances.hpp"
#include "softmax_regression/newton.hpp"

namespace subevict::softmax_regression {
namespace {

std::map<std::string, HypothesisCheck> checks_of(const Instance& inst,
                                                 const std::optional<Vector>& x_star = {}) {
  std::map<std::string, HypothesisCheck> out;
  for (const HypothesisCheck& c : check_hypotheses(inst.problem, inst.x0, inst.parameters, x_star)) {
    out[c.id] = c;
  }
  return out;
}

InstanceSpec spec_with(Violation v) {
  InstanceSpec spec;
  spec.n = 100;
  spec.d = 6;
  spec.seed = 4;
  spec.violation = v;
  return spec;
}

TEST(Hypotheses, ConformingInstanceMeetsEveryStaticHypothesis) {
  const Instance inst = make_instance(spec_with(Violation::kNone));
  for (const auto& [id, c] : checks_of(inst)) EXPECT_TRUE(c.holds) << describe(c);
  EXPECT_NEAR(inst.problem.b.lpNorm<1>(), 0.9, 1e-12);
  EXPECT_NEAR(singular_value_range(inst.problem.A).max, 1.0, 1e-12);
}

TEST(Hypotheses, EachViolationBreaksExactlyItsHypothesis) {
  const std::map<Violation, std::string> expected = {{Violation::kNormA, "norm_A"},
                                                     {Violation::kNegativeB, "b_nonnegative"},
                                                     {Violation::kMassB, "b_mass"},
                                                     {Violation::kWeakW, "w_condition"}};
  for (const auto& [v, id] : expected) {
    const auto checks = checks_of(make_instance(spec_with(v)));
    for (const auto& [name, c] : checks) {
      EXPECT_EQ(c.holds, name != id) << to_string(v) << ": " << describe(c);
    }
  }
}

TEST(Hypotheses, StartNeighbourhoodUsesXStar) {
  const Instance far = make_instance(spec_with(Violation::kFarStart));
  const Summary s = newton(far.problem, LossKind::kFull, far.x0);
  ASSERT_EQ(s.status, Status::kConverged);
  const auto at_far = checks_of(far, s.x);
  EXPECT_FALSE(at_far.at("start_neighbourhood").holds);
  EXPECT_TRUE(at_far.at("norm_x_star").holds);
  Instance exact = far;
  exact.x0 = s.x;
  EXPECT_TRUE(checks_of(exact, s.x).at("start_neighbourhood").holds);
  EXPECT_NE(describe(at_far.at("start_neighbourhood")).find("violated"), std::string::npos);
}

TEST(Instances, AreDeterministicInTheSeed) {
  const Instance a = make_instance(spec_with(Violation::kNone));
  const Instance b = make_instance(spec_with(Violation::kNone));
  EXPECT_EQ(a.problem.A, b.problem.A);
  EXPECT_EQ(a.problem.w, b.problem.w);
  EXPECT_EQ(parse_violation("weak_w"), Violation::kWeakW);
  EXPECT_THROW(parse_violation("nope"), std::exception);
}

}  // namespace
}  // namespace subevict::softmax_regression
