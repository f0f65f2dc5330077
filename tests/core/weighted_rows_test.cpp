// Tests core/weighted_rows.hpp: both CPU paths against a long-double evaluation of rows^T W and
// against each other, within the stated bound, for every shape remainder of the AVX2 kernel.
#include "core/weighted_rows.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
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

}  // namespace
}  // namespace subevict
