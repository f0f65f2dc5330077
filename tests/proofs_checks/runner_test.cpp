// Tests proofs_checks/runner.hpp: checks run in order, are timed, and a check that throws, or
// whose outcome its kind does not allow (a measurement reporting "held"), is recorded as an error
// without stopping the others.
#include <gtest/gtest.h>

#include <stdexcept>

#include "proofs_checks/function_check.hpp"
#include "proofs_checks/runner.hpp"

namespace subevict::proofs_checks {
namespace {

CheckInfo info(const std::string& id, Kind kind = Kind::claim) {
  return {id, "ref", "statement", "h", "c", {"random small"}, "source.cpp", kind};
}

TEST(Runner, RecordsErrorsAndKeepsGoing) {
  const auto failing = make_check(info("test.throws"), [](const CheckContext&) -> CheckResult {
    throw std::runtime_error("instance generator broke");
  });
  const auto passing = make_check(info("test.holds"), [](const CheckContext& c) {
    CheckResult r;
    r.instances = r.hypotheses_held = static_cast<long long>(c.seed);
    conclude(r);
    return r;
  });
  CheckContext context;
  context.seed = 4;
  std::vector<std::string> seen;
  const auto runs = run_checks({failing.get(), passing.get()}, context,
                               [&](const CheckRun& run) { seen.push_back(run.info.id); });
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(seen, (std::vector<std::string>{"test.throws", "test.holds"}));
  EXPECT_EQ(runs[0].error, "instance generator broke");
  EXPECT_EQ(runs[0].result.outcome, Outcome::inconclusive);
  EXPECT_NE(runs[0].result.notes.find("instance generator broke"), std::string::npos);
  EXPECT_TRUE(runs[1].error.empty());
  EXPECT_EQ(runs[1].result.outcome, Outcome::held);
  EXPECT_EQ(runs[1].result.instances, 4);
  EXPECT_GE(runs[1].seconds, 0.0);
}

TEST(Runner, AMeasurementReportingAVerdictIsAnError) {
  // conclude() is a claim's verdict: held here, which a measurement may never report.
  const auto held = make_check(info("test.measured_as_held", Kind::measurement), [](const CheckContext&) {
    CheckResult r;
    r.instances = r.hypotheses_held = 5;
    conclude(r);
    return r;
  });
  const auto measured = make_check(info("test.measured", Kind::measurement), [](const CheckContext&) {
    CheckResult r;
    r.instances = 5;
    conclude_measurement(r);
    return r;
  });
  const auto claim_measured = make_check(info("test.claim_measured"), [](const CheckContext&) {
    CheckResult r;
    r.instances = 5;
    conclude_measurement(r);
    return r;
  });
  const auto runs = run_checks({held.get(), measured.get(), claim_measured.get()}, CheckContext{});
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].result.outcome, Outcome::inconclusive);
  EXPECT_NE(runs[0].error.find("test.measured_as_held is a measurement but reported \"held\""), std::string::npos)
      << runs[0].error;
  EXPECT_TRUE(runs[1].error.empty()) << runs[1].error;
  EXPECT_EQ(runs[1].result.outcome, Outcome::measured);
  EXPECT_EQ(runs[2].result.outcome, Outcome::inconclusive);
  EXPECT_NE(runs[2].error.find("is a claim but reported \"measured\""), std::string::npos) << runs[2].error;
}

TEST(CheckKinds, OutcomesEachKindMayReport) {
  for (Outcome o : {Outcome::held, Outcome::violated, Outcome::hypotheses_not_met, Outcome::inconclusive}) {
    EXPECT_TRUE(outcome_allowed(Kind::claim, o)) << outcome_name(o);
    EXPECT_TRUE(outcome_allowed(Kind::erratum, o)) << outcome_name(o);
  }
  EXPECT_FALSE(outcome_allowed(Kind::claim, Outcome::measured));
  EXPECT_FALSE(outcome_allowed(Kind::erratum, Outcome::measured));
  EXPECT_TRUE(outcome_allowed(Kind::measurement, Outcome::measured));
  EXPECT_TRUE(outcome_allowed(Kind::measurement, Outcome::inconclusive));
  for (Outcome o : {Outcome::held, Outcome::violated, Outcome::hypotheses_not_met})
    EXPECT_FALSE(outcome_allowed(Kind::measurement, o)) << outcome_name(o);
  EXPECT_STREQ(status_name(Kind::erratum, Outcome::held), "confirmed");
  EXPECT_STREQ(status_name(Kind::claim, Outcome::held), "held");
  EXPECT_STREQ(status_name(Kind::measurement, Outcome::measured), "measured");
  EXPECT_THROW(status_name(Kind::measurement, Outcome::held), std::invalid_argument);
  // vacuous: a claim's outcome only (an erratum is confirmed or not; a measurement has no bound).
  EXPECT_TRUE(outcome_allowed(Kind::claim, Outcome::vacuous));
  EXPECT_FALSE(outcome_allowed(Kind::erratum, Outcome::vacuous));
  EXPECT_FALSE(outcome_allowed(Kind::measurement, Outcome::vacuous));
  EXPECT_STREQ(status_name(Kind::claim, Outcome::vacuous), "vacuous");
}

TEST(CheckKinds, AClaimIsHeldOnlyWhereSomeInstanceCouldHaveFailed) {
  CheckResult all_vacuous;
  all_vacuous.instances = 4;
  all_vacuous.hypotheses_held = all_vacuous.vacuous = 3;
  conclude(all_vacuous);
  EXPECT_EQ(all_vacuous.outcome, Outcome::vacuous);
  EXPECT_EQ(all_vacuous.violation_rate.lower, 0.0);
  EXPECT_EQ(all_vacuous.violation_rate.upper, 1.0);  // nothing could fail: no rate
  CheckResult one_informative = all_vacuous;
  one_informative.vacuous = 2;
  conclude(one_informative);
  EXPECT_EQ(one_informative.outcome, Outcome::held);
  EXPECT_LT(one_informative.violation_rate.upper, 1.0);  // over the one instance that could fail
  CheckResult impossible = all_vacuous;
  impossible.violations = 1;  // a vacuous instance cannot fail
  EXPECT_THROW(conclude(impossible), std::invalid_argument);
  CheckResult none;
  none.instances = 2;
  conclude(none);
  EXPECT_EQ(none.outcome, Outcome::hypotheses_not_met);
}

TEST(CheckKinds, AMeasurementCarryingAVerdictCannotBeConcluded) {
  CheckResult r;
  r.instances = 3;
  r.violations = r.hypotheses_held = 1;
  EXPECT_THROW(conclude_measurement(r), std::logic_error);
  // Hypotheses held with no violation is a claim's "held" too; so is a vacuous count.
  CheckResult held_quietly;
  held_quietly.instances = held_quietly.hypotheses_held = 2;
  EXPECT_THROW(conclude_measurement(held_quietly), std::logic_error);
  held_quietly.outcome = Outcome::measured;
  EXPECT_THROW(require_consistent(info("test.quiet", Kind::measurement), held_quietly), std::logic_error);
  CheckResult vacuous_only;
  vacuous_only.instances = 2;
  vacuous_only.vacuous = 1;
  EXPECT_THROW(conclude_measurement(vacuous_only), std::logic_error);
  CheckResult empty;
  conclude_measurement(empty);
  EXPECT_EQ(empty.outcome, Outcome::inconclusive);  // nothing was measured
}

}  // namespace
}  // namespace subevict::proofs_checks

namespace subevict::proofs_checks {
namespace {

TEST(CheckKinds, AVerdictReportedAsAMeasurementKeepsItsNumbersAndDropsTheVerdict) {
  CheckResult claim;
  claim.instances = 4;
  claim.hypotheses_held = 3;
  claim.violations = 1;
  claim.worst_slack = -0.25;
  claim.counterexample = Counterexample{"step 7 of head 2", {}};
  claim.measurements = {{"min_gap", 0.5, "a number"}};
  conclude(claim);
  ASSERT_EQ(claim.outcome, Outcome::violated);
  const CheckResult m = verdict_as_measurement(claim);
  EXPECT_EQ(m.outcome, Outcome::measured);
  EXPECT_EQ(m.hypotheses_held, 0);
  EXPECT_EQ(m.violations, 0);
  EXPECT_FALSE(m.counterexample.has_value());
  EXPECT_EQ(measurement_value(m, "instances_with_hypotheses"), 3.0);
  EXPECT_EQ(measurement_value(m, "conclusion_failures"), 1.0);
  EXPECT_EQ(measurement_value(m, "worst_slack"), -0.25);
  EXPECT_EQ(measurement_value(m, "min_gap"), 0.5);
  EXPECT_NE(m.notes.find("step 7 of head 2"), std::string::npos);
  EXPECT_NO_THROW(require_consistent(info("test.as_measurement", Kind::measurement), m));
}

}  // namespace
}  // namespace subevict::proofs_checks
