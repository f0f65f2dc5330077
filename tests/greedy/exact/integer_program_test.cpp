// Tests greedy/exact/integer_program.hpp: the CBC programs of facility location and weighted coverage
// against exhaustive enumeration on small random instances, and the status when a node or time
// limit stops CBC before it proves optimality.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <random>

#include "core/tolerance.hpp"
#include "greedy/exact/branch_and_bound.hpp"
#include "greedy/exact/exhaustive.hpp"
#include "greedy/exact/integer_program.hpp"
#include "tests/greedy/random_instances.hpp"

namespace subevict::greedy {
namespace {

/// A random instance of `family` solved by `solve` (the program of its concrete type F) equals
/// exhaustive search.
template <class F>
void check_against_exhaustive(testing::Family family,
                              Selection (*solve)(const F&, std::size_t, const IntegerProgramOptions&)) {
  const auto n = *rc::gen::inRange<std::size_t>(1, 9);
  const auto f = testing::random_instance(family, n);
  const auto k = *rc::gen::inRange<std::size_t>(0, n + 1);
  const Selection ip = solve(dynamic_cast<const F&>(*f), k, {});
  const Selection opt = exhaustive_optimum(*f, {k});
  RC_ASSERT(ip.optimal);
  RC_ASSERT(ip.set.size() <= k);
  RC_ASSERT(near(ip.value, opt.value, Tol<double>::sum(n)));
}

RC_GTEST_PROP(IntegerProgram, FacilityLocationEqualsExhaustive, ()) {
  check_against_exhaustive<FacilityLocation>(testing::Family::kFacilityLocation,
                                             &facility_location_ip);
}

RC_GTEST_PROP(IntegerProgram, WeightedCoverageEqualsExhaustive, ()) {
  check_against_exhaustive<WeightedCoverage>(testing::Family::kCoverage, &weighted_coverage_ip);
}

TEST(IntegerProgram, ReportsTheSearchOnAKnownInstance) {
  // Greedy takes set 0 (weight 6), then gains 2 from either other set: 8. The optimum {1, 2}: 10.
  const WeightedCoverage f({3, 3, 2, 2}, {{0, 1}, {0, 2}, {1, 3}});
  const Selection ip = weighted_coverage_ip(f, 2);
  EXPECT_TRUE(ip.optimal);
  EXPECT_EQ(ip.set, (std::vector<Element>{1, 2}));
  EXPECT_EQ(ip.value, 10.0);
  EXPECT_EQ(ip.upper_bound, ip.value);
}

/// Max coverage with 40 sets of up to 12 of 150 items (integer weights 1..16), fixed by `seed`:
/// CBC needs branching to prove its optimum at k = 8 (the LP bound is above the optimum).
WeightedCoverage hard_coverage(unsigned seed) {
  std::mt19937 draw(seed);
  constexpr std::size_t kSets = 40, kUniverse = 150, kDraws = 12;
  std::vector<double> weights(kUniverse);
  for (double& w : weights) w = double(1 + draw() % 16);
  std::vector<std::vector<std::size_t>> sets(kSets);
  for (auto& set : sets) {
    for (std::size_t i = 0; i < kDraws; ++i) set.push_back(draw() % kUniverse);
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
  }
  return {weights, sets};
}

/// What a run stopped by a limit must satisfy, given the proven optimum `opt`: not marked optimal,
/// a set of at most k distinct elements whose value is f(set) (recomputed here), value ≤ OPT_k ≤
/// upper_bound. An empty set (CBC stopped before any incumbent) is a feasible answer too.
void check_stopped(const SetFunction& f, std::size_t k, const Selection& stopped, double opt) {
  EXPECT_FALSE(stopped.optimal);
  EXPECT_LE(stopped.set.size(), k);
  EXPECT_TRUE(std::is_sorted(stopped.set.begin(), stopped.set.end()));
  EXPECT_EQ(std::adjacent_find(stopped.set.begin(), stopped.set.end()), stopped.set.end());
  EXPECT_EQ(stopped.value, f.evaluate(stopped.set));
  EXPECT_LE(stopped.value, opt + Tol<double>::sum(f.ground_size()));
  EXPECT_GE(stopped.upper_bound, opt - Tol<double>::sum(f.ground_size()));
}

TEST(IntegerProgram, NodeLimitReturnsAFeasibleIncumbentAndAValidBound) {
  const WeightedCoverage f = hard_coverage(0);
  constexpr std::size_t k = 8;
  const Selection proven = weighted_coverage_ip(f, k);
  ASSERT_TRUE(proven.optimal);
  ASSERT_GT(proven.nodes, 1u);  // the instance needs branching, so small node limits bite
  // An independent proof of the optimum: branch and bound on the set function itself.
  const Selection bnb = branch_and_bound(f, k);
  ASSERT_TRUE(bnb.optimal);
  ASSERT_EQ(proven.value, bnb.value);
  // Node limits are independent of the machine's speed: every limit below the proof's node count
  // stops CBC without a proof, and some of them after it has an incumbent with a gap still open.
  bool saw_incumbent = false;
  for (int limit = 0; limit < int(proven.nodes); ++limit) {
    SCOPED_TRACE("max_nodes = " + std::to_string(limit));
    const Selection stopped = weighted_coverage_ip(f, k, {.max_nodes = limit});
    check_stopped(f, k, stopped, proven.value);
    EXPECT_LE(stopped.nodes, std::uint64_t(limit));
    if (!stopped.set.empty()) {
      saw_incumbent = true;
      EXPECT_GT(stopped.upper_bound, stopped.value);  // not proven: the bound gap is open
    }
  }
  EXPECT_TRUE(saw_incumbent);
}

TEST(IntegerProgram, TimeLimitStopsBeforeTheProof) {
  // The proof takes tens of milliseconds and many nodes; a microsecond elapses before CBC first
  // looks at its clock on any machine, so the limit is always hit.
  const WeightedCoverage coverage = hard_coverage(0);
  const Selection proven = weighted_coverage_ip(coverage, 8);
  ASSERT_TRUE(proven.optimal);
  check_stopped(coverage, 8, weighted_coverage_ip(coverage, 8, {.time_limit_seconds = 1e-6}),
                proven.value);

  std::mt19937 draw(1);
  Eigen::MatrixXd similarity(60, 30);
  for (Eigen::Index i = 0; i < similarity.size(); ++i) similarity.data()[i] = double(draw() % 1000) / 1000;
  const FacilityLocation facilities(similarity);
  const Selection fl_proven = facility_location_ip(facilities, 5);
  ASSERT_TRUE(fl_proven.optimal);
  ASSERT_GT(fl_proven.nodes, 0u);
  check_stopped(facilities, 5, facility_location_ip(facilities, 5, {.time_limit_seconds = 1e-6}),
                fl_proven.value);
  check_stopped(facilities, 5, facility_location_ip(facilities, 5, {.max_nodes = 0}), fl_proven.value);
}

}  // namespace
}  // namespace subevict::greedy
