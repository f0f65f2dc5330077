// Tests greedy/functions/pmedian.hpp: parsing (duplicate edges, blank lines) and errors naming file and
// line, shortest paths against a hand-computed graph and against brute-force relaxation,
// f(S) = n·D − pmedian(S), and the published optima table.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "tests/core/io_test_support.hpp"
#include "core/tolerance.hpp"
#include "greedy/exact/branch_and_bound.hpp"
#include "greedy/exact/facility_location_bound.hpp"
#include "greedy/functions/pmedian.hpp"

namespace subevict::greedy {
namespace {

const std::string kDataDir = SUBEVICT_SOURCE_DIR "/tests/data/orlib-pmed";

std::string write_text(subevict::testing::ScratchDir& scratch, const std::string& text) {
  const std::string path = scratch.unique(".txt");
  std::ofstream(path) << text;
  return path;
}

TEST(PMedian, ReadsAPathGraphWhereTheLastDuplicateEdgeCounts) {
  subevict::testing::ScratchDir scratch;
  // 1 -2- 2 -3- 3 -4- 4 (the first 1-2 edge of cost 9 is overridden), plus a long edge 1-4.
  const std::string path =
      write_text(scratch, " 4 5 2 \n 1 2 9\n\n 2 3 3\n 3 4 4\n 1 4 20\n 2 1 2\n");
  const PMedianInstance instance = read_pmedian(path);
  EXPECT_EQ(instance.n, 4u);
  EXPECT_EQ(instance.p, 2u);
  Eigen::MatrixXd expected(4, 4);
  expected << 0, 2, 5, 9,  //
      2, 0, 3, 7,          //
      5, 3, 0, 4,          //
      9, 7, 4, 0;
  EXPECT_EQ(instance.distance, expected);
  EXPECT_EQ(max_distance(instance), 9.0);
  EXPECT_EQ(pmedian_value(instance, std::vector<Element>{1, 3}), 2.0 + 0 + 3 + 0);
  const FacilityLocation f = to_facility_location(instance);
  for (const std::vector<Element>& s : {std::vector<Element>{0}, {1, 3}, {0, 2}, {0, 1, 2, 3}}) {
    EXPECT_EQ(f.evaluate(s), 4 * 9.0 - pmedian_value(instance, s));
  }
}

TEST(PMedian, ErrorsNameTheFileAndTheLine) {
  subevict::testing::ScratchDir scratch;
  const std::vector<std::pair<std::string, std::string>> cases{
      {"", "line 1"},
      {"3 1\n", "line 1"},
      {"3 1 4\n1 2 1\n", "line 1"},        // p > n
      {"3 2 1\n1 2 1\n2 x 1\n", "line 3"},  // non-numeric vertex
      {"3 2 1\n1 2 1\n2 4 1\n", "line 3"},  // vertex out of range
      {"3 2 1\n1 2 1\n2 3 -1\n", "line 3"},  // negative cost
      {"3 2 1\n1 2 1\n2 3 1 7\n", "line 3"},  // extra field
      {"3 2 1\n1 2 1\n", "end of file"},     // missing edge
      {"3 2 1\n1 2 1\n2 3 1\n1 3 1\n", "line 4"},  // extra edge
      {"3 1 1\n1 2 1\n", "connected"},
  };
  for (const auto& [text, where] : cases) {
    const std::string path = write_text(scratch, text);
    try {
      (void)read_pmedian(path);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(path), std::string::npos) << message;
      EXPECT_NE(message.find(where), std::string::npos) << message;
    }
  }
  EXPECT_THROW((void)read_pmedian(scratch.path("missing.txt")), InputError);
}

RC_GTEST_PROP(PMedian, FloydWarshallMatchesRepeatedRelaxation, ()) {
  const auto n = *rc::gen::inRange(1, 8);
  Eigen::MatrixXd direct = Eigen::MatrixXd::Constant(n, n, std::numeric_limits<double>::infinity());
  direct.diagonal().setZero();
  const auto edges = *rc::gen::inRange(0, 3 * n);
  for (int e = 0; e < edges; ++e) {
    const int i = *rc::gen::inRange(0, n), j = *rc::gen::inRange(0, n);
    if (i == j) continue;
    direct(i, j) = direct(j, i) = *rc::gen::inRange(0, 20);
  }
  Eigen::MatrixXd fw = direct;
  floyd_warshall(fw);
  // Bellman–Ford style: relax every pair through every vertex n times.
  Eigen::MatrixXd bf = direct;
  for (int round = 0; round < n; ++round) {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        for (int v = 0; v < n; ++v) bf(i, j) = std::min(bf(i, j), bf(i, v) + direct(v, j));
      }
    }
  }
  RC_ASSERT(fw == bf);
}

TEST(PMedian, ReadsThePublishedOptimaAndTheFirstInstance) {
  const auto optima = read_pmedian_optima(kDataDir + "/pmedopt.txt");
  EXPECT_EQ(optima.size(), 40u);
  EXPECT_EQ(optima.at("pmed1"), 5819.0);
  EXPECT_EQ(optima.at("pmed40"), 5128.0);
  const PMedianInstance instance = read_pmedian(kDataDir + "/pmed1.txt");
  EXPECT_EQ(instance.n, 100u);
  EXPECT_EQ(instance.p, 5u);
  EXPECT_TRUE(instance.distance.isApprox(instance.distance.transpose()));
  // The fast check of the reference data (pmedian_reference_test covers pmed1..pmed10).
  const FacilityLocation f = to_facility_location(instance);
  FacilityLocationBound lagrangian(f);
  BranchAndBoundOptions options;
  options.node_bound = &lagrangian;
  const Selection result = branch_and_bound(f, instance.p, options);
  EXPECT_TRUE(result.optimal);
  EXPECT_EQ(pmedian_value(instance, result.set), optima.at("pmed1"));
}

TEST(PMedian, OptimaTableErrorsNameTheLine) {
  subevict::testing::ScratchDir scratch;
  const std::string path = write_text(scratch, "Data file   Optimal\npmed1 5\npmed1 6\n");
  try {
    (void)read_pmedian_optima(path);
    ADD_FAILURE() << "accepted a repeated name";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace subevict::greedy
