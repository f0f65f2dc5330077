// The AVX2 + FMA attention kernels (contracts in core/attention_avx2.hpp).
//
// Every function that uses AVX2 carries SUBEVICT_AVX2 (a target attribute); the translation unit
// itself is compiled for the baseline, so the std:: code it instantiates stays baseline code.
//
// Layout: query rows in panels of 8 (two vectors of 4 doubles). One register tile multiplies a
// panel by 6 columns, C[j][r] = sum_p A[p][r] B[p][j], both for the scores (A = the panel's
// queries over d, B = 6 keys over d) and for the outputs (A = the panel's weights over the keys,
// B = 6 value dimensions over the keys). The scores land in "key-major, 8 rows" order, so the
// softmax runs across the 8 rows of a panel in vector lanes with no horizontal reductions.
#include "core/attention_avx2.hpp"

#if defined(SUBEVICT_HAVE_AVX2_KERNELS)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#define SUBEVICT_AVX2 __attribute__((target("avx2,fma")))

namespace subevict::detail {
namespace {

constexpr int kRows = 8;  // query rows per panel
constexpr int kCols = 6;  // keys (scores) or value dimensions (outputs) per register tile
// Panels sharing each key tile and each piece of values: a block of 64 rows reads the packed keys
// and values once (at 16 rows a block, long rows were bound by reading them: 22 against 38
// GFLOP/s at n = 16384, bench/results/core_attention_cpu.md).
constexpr int kBlockPanels = 8;
// Keys per output pass: 8 KB of weights and a 6 KB value tile stay in L1.
constexpr int kDepthChunk = 128;
// Keys per softmax chunk: a block's scores (8 panels x 1536 keys x 8 rows, 786 KB) stay in L2;
// a longer row is normalized online (running maximum, its sum and outputs rescaled per chunk).
constexpr int kKeyChunk = 1536;
static_assert(kKeyChunk % kCols == 0);

int round_up(int x, int m) { return (x + m - 1) / m * m; }

/// c[j * ldc + r] = (accumulate ? c[j * ldc + r] : 0) + sum_{p < depth} a[p * 8 + r] * b[p * 6 + j].
SUBEVICT_AVX2 inline void tile_8x6(const double* a, const double* b, int depth, double* c,
                                   bool accumulate, int ldc = kRows) {
  __m256d c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
  if (accumulate) {
    c00 = _mm256_loadu_pd(c), c01 = _mm256_loadu_pd(c + 4);
    c10 = _mm256_loadu_pd(c + ldc), c11 = _mm256_loadu_pd(c + ldc + 4);
    c20 = _mm256_loadu_pd(c + 2 * ldc), c21 = _mm256_loadu_pd(c + 2 * ldc + 4);
    c30 = _mm256_loadu_pd(c + 3 * ldc), c31 = _mm256_loadu_pd(c + 3 * ldc + 4);
    c40 = _mm256_loadu_pd(c + 4 * ldc), c41 = _mm256_loadu_pd(c + 4 * ldc + 4);
    c50 = _mm256_loadu_pd(c + 5 * ldc), c51 = _mm256_loadu_pd(c + 5 * ldc + 4);
  } else {
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_pd();
  }
  for (int p = 0; p < depth; ++p, a += kRows, b += kCols) {
    const __m256d a0 = _mm256_loadu_pd(a), a1 = _mm256_loadu_pd(a + 4);
    __m256d bj = _mm256_broadcast_sd(b + 0);
    c00 = _mm256_fmadd_pd(a0, bj, c00), c01 = _mm256_fmadd_pd(a1, bj, c01);
    bj = _mm256_broadcast_sd(b + 1);
    c10 = _mm256_fmadd_pd(a0, bj, c10), c11 = _mm256_fmadd_pd(a1, bj, c11);
    bj = _mm256_broadcast_sd(b + 2);
    c20 = _mm256_fmadd_pd(a0, bj, c20), c21 = _mm256_fmadd_pd(a1, bj, c21);
    bj = _mm256_broadcast_sd(b + 3);
    c30 = _mm256_fmadd_pd(a0, bj, c30), c31 = _mm256_fmadd_pd(a1, bj, c31);
    bj = _mm256_broadcast_sd(b + 4);
    c40 = _mm256_fmadd_pd(a0, bj, c40), c41 = _mm256_fmadd_pd(a1, bj, c41);
    bj = _mm256_broadcast_sd(b + 5);
    c50 = _mm256_fmadd_pd(a0, bj, c50), c51 = _mm256_fmadd_pd(a1, bj, c51);
  }
  _mm256_storeu_pd(c, c00), _mm256_storeu_pd(c + 4, c01);
  _mm256_storeu_pd(c + ldc, c10), _mm256_storeu_pd(c + ldc + 4, c11);
  _mm256_storeu_pd(c + 2 * ldc, c20), _mm256_storeu_pd(c + 2 * ldc + 4, c21);
  _mm256_storeu_pd(c + 3 * ldc, c30), _mm256_storeu_pd(c + 3 * ldc + 4, c31);
  _mm256_storeu_pd(c + 4 * ldc, c40), _mm256_storeu_pd(c + 4 * ldc + 4, c41);
  _mm256_storeu_pd(c + 5 * ldc, c50), _mm256_storeu_pd(c + 5 * ldc + 4, c51);
}

/// exp(x) for x <= 0 (or -inf), 0 below kAvx2FlushBelow. Cody-Waite reduction x = n ln2 + r,
/// |r| <= ln2 / 2, then the degree-13 Taylor polynomial of exp(r) (truncation < 5e-18) by Horner
/// with FMA, times 2^n built in the exponent field (n >= -1022 after the clamp: always normal).
SUBEVICT_AVX2 inline __m256d exp_flushed(__m256d x) {
  const __m256d floor = _mm256_set1_pd(kAvx2FlushBelow);
  const __m256d flushed = _mm256_cmp_pd(x, floor, _CMP_LT_OQ);  // true for -inf too
  x = _mm256_max_pd(x, floor);
  const __m256d n = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(1.4426950408889634)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256d r = _mm256_fnmadd_pd(n, _mm256_set1_pd(6.93147180369123816490e-01), x);
  r = _mm256_fnmadd_pd(n, _mm256_set1_pd(1.90821492927058770002e-10), r);
  // 1/m! for m = 13 down to 2, then 1 + r p.
  static constexpr double kInverseFactorial[] = {
      1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
      1.0 / 362880.0,     1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,
      1.0 / 120.0,        1.0 / 24.0,        1.0 / 6.0,        0.5};
  __m256d p = _mm256_set1_pd(kInverseFactorial[0]);
  for (int m = 1; m < 12; ++m) p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(kInverseFactorial[m]));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0));
  // 2^n: n + 1.5 * 2^52 holds n in its low mantissa bits; adding the bias and shifting moves
  // n + 1023 (in [1, 1023]) into the exponent field.
  const __m256i low = _mm256_castpd_si256(_mm256_add_pd(n, _mm256_set1_pd(6755399441055744.0)));
  const __m256d two_n =
      _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(low, _mm256_set1_epi64x(1023)), 52));
  return _mm256_andnot_pd(flushed, _mm256_mul_pd(p, two_n));
}

/// The scores of one panel (rows i0..i0+7) against keys [first_key, first_key + keys): raw dot
/// products from the tiles, scaled here; entries with key > row become -inf. Returns the row
/// maxima in m0, m1.
SUBEVICT_AVX2 inline void scale_mask_max(double* s, int first_key, int keys, int i0, double scale,
                                         __m256d& m0, __m256d& m1) {
  const __m256d sc = _mm256_set1_pd(scale),
                minus_inf = _mm256_set1_pd(-std::numeric_limits<double>::infinity());
  const __m256d row0 = _mm256_setr_pd(i0, i0 + 1, i0 + 2, i0 + 3),
                row1 = _mm256_add_pd(row0, _mm256_set1_pd(4.0));
  m0 = m1 = minus_inf;
  for (int j = 0; j < keys; ++j) {
    double* e = s + std::size_t(j) * kRows;
    __m256d s0 = _mm256_mul_pd(_mm256_loadu_pd(e), sc),
            s1 = _mm256_mul_pd(_mm256_loadu_pd(e + 4), sc);
    if (first_key + j > i0) {  // the diagonal block and the padding: rows before the key do not see it
      const __m256d key = _mm256_set1_pd(double(first_key + j));
      s0 = _mm256_blendv_pd(s0, minus_inf, _mm256_cmp_pd(row0, key, _CMP_LT_OQ));
      s1 = _mm256_blendv_pd(s1, minus_inf, _mm256_cmp_pd(row1, key, _CMP_LT_OQ));
    }
    _mm256_storeu_pd(e, s0), _mm256_storeu_pd(e + 4, s1);
    m0 = _mm256_max_pd(m0, s0), m1 = _mm256_max_pd(m1, s1);
  }
}

/// Replaces the panel's scores by exp(s - m) (unnormalized weights) and returns their sums.
SUBEVICT_AVX2 inline void exponentiate(double* s, int keys, __m256d m0, __m256d m1, __m256d& sum0,
                                       __m256d& sum1) {
  sum0 = sum1 = _mm256_setzero_pd();
  for (int j = 0; j < keys; ++j) {
    double* e = s + std::size_t(j) * kRows;
    const __m256d w0 = exp_flushed(_mm256_sub_pd(_mm256_loadu_pd(e), m0));
    const __m256d w1 = exp_flushed(_mm256_sub_pd(_mm256_loadu_pd(e + 4), m1));
    _mm256_storeu_pd(e, w0), _mm256_storeu_pd(e + 4, w1);
    sum0 = _mm256_add_pd(sum0, w0), sum1 = _mm256_add_pd(sum1, w1);
  }
}

/// Per-head packed operands, read by every thread.
struct Workspace {
  int n, d, key_tiles, keys_padded, dim_tiles;
  std::vector<double> keys;     // [key tile][p < d][6]
  std::vector<double> values;   // [dim tile][key < keys_padded][6]

  Workspace(const float* k, const float* v, int n_, int d_)
      : n(n_),
        d(d_),
        key_tiles((n_ + kCols - 1) / kCols),
        keys_padded(key_tiles * kCols),
        dim_tiles((d_ + kCols - 1) / kCols),
        keys(std::size_t(keys_padded) * d_, 0.0),
        values(std::size_t(dim_tiles) * keys_padded * kCols, 0.0) {
    for (int j = 0; j < n; ++j) {
      const float* kj = k + std::size_t(j) * d;
      double* dst = keys.data() + std::size_t(j / kCols) * d * kCols + j % kCols;
      for (int p = 0; p < d; ++p) dst[std::size_t(p) * kCols] = double(kj[p]);
      const float* vj = v + std::size_t(j) * d;
      for (int c = 0; c < d; ++c)
        values[(std::size_t(c / kCols) * keys_padded + j) * kCols + c % kCols] = double(vj[c]);
    }
  }
};

/// One thread's scratch for a block of panels.
struct Scratch {
  std::vector<double> queries;  // [panel in block][p < d][8]
  std::vector<double> scores;   // [panel in block][key in chunk < kKeyChunk][8]
  std::vector<double> outputs;  // [panel in block][dim tile][6][8]

  explicit Scratch(const Workspace& w)
      : queries(std::size_t(kBlockPanels) * w.d * kRows),
        scores(std::size_t(kBlockPanels) * kKeyChunk * kRows),
        outputs(std::size_t(kBlockPanels) * w.dim_tiles * kCols * kRows) {}
};

/// Rows [first, first + 8 * panels) of one head (the block's panels), into the outputs.
SUBEVICT_AVX2 void block_rows(const Workspace& w, Scratch& x, const float* q, int first, int panels,
                              double scale, double* log_normalizer, double* output) {
  const int n = w.n, d = w.d;
  int visible[kBlockPanels] = {};  // keys a panel computes: its visible keys rounded up to a tile
  for (int b = 0; b < panels; ++b) {
    const int i0 = first + b * kRows;
    visible[b] = round_up(std::min(n, i0 + kRows), kCols);
    double* qp = x.queries.data() + std::size_t(b) * d * kRows;
    for (int r = 0; r < kRows; ++r) {
      const float* qi = q + std::size_t(i0 + r) * d;
      for (int p = 0; p < d; ++p) qp[std::size_t(p) * kRows + r] = i0 + r < n ? double(qi[p]) : 0.0;
    }
  }
  // Per panel: the running row maxima, the sums of exp(s - max) and (in x.outputs) the
  // unnormalized outputs over the key chunks seen so far.
  const double minus_inf = -std::numeric_limits<double>::infinity();
  __m256d top0[kBlockPanels], top1[kBlockPanels], sum0[kBlockPanels], sum1[kBlockPanels];
  for (int b = 0; b < panels; ++b) {
    top0[b] = top1[b] = _mm256_set1_pd(minus_inf);
    sum0[b] = sum1[b] = _mm256_setzero_pd();
  }
  const std::size_t out_stride = std::size_t(w.dim_tiles) * kCols * kRows;
  for (int k0 = 0; k0 < visible[panels - 1]; k0 += kKeyChunk) {
    const int k1 = std::min(k0 + kKeyChunk, visible[panels - 1]);
    // Scores of the chunk: each key tile once for all panels of the block.
    for (int t = k0 / kCols; t < k1 / kCols; ++t) {
      for (int b = 0; b < panels; ++b) {
        if (t * kCols >= visible[b]) continue;
        tile_8x6(x.queries.data() + std::size_t(b) * d * kRows, w.keys.data() + std::size_t(t) * d * kCols, d,
                 x.scores.data() + (std::size_t(b) * kKeyChunk + std::size_t(t * kCols - k0)) * kRows, false);
      }
    }
    for (int b = 0; b < panels; ++b) {
      if (k0 >= visible[b]) continue;
      const int i0 = first + b * kRows, keys = std::min(k1, visible[b]) - k0;
      double* s = x.scores.data() + std::size_t(b) * kKeyChunk * kRows;
      __m256d m0, m1;
      scale_mask_max(s, k0, keys, i0, scale, m0, m1);
      m0 = _mm256_max_pd(m0, top0[b]), m1 = _mm256_max_pd(m1, top1[b]);
      double* out = x.outputs.data() + b * out_stride;
      if (k0 > 0) {  // a later chunk: the sums and outputs so far move to the new maxima
        const __m256d f0 = exp_flushed(_mm256_sub_pd(top0[b], m0)), f1 = exp_flushed(_mm256_sub_pd(top1[b], m1));
        sum0[b] = _mm256_mul_pd(sum0[b], f0), sum1[b] = _mm256_mul_pd(sum1[b], f1);
        for (std::size_t e = 0; e < out_stride; e += kRows) {
          _mm256_storeu_pd(out + e, _mm256_mul_pd(_mm256_loadu_pd(out + e), f0));
          _mm256_storeu_pd(out + e + 4, _mm256_mul_pd(_mm256_loadu_pd(out + e + 4), f1));
        }
      }
      top0[b] = m0, top1[b] = m1;
      __m256d e0, e1;
      exponentiate(s, keys, m0, m1, e0, e1);
      sum0[b] = _mm256_add_pd(sum0[b], e0), sum1[b] = _mm256_add_pd(sum1[b], e1);
    }
    // Outputs: sum_j w_ij v_j over key pieces whose weights stay in L1 while every value tile
    // passes, each piece of values read once for all panels.
    for (int c0 = k0; c0 < k1; c0 += kDepthChunk) {
      for (int b = 0; b < panels; ++b) {
        if (c0 >= visible[b]) continue;
        const int depth = std::min(kDepthChunk, std::min(k1, visible[b]) - c0);
        const double* a = x.scores.data() + (std::size_t(b) * kKeyChunk + std::size_t(c0 - k0)) * kRows;
        for (int t = 0; t < w.dim_tiles; ++t) {
          tile_8x6(a, w.values.data() + (std::size_t(t) * w.keys_padded + c0) * kCols, depth,
                   x.outputs.data() + b * out_stride + std::size_t(t) * kCols * kRows, c0 > 0);
        }
      }
    }
  }
  for (int b = 0; b < panels; ++b) {
    const int i0 = first + b * kRows;
    alignas(32) double m[kRows], sums[kRows];
    _mm256_store_pd(m, top0[b]), _mm256_store_pd(m + 4, top1[b]);
    _mm256_store_pd(sums, sum0[b]), _mm256_store_pd(sums + 4, sum1[b]);
    const double* o = x.outputs.data() + b * out_stride;
    for (int r = 0; r < kRows && i0 + r < n; ++r) {
      log_normalizer[i0 + r] = m[r] + std::log(sums[r]);
      double* dst = output + std::size_t(i0 + r) * d;
      for (int c = 0; c < d; ++c) dst[c] = o[std::size_t(c) * kRows + r] / sums[r];
    }
  }
}

}  // namespace

SUBEVICT_AVX2 void exp_flushed_avx2(const double* x, int count, double* out) {
  int e = 0;
  for (; e + 4 <= count; e += 4) _mm256_storeu_pd(out + e, exp_flushed(_mm256_loadu_pd(x + e)));
  if (e < count) {
    alignas(32) double in[4] = {0.0, 0.0, 0.0, 0.0}, res[4];
    for (int i = e; i < count; ++i) in[i - e] = x[i];
    _mm256_store_pd(res, exp_flushed(_mm256_load_pd(in)));
    for (int i = e; i < count; ++i) out[i] = res[i - e];
  }
}

SUBEVICT_AVX2 void weighted_rows_avx2(const float* rows, int m, int d, int stride,
                                      const double* weights, int g, double* out) {
  for (int h = 0; h < g; ++h) {
    const double* w = weights + std::size_t(h) * m;
    double* o = out + std::size_t(h) * d;
    int c = 0;
    for (; c + 32 <= d; c += 32) {  // 8 independent accumulators cover the FMA latency
      __m256d acc[8];
      for (__m256d& a : acc) a = _mm256_setzero_pd();
      for (int e = 0; e < m; ++e) {
        const float* r = rows + std::size_t(e) * stride + c;
        const __m256d we = _mm256_broadcast_sd(w + e);
        for (int u = 0; u < 8; ++u)
          acc[u] = _mm256_fmadd_pd(we, _mm256_cvtps_pd(_mm_loadu_ps(r + 4 * u)), acc[u]);
      }
      for (int u = 0; u < 8; ++u) _mm256_storeu_pd(o + c + 4 * u, acc[u]);
    }
    for (; c + 4 <= d; c += 4) {
      __m256d acc = _mm256_setzero_pd();
      for (int e = 0; e < m; ++e) {
        const __m256d r = _mm256_cvtps_pd(_mm_loadu_ps(rows + std::size_t(e) * stride + c));
        acc = _mm256_fmadd_pd(_mm256_broadcast_sd(w + e), r, acc);
      }
      _mm256_storeu_pd(o + c, acc);
    }
    for (; c < d; ++c) {
      double acc = 0.0;
      for (int e = 0; e < m; ++e)
        acc = std::fma(w[e], double(rows[std::size_t(e) * stride + c]), acc);
      o[c] = acc;
    }
  }
}

SUBEVICT_AVX2 void sse2_order_scores_avx2(const float* keys_t, int m, int d, int stride,
                                          const double* query, double* scores) {
  // Lanes are cache entries; per entry, `even` and `odd` accumulate as the two lanes of Eigen's
  // packet do: c = c + k q, a rounded multiply and a rounded add, columns in order. Columns
  // outermost, so that every row of keys_t streams contiguously; the sums of a block of entries
  // stay in L1.
  constexpr int kBlock = 256;
  alignas(32) double even[kBlock], odd[kBlock];
  for (int e0 = 0; e0 < m; e0 += kBlock) {
    const int count = std::min(kBlock, m - e0), vectors = count / 4 * 4;
    std::fill(even, even + count, 0.0);
    std::fill(odd, odd + count, 0.0);
    for (int j = 0; j + 2 <= d; j += 2) {
      const __m256d qe = _mm256_set1_pd(query[j]), qo = _mm256_set1_pd(query[j + 1]);
      const float* ke = keys_t + std::size_t(j) * stride + e0;
      const float* ko = ke + stride;
      for (int e = 0; e < vectors; e += 4) {
        const __m256d pe = _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(ke + e)), qe);
        const __m256d po = _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(ko + e)), qo);
        _mm256_store_pd(even + e, _mm256_add_pd(_mm256_load_pd(even + e), pe));
        _mm256_store_pd(odd + e, _mm256_add_pd(_mm256_load_pd(odd + e), po));
      }
      for (int e = vectors; e < count; ++e) {
        even[e] = even[e] + double(ke[e]) * query[j];
        odd[e] = odd[e] + double(ko[e]) * query[j + 1];
      }
    }
    for (int e = 0; e < count; ++e) {
      double sum = even[e] + odd[e];  // Eigen's predux: lane 0 + lane 1
      if (d % 2 == 1)
        sum = sum + double(keys_t[std::size_t(d - 1) * stride + e0 + e]) * query[d - 1];
      scores[e0 + e] = 0.0 + sum;  // + the zeroed destination
    }
  }
}

namespace {

/// The end of an entry vector's sse2-order score (sse2_order_scores_avx2): even + odd, + the last
/// column's product when d is odd, then 0 + the result.
SUBEVICT_AVX2 inline __m256d finish_sse2_order(__m256d even, __m256d odd, const float* last_keys,
                                               const double* query, int d) {
  __m256d sum = _mm256_add_pd(even, odd);
  if (d % 2 == 1)
    sum = _mm256_add_pd(sum, _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(last_keys)),
                                           _mm256_broadcast_sd(query + d - 1)));
  return _mm256_add_pd(_mm256_setzero_pd(), sum);
}

}  // namespace

SUBEVICT_AVX2 void sse2_order_score_block_avx2(const float* keys_t, int m, int d, int stride,
                                               const double* queries, int count, double* scores,
                                               int ldc) {
  // Lanes are 4 entries; 4 queries share every key load, their even and odd sums in registers.
  // Each (query, entry) pair takes exactly sse2_order_scores_avx2's operations.
  constexpr int kQueries = 4;
  const int vectors = m / 4 * 4;
  const float* last = keys_t + std::size_t(d - 1) * stride;
  for (int e = 0; e < vectors; e += 4) {
    int b = 0;
    for (; b + kQueries <= count; b += kQueries) {
      const double* q0 = queries + std::size_t(b) * d;
      const double *q1 = q0 + d, *q2 = q1 + d, *q3 = q2 + d;
      __m256d e0 = _mm256_setzero_pd(), o0 = e0, e1 = e0, o1 = e0, e2 = e0, o2 = e0, e3 = e0, o3 = e0;
      for (int j = 0; j + 2 <= d; j += 2) {
        const __m256d ke = _mm256_cvtps_pd(_mm_loadu_ps(keys_t + std::size_t(j) * stride + e));
        const __m256d ko = _mm256_cvtps_pd(_mm_loadu_ps(keys_t + std::size_t(j + 1) * stride + e));
        e0 = _mm256_add_pd(e0, _mm256_mul_pd(ke, _mm256_broadcast_sd(q0 + j)));
        o0 = _mm256_add_pd(o0, _mm256_mul_pd(ko, _mm256_broadcast_sd(q0 + j + 1)));
        e1 = _mm256_add_pd(e1, _mm256_mul_pd(ke, _mm256_broadcast_sd(q1 + j)));
        o1 = _mm256_add_pd(o1, _mm256_mul_pd(ko, _mm256_broadcast_sd(q1 + j + 1)));
        e2 = _mm256_add_pd(e2, _mm256_mul_pd(ke, _mm256_broadcast_sd(q2 + j)));
        o2 = _mm256_add_pd(o2, _mm256_mul_pd(ko, _mm256_broadcast_sd(q2 + j + 1)));
        e3 = _mm256_add_pd(e3, _mm256_mul_pd(ke, _mm256_broadcast_sd(q3 + j)));
        o3 = _mm256_add_pd(o3, _mm256_mul_pd(ko, _mm256_broadcast_sd(q3 + j + 1)));
      }
      double* out = scores + std::size_t(b) * ldc + e;
      _mm256_storeu_pd(out, finish_sse2_order(e0, o0, last + e, q0, d));
      _mm256_storeu_pd(out + ldc, finish_sse2_order(e1, o1, last + e, q1, d));
      _mm256_storeu_pd(out + 2 * std::size_t(ldc), finish_sse2_order(e2, o2, last + e, q2, d));
      _mm256_storeu_pd(out + 3 * std::size_t(ldc), finish_sse2_order(e3, o3, last + e, q3, d));
    }
    for (; b < count; ++b) {
      const double* q = queries + std::size_t(b) * d;
      __m256d even = _mm256_setzero_pd(), odd = even;
      for (int j = 0; j + 2 <= d; j += 2) {
        const __m256d ke = _mm256_cvtps_pd(_mm_loadu_ps(keys_t + std::size_t(j) * stride + e));
        const __m256d ko = _mm256_cvtps_pd(_mm_loadu_ps(keys_t + std::size_t(j + 1) * stride + e));
        even = _mm256_add_pd(even, _mm256_mul_pd(ke, _mm256_broadcast_sd(q + j)));
        odd = _mm256_add_pd(odd, _mm256_mul_pd(ko, _mm256_broadcast_sd(q + j + 1)));
      }
      _mm256_storeu_pd(scores + std::size_t(b) * ldc + e, finish_sse2_order(even, odd, last + e, q, d));
    }
  }
  for (int e = vectors; e < m; ++e) {  // the entries past the last vector, one by one
    for (int b = 0; b < count; ++b) {
      const double* q = queries + std::size_t(b) * d;
      double even = 0.0, odd = 0.0;
      for (int j = 0; j + 2 <= d; j += 2) {
        even = even + double(keys_t[std::size_t(j) * stride + e]) * q[j];
        odd = odd + double(keys_t[std::size_t(j + 1) * stride + e]) * q[j + 1];
      }
      double sum = even + odd;
      if (d % 2 == 1) sum = sum + double(last[e]) * q[d - 1];
      scores[std::size_t(b) * ldc + e] = 0.0 + sum;
    }
  }
}

SUBEVICT_AVX2 void gathered_weighted_rows_avx2(const float* rows, int stride, const int* index,
                                               int count, const double* weights, int ldw,
                                               int queries, int d, double* out, int ldo) {
  // Chunks of tokens whose value rows and weights stay in L2 while every (dimension tile, query
  // quad) passes; the partial sums go back to `out` between chunks (the same FMA sequence).
  constexpr int kChunk = 256;
  const int tiles = d / 8 * 8;
  for (int b = 0; b < queries; ++b) std::fill(out + std::size_t(b) * ldo, out + std::size_t(b) * ldo + d, 0.0);
  for (int u0 = 0; u0 < count; u0 += kChunk) {
    const int u1 = std::min(count, u0 + kChunk);
    for (int c = 0; c < tiles; c += 8) {
      int b = 0;
      for (; b + 4 <= queries; b += 4) {
        double* o = out + std::size_t(b) * ldo + c;
        const double* w = weights + std::size_t(b) * ldw;
        __m256d a00 = _mm256_loadu_pd(o), a01 = _mm256_loadu_pd(o + 4);
        __m256d a10 = _mm256_loadu_pd(o + ldo), a11 = _mm256_loadu_pd(o + ldo + 4);
        __m256d a20 = _mm256_loadu_pd(o + 2 * std::size_t(ldo)), a21 = _mm256_loadu_pd(o + 2 * std::size_t(ldo) + 4);
        __m256d a30 = _mm256_loadu_pd(o + 3 * std::size_t(ldo)), a31 = _mm256_loadu_pd(o + 3 * std::size_t(ldo) + 4);
        for (int u = u0; u < u1; ++u) {
          const float* r = rows + std::size_t(index[u]) * stride + c;
          const __m256d v0 = _mm256_cvtps_pd(_mm_loadu_ps(r)), v1 = _mm256_cvtps_pd(_mm_loadu_ps(r + 4));
          __m256d wb = _mm256_broadcast_sd(w + u);
          a00 = _mm256_fmadd_pd(wb, v0, a00), a01 = _mm256_fmadd_pd(wb, v1, a01);
          wb = _mm256_broadcast_sd(w + ldw + u);
          a10 = _mm256_fmadd_pd(wb, v0, a10), a11 = _mm256_fmadd_pd(wb, v1, a11);
          wb = _mm256_broadcast_sd(w + 2 * std::size_t(ldw) + u);
          a20 = _mm256_fmadd_pd(wb, v0, a20), a21 = _mm256_fmadd_pd(wb, v1, a21);
          wb = _mm256_broadcast_sd(w + 3 * std::size_t(ldw) + u);
          a30 = _mm256_fmadd_pd(wb, v0, a30), a31 = _mm256_fmadd_pd(wb, v1, a31);
        }
        _mm256_storeu_pd(o, a00), _mm256_storeu_pd(o + 4, a01);
        _mm256_storeu_pd(o + ldo, a10), _mm256_storeu_pd(o + ldo + 4, a11);
        _mm256_storeu_pd(o + 2 * std::size_t(ldo), a20), _mm256_storeu_pd(o + 2 * std::size_t(ldo) + 4, a21);
        _mm256_storeu_pd(o + 3 * std::size_t(ldo), a30), _mm256_storeu_pd(o + 3 * std::size_t(ldo) + 4, a31);
      }
      for (; b < queries; ++b) {
        double* o = out + std::size_t(b) * ldo + c;
        const double* w = weights + std::size_t(b) * ldw;
        __m256d a0 = _mm256_loadu_pd(o), a1 = _mm256_loadu_pd(o + 4);
        for (int u = u0; u < u1; ++u) {
          const float* r = rows + std::size_t(index[u]) * stride + c;
          const __m256d wb = _mm256_broadcast_sd(w + u);
          a0 = _mm256_fmadd_pd(wb, _mm256_cvtps_pd(_mm_loadu_ps(r)), a0);
          a1 = _mm256_fmadd_pd(wb, _mm256_cvtps_pd(_mm_loadu_ps(r + 4)), a1);
        }
        _mm256_storeu_pd(o, a0), _mm256_storeu_pd(o + 4, a1);
      }
    }
    for (int c = tiles; c < d; ++c) {  // the dimensions past the last tile, one by one
      for (int b = 0; b < queries; ++b) {
        double acc = out[std::size_t(b) * ldo + c];
        const double* w = weights + std::size_t(b) * ldw;
        for (int u = u0; u < u1; ++u) acc = std::fma(w[u], double(rows[std::size_t(index[u]) * stride + c]), acc);
        out[std::size_t(b) * ldo + c] = acc;
      }
    }
  }
}

SUBEVICT_AVX2 void score_tile_avx2(const double* queries, int panels, const double* keys,
                                   int key_tiles, int d, double* scores, int ldc) {
  for (int t = 0; t < key_tiles; ++t) {
    for (int b = 0; b < panels; ++b) {
      tile_8x6(queries + std::size_t(b) * d * kRows, keys + std::size_t(t) * d * kCols, d,
               scores + std::size_t(t) * kCols * ldc + std::size_t(b) * kRows, false, ldc);
    }
  }
}

void exact_attention_rows_avx2(const float* q, const float* k, const float* v, int n, int d,
                               double scale, double* log_normalizer, double* output, int threads) {
  const Workspace w(k, v, n, d);
  const int block = kBlockPanels * kRows, blocks = (n + block - 1) / block;
  // Rows are independent: any thread count computes the same bits. Later blocks see more keys,
  // so they are dealt dynamically, latest first.
#pragma omp parallel num_threads(std::max(1, std::min(threads, blocks)))
  {
    Scratch x(w);
#pragma omp for schedule(dynamic, 1)
    for (int b = blocks - 1; b >= 0; --b) {
      const int first = b * block;
      const int panels = std::min(kBlockPanels, (n - first + kRows - 1) / kRows);
      block_rows(w, x, q, first, panels, scale, log_normalizer, output);
    }
  }
}

}  // namespace subevict::detail

#endif  // SUBEVICT_HAVE_AVX2_KERNELS
