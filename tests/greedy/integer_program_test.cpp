// Tests greedy/integer_program.hpp: the CBC programs of facility location and weighted coverage
// against exhaustive enumeration on small random instances, and the time-limit status.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "core/tolerance.hpp"
#include "greedy/exhaustive.hpp"
#include "greedy/integer_program.hpp"
#include "random_instances.hpp"

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

}  // namespace
}  // namespace subevict::greedy
