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
}

TEST(CheckKinds, AMeasurementCarryingAVerdictCannotBeConcluded) {
  CheckResult r;
  r.instances = 3;
  r.violations = r.hypotheses_held = 1;
  EXPECT_THROW(conclude_measurement(r), std::logic_error);
  CheckResult empty;
  conclude_measurement(empty);
  EXPECT_EQ(empty.outcome, Outcome::inconclusive);  // nothing was measured
}

}  // namespace
}  // namespace subevict::proofs_checks
