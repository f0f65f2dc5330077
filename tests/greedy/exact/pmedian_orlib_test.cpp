// External reference data: the exact p-median search (greedy/exact/pmedian_branch_and_bound.hpp)
// certifies the published optima of all 40 OR-Library instances pmed1..pmed40 (Beasley 1985,
// tests/data/orlib-pmed/pmedopt.txt). Labelled slow (about a minute in a Release build under load;
// the largest instances, n = 900, take seconds each, and reading one builds all-pairs distances).
#include <gtest/gtest.h>

#include <string>

#include "greedy/exact/pmedian_branch_and_bound.hpp"

namespace subevict::greedy {
namespace {

class PMedianOrLibraryAll : public ::testing::TestWithParam<int> {};

TEST_P(PMedianOrLibraryAll, CertifiesThePublishedOptimum) {
  const std::string dir = SUBEVICT_SOURCE_DIR "/tests/data/orlib-pmed";
  const std::string name = "pmed" + std::to_string(GetParam());
  const PMedianInstance instance = read_pmedian(dir + "/" + name + ".txt");
  const double published = read_pmedian_optima(dir + "/pmedopt.txt").at(name);
  const PMedianSearchResult result = pmedian_branch_and_bound(instance);
  EXPECT_TRUE(result.optimal);
  EXPECT_EQ(result.set.size(), instance.p);
  EXPECT_EQ(result.value, published);
  EXPECT_EQ(result.lower_bound, published);
  EXPECT_EQ(pmedian_value(instance, result.set), published);
}

INSTANTIATE_TEST_SUITE_P(OrLibrary, PMedianOrLibraryAll, ::testing::Range(1, 41));

}  // namespace
}  // namespace subevict::greedy
