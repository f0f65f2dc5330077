// Tests proofs_checks/static_greedy_checks.hpp: each check holds with the library's greedy and
// reports a violation for a deliberately wrong optimizer or tie rule.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <memory>
#include <numeric>

#include "core/tolerance.hpp"
#include "greedy/concave_over_modular.hpp"
#include "proofs_checks/static_greedy_checks.hpp"

namespace subevict::proofs_checks {
namespace {

/// f(S) = Σ_{j∈S} w_j with w = (0, 0, 0, 1, 1, 1): OPT_3 = 3, the first three elements are worth 0.
std::vector<GreedyInstance> worthless_prefix_instance() {
  auto f = std::make_shared<greedy::ConcaveOverModular>(std::vector<double>{0, 0, 0, 1, 1, 1},
                                                        greedy::Concave::kIdentity);
  return {{"modular", f, 3}};
}

/// A broken optimizer: the first k elements, whatever they are worth.
greedy::Selection first_k(const greedy::SetFunction& f, std::size_t k) {
  greedy::Selection s;
  s.set.resize(k);
  std::iota(s.set.begin(), s.set.end(), greedy::Element{0});
  s.value = f.evaluate(s.set);
  return s;
}

TEST(NwfBound, HeldWithTheLibraryGreedy) {
  const CheckResult r = check_nwf_bound(random_monotone_instances(4, 11), library_greedy);
  EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
  EXPECT_EQ(r.instances, 12);
  EXPECT_GE(r.worst_slack, 0.0);
  EXPECT_FALSE(r.counterexample.has_value());
}

RC_GTEST_PROP(NwfBound, HeldOnRandomInstancesWithTheLibraryGreedy, (std::uint64_t seed)) {
  const CheckResult r = check_nwf_bound(random_monotone_instances(1, seed), library_greedy);
  RC_ASSERT(r.outcome == Outcome::held);
  RC_ASSERT(r.worst_slack >= -Tol<double>::sum(10) * 10);
}

TEST(NwfBound, ViolatedByAnOptimizerThatIgnoresTheGains) {
  const CheckResult r = check_nwf_bound(worthless_prefix_instance(), first_k);
  EXPECT_EQ(r.outcome, Outcome::violated);
  ASSERT_TRUE(r.counterexample.has_value());
  // f(S) = 0 against (1 - (2/3)^3) * 3 = 19/9.
  EXPECT_TRUE(near(r.worst_slack, -19.0 / 9.0, Tol<double>::kValue)) << r.worst_slack;
}

TEST(NwfBound, ViolatedByAnOptimizerThatExceedsTheBudget) {
  const auto too_many = [](const greedy::SetFunction& f, std::size_t k) { return first_k(f, k + 1); };
  EXPECT_EQ(check_nwf_bound(worthless_prefix_instance(), too_many).outcome, Outcome::violated);
}

TEST(NwfTightness, GreedyAttainsTheFactorExactly) {
  const CheckResult r = check_nwf_tightness({2, 3, 4, 5}, greedy::TieTowards::kColumns, library_greedy);
  EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
  // theory.md §6: 6/8, 57/81, 700/1024, 10505/15625.
  const double expected[] = {6.0 / 8, 57.0 / 81, 700.0 / 1024, 10505.0 / 15625};
  for (int k = 2; k <= 5; ++k) {
    bool found = false;
    for (const Measurement& m : r.measurements) {
      if (m.name != "ratio_k" + std::to_string(k)) continue;
      found = true;
      EXPECT_TRUE(near(m.value, expected[k - 2], Tol<double>::kValue)) << k << ": " << m.value;
    }
    EXPECT_TRUE(found) << k;
  }
}

TEST(NwfTightness, ViolatedWhenTiesGoTowardsTheRows) {
  // Greedy then takes the rows and finds OPT on the tied family; the tie-free family still holds.
  const CheckResult r = check_nwf_tightness({2, 3, 4}, greedy::TieTowards::kRows, library_greedy);
  EXPECT_EQ(r.outcome, Outcome::violated);
  EXPECT_EQ(r.violations, 3);
  ASSERT_TRUE(r.counterexample.has_value());
}

TEST(CorollaryD18, HeldWithTheLibraryNoisyGreedy) {
  const CheckResult r =
      check_corollary_d18(random_monotone_instances(2, 5), {0.0, 0.05, 0.3}, 2, 9, library_noisy_greedy);
  EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
  EXPECT_EQ(r.instances, 6 * 3 * 2);
}

TEST(CorollaryD18, ViolatedByAnOptimizerThatIgnoresTheGains) {
  const auto broken = [](const greedy::SetFunction& f, std::size_t k, double, std::uint64_t) { return first_k(f, k); };
  const CheckResult r = check_corollary_d18(worthless_prefix_instance(), {0.0, 0.01}, 1, 1, broken);
  EXPECT_EQ(r.outcome, Outcome::violated);
  EXPECT_EQ(r.violations, 2);
  ASSERT_TRUE(r.counterexample.has_value());
}

}  // namespace
}  // namespace subevict::proofs_checks
