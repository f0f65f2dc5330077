// Tests core/causal_weight_tiles.hpp: every tile entry of both CPU paths against an independent
// long-double evaluation of a_ij = exp(s_ij − L_i), within exact_rows_tolerance (relative 2 ·
// log_normalizer per weight), on heads that span several row blocks and key chunks, with ties and
// scores so spread that most weights underflow; exact zeros above the diagonal and past n.
#include "core/causal_weight_tiles.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "core/exact_attention_rows.hpp"
#include "core/tolerance.hpp"

namespace subevict {
namespace {

struct Head {
  int n, d;
  std::vector<float> q, k;
  ConstHeadMap Q() const { return {q.data(), n, d}; }
  ConstHeadMap K() const { return {k.data(), n, d}; }
};

/// Mostly short heads, one in four long enough to need two or three key chunks.
Head gen_head() {
  Head h;
  h.n = *rc::gen::weightedOneOf<int>({{3, rc::gen::inRange(1, 130)}, {1, rc::gen::inRange(380, 900)}});
  h.d = *rc::gen::inRange(1, 12);
  const float magnitude = *rc::gen::element(1e-3f, 0.5f, 2.0f, 1e3f);
  const auto entry = rc::gen::map(rc::gen::inRange(-1000, 1001),
                                  [magnitude](int x) { return magnitude * float(x) / 1000.f; });
  h.q = *rc::gen::container<std::vector<float>>(std::size_t(h.n) * h.d, entry);
  h.k = *rc::gen::container<std::vector<float>>(std::size_t(h.n) * h.d, entry);
  if (*rc::gen::arbitrary<bool>()) {  // ties: every key a copy of one of the first two
    for (int j = 2; j < h.n; ++j)
      for (int p = 0; p < h.d; ++p) h.k[std::size_t(j) * h.d + p] = h.k[std::size_t(j % 2) * h.d + p];
  }
  return h;
}

/// Row i's weights from the definition in long double.
std::vector<long double> reference_row(const Head& h, int i, double scale) {
  std::vector<long double> s(std::size_t(i + 1));
  long double top = -std::numeric_limits<long double>::infinity(), sum = 0;
  for (int j = 0; j <= i; ++j) {
    long double dot = 0;
    for (int p = 0; p < h.d; ++p) dot += (long double)h.q[std::size_t(i) * h.d + p] * h.k[std::size_t(j) * h.d + p];
    s[j] = scale * dot;
    top = std::max(top, s[j]);
  }
  for (long double& x : s) sum += (x = std::exp(x - top));
  for (long double& x : s) x /= sum;
  return s;
}

/// The tiles of h, with the normalizers computed by the pass or (given) by exact_attention_rows.
CausalWeightTiles make_tiles(const Head& h, double scale, CpuPath path, bool given) {
  if (!given) return CausalWeightTiles(h.Q(), h.K(), scale, 2, path);
  // The values do not enter L_i: the keys serve.
  return CausalWeightTiles(h.Q(), h.K(), scale, exact_attention_rows(h.Q(), h.K(), h.K(), scale, path).log_normalizer,
                           path);
}

void check_tiles(const Head& h, double scale, CpuPath path, bool given = false) {
  const CausalWeightTiles tiles = make_tiles(h, scale, path, given);
  const double relative = 2.0 * exact_rows_tolerance(h.n, h.d, score_magnitude(h.Q(), h.K(), scale)).log_normalizer;
  constexpr int kRows = CausalWeightTiles::kRowBlock, kKeys = CausalWeightTiles::kKeyChunk;
  std::vector<double> scratch, out(std::size_t(kRows) * kKeys);
  for (int first_row = 0; first_row < h.n; first_row += kRows) {
    std::vector<std::vector<long double>> rows;
    for (int r = 0; r < kRows && first_row + r < h.n; ++r) rows.push_back(reference_row(h, first_row + r, scale));
    for (int first_key = 0; first_key < h.n; first_key += kKeys) {
      tiles.tile(first_row, first_key, scratch, out.data());
      for (int c = 0; c < kKeys; ++c) {
        for (int r = 0; r < kRows; ++r) {
          const int i = first_row + r, j = first_key + c;
          const double got = out[std::size_t(c) * kRows + r];
          if (i >= h.n || j >= h.n || j > i) {
            RC_ASSERT(got == 0.0);
            continue;
          }
          const long double want = rows[r][j];
          RC_ASSERT(got <= 1.0);
          RC_ASSERT(std::abs(got - want) <= relative * want + 4 * DBL_MIN);
          RC_ASSERT(std::abs(tiles.weight(i, j) - want) <= relative * want + 4 * DBL_MIN);
        }
      }
    }
  }
}

RC_GTEST_PROP(CausalWeightTiles, PortableTilesMatchTheDefinition, ()) {
  const Head h = gen_head();
  check_tiles(h, 1.0 / std::sqrt(double(h.d)), CpuPath::kPortable);
}

RC_GTEST_PROP(CausalWeightTiles, Avx2TilesMatchTheDefinition, ()) {
  if (!cpu_supports_avx2_fma()) RC_DISCARD("no AVX2 + FMA on this CPU");
  const Head h = gen_head();
  check_tiles(h, 1.0 / std::sqrt(double(h.d)), CpuPath::kAvx2Fma);
}

RC_GTEST_PROP(CausalWeightTiles, GivenNormalizersOfTheExactRowsGiveTheSameWeights, ()) {
  // The simulator's exact rows hand their L_i to the streamed optimum's tiles (no second pass).
  const Head h = gen_head();
  for (CpuPath path : {CpuPath::kPortable, CpuPath::kAvx2Fma}) {
    if (path == CpuPath::kAvx2Fma && !cpu_supports_avx2_fma()) continue;
    check_tiles(h, 1.0 / std::sqrt(double(h.d)), path, true);
  }
}

/// column_sums of h from a row drawn in [0, n] against the long-double definition: within the
/// weights' relative bound plus the sum's own rounding (gamma(n) relative), on `path`.
void check_column_sums(const Head& h, CpuPath path) {
  const double scale = 1.0 / std::sqrt(double(h.d));
  const int first_row = *rc::gen::inRange(0, h.n + 1);
  const std::vector<double> got = CausalWeightTiles::column_sums(h.Q(), h.K(), scale, first_row, path);
  RC_ASSERT(got.size() == std::size_t(h.n));
  std::vector<long double> want(std::size_t(h.n), 0.0L);
  for (int i = first_row; i < h.n; ++i) {
    const std::vector<long double> row = reference_row(h, i, scale);
    for (int j = 0; j <= i; ++j) want[std::size_t(j)] += row[std::size_t(j)];
  }
  const double relative = 2.0 * exact_rows_tolerance(h.n, h.d, score_magnitude(h.Q(), h.K(), scale)).log_normalizer +
                          Tol<double>::sum(h.n);
  for (int j = 0; j < h.n; ++j) {
    RC_ASSERT(std::abs(got[std::size_t(j)] - want[std::size_t(j)]) <= relative * want[std::size_t(j)] + 4 * h.n * DBL_MIN);
  }
}

RC_GTEST_PROP(CausalWeightTiles, ColumnSumsMatchTheDefinition, ()) {
  const Head h = gen_head();
  check_column_sums(h, CpuPath::kPortable);
  if (cpu_supports_avx2_fma()) check_column_sums(h, CpuPath::kAvx2Fma);
}

TEST(CausalWeightTiles, ColumnSumsCountTheRowsFromFirstRowOnly) {
  // Two rows of two keys with equal scores: row 0 gives key 0 weight 1, row 1 gives each key 1/2.
  std::vector<float> q(4, 0.0f), k(4, 0.0f);
  const ConstHeadMap Q(q.data(), 2, 2), K(k.data(), 2, 2);
  for (CpuPath path : {CpuPath::kPortable, CpuPath::kAvx2Fma}) {
    if (path == CpuPath::kAvx2Fma && !cpu_supports_avx2_fma()) continue;
    EXPECT_EQ(CausalWeightTiles::column_sums(Q, K, 1.0, 0, path), (std::vector<double>{1.5, 0.5}));
    EXPECT_EQ(CausalWeightTiles::column_sums(Q, K, 1.0, 1, path), (std::vector<double>{0.5, 0.5}));
    EXPECT_EQ(CausalWeightTiles::column_sums(Q, K, 1.0, 2, path), (std::vector<double>{0.0, 0.0}));
    EXPECT_THROW((void)CausalWeightTiles::column_sums(Q, K, 1.0, 3, path), std::invalid_argument);
  }
}

TEST(CausalWeightTiles, RejectsMismatchedShapes) {
  std::vector<float> q(12, 0.5f), k(8, 0.5f);
  EXPECT_THROW(CausalWeightTiles(ConstHeadMap(q.data(), 4, 3), ConstHeadMap(k.data(), 4, 2), 1.0),
               std::invalid_argument);
  EXPECT_THROW(CausalWeightTiles(ConstHeadMap(q.data(), 0, 3), ConstHeadMap(k.data(), 0, 3), 1.0),
               std::invalid_argument);
  const ConstHeadMap square(q.data(), 4, 2);
  EXPECT_THROW(CausalWeightTiles(square, square, 1.0, std::vector<double>(3, 0.0)), std::invalid_argument);
  EXPECT_THROW(CausalWeightTiles(square, square, 1.0, std::vector<double>{0.0, 1.0, NAN, 2.0}), std::invalid_argument);
}

}  // namespace
}  // namespace subevict
