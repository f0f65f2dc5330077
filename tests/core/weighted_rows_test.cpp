// Tests core/weighted_rows.hpp: both CPU paths against a long-double evaluation of rows^T W and
// against each other, within the stated bound, for every shape remainder of the AVX2 kernel.
#include "core/weighted_rows.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/tolerance.hpp"

namespace subevict {
namespace {

RC_GTEST_PROP(WeightedRows, BothPathsMatchTheDefinitionWithinTheBound, ()) {
  const int m = *rc::gen::inRange(0, 40), d = *rc::gen::inRange(1, 70), g = *rc::gen::inRange(1, 4);
  const auto entry =
      rc::gen::map(rc::gen::inRange(-1000, 1001), [](int x) { return double(x) / 97.0; });
  RowMatrixf rows(m + 3, d);  // 3 spare rows: the product reads a top block, as the simulator does
  Eigen::MatrixXd weights(m, g);
  for (Eigen::Index e = 0; e < rows.size(); ++e) rows.data()[e] = float(*entry);
  for (Eigen::Index e = 0; e < weights.size(); ++e) weights.data()[e] = *entry / 10.0;
  for (CpuPath path : {CpuPath::kPortable, CpuPath::kAvx2Fma}) {
    if (path == CpuPath::kAvx2Fma && !cpu_supports_avx2_fma()) continue;
    Eigen::MatrixXd out(d, g);
    weighted_rows(rows.topRows(m), weights, out, path);
    for (int h = 0; h < g; ++h) {
      for (int c = 0; c < d; ++c) {
        long double exact = 0, magnitude = 0;
        for (int e = 0; e < m; ++e) {
          exact += (long double)weights(e, h) * (long double)rows(e, c);
          magnitude += std::fabs((long double)weights(e, h) * (long double)rows(e, c));
        }
        RC_ASSERT(std::fabs(out(c, h) - double(exact)) <=
                  Tol<double>::sum(std::size_t(m)) * double(magnitude));
      }
    }
  }
}

TEST(WeightedRows, SumsTheWeightedRows) {
  RowMatrixf rows(3, 5);
  rows << 1, 2, 3, 4, 5, 10, 20, 30, 40, 50, 100, 200, 300, 400, 500;
  Eigen::MatrixXd weights(3, 2);
  weights << 1, 0, 0.5, 0, 0.25, 2;
  for (CpuPath path : {CpuPath::kPortable, CpuPath::kAvx2Fma}) {
    if (path == CpuPath::kAvx2Fma && !cpu_supports_avx2_fma()) continue;
    Eigen::MatrixXd out(5, 2);
    weighted_rows(rows, weights, out, path);
    for (int c = 0; c < 5; ++c) {
      EXPECT_EQ(out(c, 0), (c + 1) * (1 + 5 + 25.0)) << to_string(path);
      EXPECT_EQ(out(c, 1), (c + 1) * 200.0) << to_string(path);
    }
  }
}

TEST(WeightedRows, RejectsMismatchedSizes) {
  const RowMatrixf rows = RowMatrixf::Zero(3, 4);
  const Eigen::MatrixXd weights = Eigen::MatrixXd::Zero(2, 1);
  Eigen::MatrixXd out(4, 1);
  EXPECT_THROW(weighted_rows(rows, weights, out, CpuPath::kPortable), std::invalid_argument);
}

RC_GTEST_PROP(WeightedRows, GatheredRowsAreTheScalarFmaLoopBitForBitOnBothPaths, ()) {
  // Every remainder of the AVX2 kernel (dimensions past the last 8, queries past the last quad,
  // more rows than one chunk of 256), repeated and unsorted indices, zero weights, 1-3 threads.
  const int n = *rc::gen::inRange(1, 40), d = *rc::gen::inRange(1, 30), queries = *rc::gen::inRange(1, 10);
  const int count = *rc::gen::element(0, 1, 7, 300), threads = *rc::gen::inRange(1, 4);
  const auto entry =
      rc::gen::map(rc::gen::inRange(-1000, 1001), [](int x) { return double(x) / 97.0; });
  RowMatrixf rows(n, d);
  for (Eigen::Index e = 0; e < rows.size(); ++e) rows.data()[e] = float(*entry);
  std::vector<int> index(static_cast<std::size_t>(count));
  for (int& u : index) u = *rc::gen::inRange(0, n);
  RowMatrixd weights(queries, count);
  for (Eigen::Index e = 0; e < weights.size(); ++e) weights.data()[e] = *rc::gen::element(0, 1, 2) == 0 ? 0.0 : *entry / 10.0;
  for (CpuPath path : {CpuPath::kPortable, CpuPath::kAvx2Fma}) {
    if (path == CpuPath::kAvx2Fma && !cpu_supports_avx2_fma()) continue;
    RowMatrixd out(queries, d + 2);
    gathered_weighted_rows(rows, index, weights, out.leftCols(d), path, threads);
    for (int b = 0; b < queries; ++b) {
      for (int c = 0; c < d; ++c) {
        double acc = 0.0;
        for (int u = 0; u < count; ++u) acc = std::fma(weights(b, u), double(rows(index[std::size_t(u)], c)), acc);
        RC_ASSERT(std::memcmp(&acc, &out(b, c), sizeof(double)) == 0);
      }
    }
  }
}

TEST(WeightedRows, ZeroWeightsLeaveTheSumOverTheOtherRows) {
  // The simulator's blocked outputs rest on it: the rows of a subset, in ascending order, give the
  // same bits as every row with zeros outside the subset.
  RowMatrixf rows(5, 9);
  for (Eigen::Index e = 0; e < rows.size(); ++e) rows.data()[e] = float((e * 7919) % 101) / 7.0f - 6.0f;
  const std::vector<int> all = {0, 1, 2, 3, 4}, subset = {1, 3, 4};
  RowMatrixd full(1, 5), part(1, 3), a(1, 9), b(1, 9);
  full << 0.0, 0.25, 0.0, 1.0 / 3.0, 0.125;
  part << 0.25, 1.0 / 3.0, 0.125;
  for (CpuPath path : {CpuPath::kPortable, CpuPath::kAvx2Fma}) {
    if (path == CpuPath::kAvx2Fma && !cpu_supports_avx2_fma()) continue;
    gathered_weighted_rows(rows, all, full, a, path);
    gathered_weighted_rows(rows, subset, part, b, path);
    EXPECT_TRUE(a == b) << to_string(path);
  }
}

TEST(WeightedRows, GatheredRowsRejectBadInput) {
  const RowMatrixf rows = RowMatrixf::Zero(3, 4);
  const RowMatrixd weights = RowMatrixd::Zero(2, 2);
  RowMatrixd out(2, 4), wrong(2, 3);
  const std::vector<int> index = {0, 2}, outside = {0, 3};
  EXPECT_THROW(gathered_weighted_rows(rows, index, weights, wrong, CpuPath::kPortable), std::invalid_argument);
  EXPECT_THROW(gathered_weighted_rows(rows, outside, weights, out, CpuPath::kPortable), std::invalid_argument);
  EXPECT_THROW(gathered_weighted_rows(rows, index, weights, out, CpuPath::kPortable, 0), std::invalid_argument);
}

}  // namespace
}  // namespace subevict
