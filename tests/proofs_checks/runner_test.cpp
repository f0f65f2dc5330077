// Tests proofs_checks/runner.hpp: checks run in order, are timed, and a check that throws is
// recorded as an error without stopping the others.
#include <gtest/gtest.h>

#include <stdexcept>

#include "proofs_checks/function_check.hpp"
#include "proofs_checks/runner.hpp"

namespace subevict::proofs_checks {
namespace {

CheckInfo info(const std::string& id) { return {id, "ref", "statement", "h", "c", {"random small"}, "source.cpp"}; }

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

}  // namespace
}  // namespace subevict::proofs_checks
