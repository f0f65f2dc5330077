// Tests greedy/functions/facility_location.hpp: the value on a hand-computed matrix, incremental gains
// against scratch evaluations after random adds and removes (ties and removals of a client's best
// member included), the .npy and attention constructors, and the validation of bad input.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "tests/core/io_test_support.hpp"
#include "core/attention.hpp"
#include "core/npy.hpp"
#include "core/tolerance.hpp"
#include "greedy/functions/facility_location.hpp"
#include "tests/greedy/random_instances.hpp"

namespace subevict::greedy {
namespace {

Eigen::MatrixXd three_by_three() {
  Eigen::MatrixXd sim(3, 3);
  sim << 3, 1, 0,  //
      0, 2, 2,     //
      1, 1, 4;
  return sim;
}

TEST(FacilityLocation, SumsEachClientsBestMember) {
  const FacilityLocation f(three_by_three());
  EXPECT_EQ(f.ground_size(), 3u);
  EXPECT_EQ(f.clients(), 3u);
  EXPECT_EQ(f.evaluate({}), 0.0);
  EXPECT_EQ(f.evaluate(std::vector<Element>{0}), 4.0);
  EXPECT_EQ(f.evaluate(std::vector<Element>{0, 2}), 3.0 + 2.0 + 4.0);
  EXPECT_EQ(f.evaluate(std::vector<Element>{0, 1, 2}), 9.0);
  auto state = f.empty_state();
  state->add(2);
  EXPECT_EQ(state->value(), 6.0);
  EXPECT_EQ(state->gain(0), 3.0);  // client 0 rises from 0 to 3
  EXPECT_EQ(state->gain(1), 1.0);
  state->add(0);
  state->remove(2);  // clients 1 and 2 lose their best member and fall back to element 0
  EXPECT_EQ(state->value(), 4.0);
}

RC_GTEST_PROP(FacilityLocation, IncrementalGainsMatchScratchAfterAddsAndRemoves, ()) {
  const auto n = *rc::gen::inRange<std::size_t>(1, 9);
  const auto f = testing::random_instance(testing::Family::kFacilityLocation, n);
  testing::check_incremental_gains(*f, Tol<double>::sum(n));
}

TEST(FacilityLocation, RejectsNegativeNonFiniteAndEmptyMatrices) {
  Eigen::MatrixXd sim = three_by_three();
  sim(1, 2) = -0.5;
  EXPECT_THROW(FacilityLocation{sim}, std::invalid_argument);
  sim(1, 2) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(FacilityLocation{sim}, std::invalid_argument);
  EXPECT_THROW(FacilityLocation{Eigen::MatrixXd(0, 3)}, std::invalid_argument);
}

TEST(FacilityLocation, ReadsNpyRowsAsClients) {
  subevict::testing::ScratchDir scratch;
  const std::string path = scratch.path("sim.npy");
  // 2 clients x 3 candidates, row-major in the file.
  write_npy(path, Tensor<float>{{2, 3}, {1, 0, 2, 0, 3, 1}});
  const FacilityLocation f = FacilityLocation::from_npy(path);
  EXPECT_EQ(f.ground_size(), 3u);
  EXPECT_EQ(f.clients(), 2u);
  EXPECT_EQ(f.evaluate(std::vector<Element>{2}), 3.0);
  EXPECT_EQ(f.evaluate(std::vector<Element>{0, 1}), 4.0);
}

TEST(FacilityLocation, NpyErrorsNameTheFile) {
  subevict::testing::ScratchDir scratch;
  const std::string vector = scratch.path("vector.npy");
  write_npy(vector, Tensor<double>{{3}, {1, 2, 3}});
  const std::string negative = scratch.path("negative.npy");
  write_npy(negative, Tensor<double>{{1, 2}, {1, -2}});
  const std::string nan = scratch.path("nan.npy");
  write_npy(nan, Tensor<double>{{1, 2}, {1, std::nan("")}});
  for (const std::string& path : {vector, negative, nan, scratch.path("missing.npy")}) {
    try {
      (void)FacilityLocation::from_npy(path);
      ADD_FAILURE() << path << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
}

TEST(FacilityLocation, FromAttentionUsesTheCausalAttentionMatrix) {
  const int n = 6, d = 4;
  RowMatrixf q(n, d), k(n, d);
  for (int i = 0; i < n * d; ++i) {
    q.data()[i] = float(std::sin(0.7 * i));
    k.data()[i] = float(std::cos(0.3 * i));
  }
  const ConstHeadMap qm(q.data(), n, d), km(k.data(), n, d);
  const FacilityLocation f = FacilityLocation::from_attention(qm, km, 0.5);
  const Eigen::MatrixXd a = causal_attention(qm, km, 0.5);
  EXPECT_EQ(f.similarity(), a);
  // Only key 0 is seen by every query: f({0}) = Σ_i a_i0.
  EXPECT_TRUE(near(f.evaluate(std::vector<Element>{0}), a.col(0).sum(), Tol<double>::kValue));
}

}  // namespace
}  // namespace subevict::greedy
