// Tests core/cached_scores.hpp: the AVX2 scores equal the portable Eigen product bit for bit
// (the scores decide evictions), for every shape remainder and on both sides of Eigen's
// coefficient-based threshold.
#include "core/cached_scores.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstring>
#include <vector>

#include "core/exact_attention_rows.hpp"

namespace subevict {
namespace {

RC_GTEST_PROP(CachedScores, Avx2EqualsThePortableProductBitForBit, ()) {
  if (!cpu_supports_avx2_fma()) RC_DISCARD("no AVX2 + FMA on this CPU");
  const int m = *rc::gen::inRange(1, 70), d = *rc::gen::inRange(1, 140);
  const double magnitude = *rc::gen::element(1e-3, 1.0, 37.0, 1e4);
  const auto entry =
      rc::gen::map(rc::gen::inRange(-100000, 100001), [](int x) { return double(x) / 99991.0; });
  RowMatrixf keys_t(d, m + 2);  // 2 spare entries: the simulator passes the first m of its capacity
  Eigen::VectorXd query(d);
  for (Eigen::Index e = 0; e < keys_t.size(); ++e) keys_t.data()[e] = float(magnitude * *entry);
  for (Eigen::Index e = 0; e < d; ++e) query[e] = *entry;
  Eigen::VectorXd fast(m), portable(m);
  cached_scores(keys_t.leftCols(m), query, fast, CpuPath::kAvx2Fma);
  cached_scores(keys_t.leftCols(m), query, portable, CpuPath::kPortable);
  // The simulator's own expression: double copies of the keys (m x d) times a d x 1 matrix.
  const RowMatrixd doubles = keys_t.transpose().cast<double>();
  const Eigen::MatrixXd queries = query;
  Eigen::MatrixXd logits(m + 2, 1);
  logits.topRows(m).noalias() = doubles.topRows(m) * queries;
  for (int e = 0; e < m; ++e) {
    RC_ASSERT(std::memcmp(&fast[e], &portable[e], sizeof(double)) == 0);
    RC_ASSERT(std::memcmp(&fast[e], &logits(e, 0), sizeof(double)) == 0);
  }
}

RC_GTEST_PROP(CachedScores, TheBlockGivesEachQuerysScoresBitForBit, ()) {
  // Every remainder of the block kernel: entries past the last vector of 4, queries past the last
  // quad, odd d; key columns with a stride wider than m; 1 to 3 threads.
  const int m = *rc::gen::inRange(1, 70), d = *rc::gen::inRange(1, 140), count = *rc::gen::inRange(1, 11);
  const int threads = *rc::gen::inRange(1, 4);
  const auto entry =
      rc::gen::map(rc::gen::inRange(-100000, 100001), [](int x) { return double(x) / 99991.0; });
  RowMatrixf keys_t(d, m + 3);
  RowMatrixd queries(count, d);
  for (Eigen::Index e = 0; e < keys_t.size(); ++e) keys_t.data()[e] = float(37.0 * *entry);
  for (Eigen::Index e = 0; e < queries.size(); ++e) queries.data()[e] = *entry;
  for (CpuPath path : {CpuPath::kPortable, CpuPath::kAvx2Fma}) {
    if (path == CpuPath::kAvx2Fma && !cpu_supports_avx2_fma()) continue;
    RowMatrixd block(count, m + 1);
    cached_score_block(keys_t.leftCols(m), queries, block.leftCols(m), path, threads);
    for (int b = 0; b < count; ++b) {
      const Eigen::VectorXd query = queries.row(b).transpose();
      Eigen::VectorXd one(m);
      cached_scores(keys_t.leftCols(m), query, one, path);
      for (int e = 0; e < m; ++e) RC_ASSERT(std::memcmp(&block(b, e), &one[e], sizeof(double)) == 0);
    }
  }
}

TEST(CachedScores, TheKernelOrderIsEigensChoice) {
  // Below Eigen's threshold (d + m + 1 < 20) or with one entry the product goes coefficient by
  // coefficient; cached_scores_by_kernel says so, and the block keeps each side's bits.
  EXPECT_FALSE(cached_scores_by_kernel(1, 128));
  EXPECT_FALSE(cached_scores_by_kernel(5, 8));
  EXPECT_TRUE(cached_scores_by_kernel(2, 17));
  EXPECT_TRUE(cached_scores_by_kernel(12, 8));
}

TEST(CachedScores, ReproducesEigenInTheDefaultBuild) {
  // The default build targets baseline x86-64, where Eigen's double packets are SSE2 pairs.
#if defined(__x86_64__) && !defined(__AVX__)
  EXPECT_TRUE(avx2_scores_reproduce_eigen());
#else
  GTEST_SKIP() << "not a baseline x86-64 build";
#endif
}

TEST(CachedScores, RejectsMismatchedSizes) {
  const RowMatrixf keys_t = RowMatrixf::Zero(4, 3);
  const Eigen::VectorXd query = Eigen::VectorXd::Zero(5);
  Eigen::VectorXd scores(3);
  EXPECT_THROW(cached_scores(keys_t, query, scores, CpuPath::kPortable), std::invalid_argument);
  const RowMatrixd queries = RowMatrixd::Zero(2, 4);
  RowMatrixd block(2, 3), wrong(3, 3);
  EXPECT_THROW(cached_score_block(keys_t, queries, wrong, CpuPath::kPortable), std::invalid_argument);
  EXPECT_THROW(cached_score_block(keys_t, queries, block, CpuPath::kPortable, 0), std::invalid_argument);
}

}  // namespace
}  // namespace subevict
