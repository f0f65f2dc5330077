// The one order check of greedy/eviction/evaluation/mass_order.hpp: every relation of
// policy <= OPT <= sum U <= n fails when broken beyond the slack, holds within it, and is skipped
// for a mass not computed.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "greedy/eviction/evaluation/mass_order.hpp"

namespace subevict::greedy {
namespace {

using Violations = std::vector<std::string>;

HeadMasses ordered() {
  HeadMasses m;
  m.policy_name = "h2o";
  m.policy = 40.0;
  m.optimum = 50.0;
  m.oracle = 60.0;
  m.tokens = 64.0;
  return m;
}

TEST(MassOrder, AnOrderedHeadHoldsAndEachBrokenRelationIsNamed) {
  const double slack = mass_order_slack(false);
  EXPECT_EQ(mass_order_violations(ordered(), slack), Violations{});
  HeadMasses m = ordered();
  m.policy = 50.1;
  EXPECT_EQ(mass_order_violations(m, slack), Violations{"h2o > OPT"});
  m = ordered();
  m.optimum = 60.5;
  EXPECT_EQ(mass_order_violations(m, slack), Violations{"OPT > sum U"});
  m = ordered();
  m.oracle = 64.5;
  EXPECT_EQ(mass_order_violations(m, slack), Violations{"sum U > n"});
  m = ordered();
  m.policy = 70.0;
  m.optimum = 65.0;  // both relations above n's side break
  EXPECT_EQ(mass_order_violations(m, slack), (Violations{"h2o > OPT", "OPT > sum U"}));
}

TEST(MassOrder, TheSlackIsRelativeToTheLargerSideAndTiedToThePrecision) {
  HeadMasses m = ordered();
  m.policy = 50.0 * (1.0 + 0.5e-9);  // within double's slack
  EXPECT_EQ(mass_order_violations(m, mass_order_slack(false)), Violations{});
  m.policy = 50.0 * (1.0 + 2e-9);  // beyond it
  EXPECT_EQ(mass_order_violations(m, mass_order_slack(false)), Violations{"h2o > OPT"});
  m.policy = 50.0 * (1.0 + 5e-6);  // an optimum on float gains may be this far below a double mass
  EXPECT_EQ(mass_order_violations(m, mass_order_slack(true)), Violations{});
  EXPECT_GT(mass_order_slack(true), 1e3 * mass_order_slack(false));
  // Below 1 the slack is absolute: masses near 0 are not held to a relative 1e-9.
  HeadMasses small;
  small.policy = 2e-10;
  small.optimum = 1e-10;
  EXPECT_EQ(mass_order_violations(small, mass_order_slack(false)), Violations{});
  EXPECT_THROW((void)mass_order_violations(ordered(), -1.0), std::invalid_argument);
}

TEST(MassOrder, AnIntervalChecksThePolicyAgainstItsUpperEndAndTheOracleAgainstItsLowerEnd) {
  HeadMasses m = ordered();
  m.optimum = 48.0;  // lower end
  m.optimum_upper = 52.0;
  m.policy = 51.0;  // above the lower end, below the certified bound: no violation
  EXPECT_EQ(mass_order_violations(m, mass_order_slack(false)), Violations{});
  m.policy = 53.0;
  EXPECT_EQ(mass_order_violations(m, mass_order_slack(false)), Violations{"h2o > OPT's certified upper bound"});
  m.policy = 40.0;
  m.oracle = 47.0;
  EXPECT_EQ(mass_order_violations(m, mass_order_slack(false)), Violations{"OPT's lower bound > sum U"});
}

TEST(MassOrder, AnOptimumsReplayMustEqualOptEitherWay) {
  HeadMasses m = ordered();
  m.policy_name = "opt";
  m.policy_is_optimum = true;
  m.policy = 50.0;
  EXPECT_EQ(mass_order_violations(m, mass_order_slack(false)), Violations{});
  m.policy = 49.0;  // below OPT: fine for a policy, wrong for the optimum's own schedule
  EXPECT_EQ(mass_order_violations(m, mass_order_slack(false)), Violations{"opt != OPT"});
  m.policy = 51.0;
  EXPECT_EQ(mass_order_violations(m, mass_order_slack(false)), Violations{"opt != OPT"});
}

TEST(MassOrder, MassesNotComputedAreNotChecked) {
  HeadMasses m;
  m.policy = 100.0;  // no optimum: nothing to hold it to
  m.tokens = 10.0;
  EXPECT_EQ(mass_order_violations(m, mass_order_slack(false)), Violations{});
  m.oracle = 11.0;  // the oracle is checked against n
  EXPECT_EQ(mass_order_violations(m, mass_order_slack(false)), Violations{"sum U > n"});
}

}  // namespace
}  // namespace subevict::greedy
