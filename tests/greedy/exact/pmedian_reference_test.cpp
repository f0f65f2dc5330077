// External reference data: branch and bound (with the Lagrangian bound) and CBC on the standard
// p-median integer program each reproduce the published optima of OR-Library pmed1..pmed10
// (Beasley 1985, tests/data/orlib-pmed/pmedopt.txt), and greedy's facility-location ratio
// f(S_greedy) / OPT on each is ≥ 1 − 1/e (the ratios are printed and recorded as test properties).
// Labelled slow: CBC needs tens of seconds on the n = 200 instances.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <numbers>

#include "greedy/exact/branch_and_bound.hpp"
#include "greedy/exact/facility_location_bound.hpp"
#include "greedy/exact/integer_program.hpp"
#include "greedy/optimizers/lazy_greedy.hpp"
#include "greedy/functions/pmedian.hpp"

namespace subevict::greedy {
namespace {

const std::string kDataDir = SUBEVICT_SOURCE_DIR "/tests/data/orlib-pmed";

class PMedianReference : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    instance_ = read_pmedian(kDataDir + "/" + GetParam() + ".txt");
    published_ = read_pmedian_optima(kDataDir + "/pmedopt.txt").at(GetParam());
  }
  /// The p-median value of a facility-location value: n·D − f.
  double pmedian_of(double f_value) const {
    return double(instance_.n) * max_distance(instance_) - f_value;
  }
  PMedianInstance instance_;
  double published_ = 0.0;
};

TEST_P(PMedianReference, BranchAndBoundReproducesThePublishedOptimum) {
  const FacilityLocation f = to_facility_location(instance_);
  FacilityLocationBound lagrangian(f);
  BranchAndBoundOptions options;
  options.node_bound = &lagrangian;
  options.pairwise_bound = false;
  options.initial_set = lazy_greedy(f, {instance_.p}).set;
  const Selection result = branch_and_bound(f, instance_.p, options);
  EXPECT_TRUE(result.optimal);
  EXPECT_EQ(result.set.size(), instance_.p);
  // Integer data: the values are exact in double.
  EXPECT_EQ(pmedian_of(result.value), published_);
  EXPECT_EQ(pmedian_value(instance_, result.set), published_);
}

TEST_P(PMedianReference, IntegerProgramReproducesThePublishedOptimum) {
  const FacilityLocation f = to_facility_location(instance_);
  const Selection result = facility_location_ip(f, instance_.p);
  EXPECT_TRUE(result.optimal);
  EXPECT_EQ(pmedian_of(result.value), published_);
}

TEST_P(PMedianReference, GreedyReachesOneMinusOneOverEOfTheOptimum) {
  const FacilityLocation f = to_facility_location(instance_);
  const Selection greedy = lazy_greedy(f, {instance_.p});
  const double opt = double(instance_.n) * max_distance(instance_) - published_;
  const double ratio = greedy.value / opt;
  RecordProperty("greedy_ratio", std::to_string(ratio));
  std::cout << GetParam() << ": greedy facility-location ratio " << ratio << " (p-median "
            << pmedian_of(greedy.value) << " vs " << published_ << ")\n";
  EXPECT_GE(ratio, 1.0 - 1.0 / std::numbers::e);
  EXPECT_LE(ratio, 1.0);
}

INSTANTIATE_TEST_SUITE_P(OrLibrary, PMedianReference,
                         ::testing::Values("pmed1", "pmed2", "pmed3", "pmed4", "pmed5", "pmed6",
                                           "pmed7", "pmed8", "pmed9", "pmed10"));

}  // namespace
}  // namespace subevict::greedy
