#pragma once
/// \file
/// The AVX2 + FMA attention kernels behind core/exact_attention_rows.hpp and
/// core/weighted_rows.hpp: raw pointers, no Eigen, so that nothing in them can be merged by the
/// linker with code of other translation units. Their definitions carry
/// __attribute__((target("avx2,fma"))) and must only run where cpu_supports_avx2_fma()
/// (core/cpu_path.hpp); callers go through the dispatching functions, which check.

// The kernel exists on x86 with GCC or Clang (per-function target attributes, <immintrin.h>).
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define SUBEVICT_HAVE_AVX2_KERNELS 1
#endif

namespace subevict::detail {

/// Below this exponent the kernels' exp is exactly 0 (equals core/attention.hpp kLogMinNormal;
/// exact_attention_rows.cpp asserts it).
inline constexpr double kAvx2FlushBelow = -708.3964185322641;

#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
/// out[e] = exp(x[e]) for e < count, exactly 0 where x[e] < kAvx2FlushBelow (and for -inf),
/// within 2 ulp of the correctly rounded exp elsewhere. Precondition: every x[e] <= 0 or -inf
/// (the kernel only exponentiates max-shifted scores), a CPU with AVX2 and FMA.
void exp_flushed_avx2(const double* x, int count, double* out);

/// Exact causal attention rows of one head in double, AVX2 + FMA: for every query i < n,
/// log_normalizer[i] = log sum_{j<=i} exp(s_ij) and output[i * d + c] = sum_{j<=i} a_ij v[j * d +
/// c] with s_ij = scale <q_i, k_j> and a_ij = exp(s_ij - log_normalizer[i]). q, k, v are row-major
/// n x d floats; outputs are n and n * d doubles. Scores are double FMA dot products of the float
/// inputs (products exact in double); the softmax is max-shifted, exp(x) is exactly 0 below
/// kLogMinNormal (as core/attention.hpp underflow_exp) and within 2 ulp above it. Rows longer
/// than one chunk of 1536 keys are normalized online: the running maximum grows chunk by chunk,
/// and the sum and outputs so far are multiplied by exp(old max - new max) (one more rounding
/// per chunk; rows within one chunk are computed exactly as without chunks). Preconditions:
/// n >= 1, d >= 1, finite inputs, a CPU with AVX2 and FMA. Cost 2 n^2 d flops (causal), memory
/// O(n d) doubles, plus 64 · 1536 doubles of scores per thread. Blocks of 64 rows are dealt to
/// `threads` OpenMP threads (one inside another parallel region); every row's arithmetic is the
/// same on any count.
void exact_attention_rows_avx2(const float* q, const float* k, const float* v, int n, int d,
                               double scale, double* log_normalizer, double* output, int threads = 1);

/// out[h * d + c] = sum_{e < m} weights[h * m + e] * rows[e * stride + c] for h < g, c < d: the
/// d x g product rows^T weights with float rows m x d (row-major, row stride `stride` >= d) and
/// weights m x g (column-major), out d x g (column-major), in double with FMA (the float rows
/// converted exactly), e ascending. Preconditions: m, d, g >= 0, a CPU with AVX2 and FMA.
void weighted_rows_avx2(const float* rows, int m, int d, int stride, const double* weights, int g,
                        double* out);

/// scores[j * ldc + 8 b + r] = sum_{p < d} queries[(b d + p) 8 + r] keys[(t d + p) 6 + c] with
/// j = 6 t + c, for panels b < `panels`, key tiles t < key_tiles, c < 6, r < 8: the dot products of
/// 8 · panels query rows packed in panels ([panel][p][8 rows]) with 6 · key_tiles keys packed in
/// tiles ([tile][p][6 keys]), in double with FMA, p ascending (each entry's arithmetic does not
/// depend on the tile it falls in). Preconditions: ldc >= 8 · panels, d >= 1, a CPU with AVX2
/// and FMA.
void score_tile_avx2(const double* queries, int panels, const double* keys, int key_tiles, int d,
                     double* scores, int ldc);

/// scores[e] = <double(k_e), query> for e < m, the keys stored transposed: k_e[j] =
/// keys_t[j * stride + e] (d rows of floats, stride >= m), with exactly the rounded operations of
/// Eigen 3.4's row-major matrix-vector product on 2-wide double packets without FMA (the
/// baseline x86-64 build): per entry, one sum over the even columns and one over the odd ones,
/// each from 0 in column order with a rounded multiply and a rounded add; then even + odd, then +
/// the last product when d is odd, then 0 + the result. The floats convert exactly, so the scores
/// equal Eigen's on the double copies bit for bit, while reading half the bytes. Preconditions:
/// m, d >= 0, a CPU with AVX2; the build must not contract multiply-add pairs (-ffp-contract=off,
/// cmake/CompilerOptions.cmake).
void sse2_order_scores_avx2(const float* keys_t, int m, int d, int stride, const double* query,
                            double* scores);

/// scores[b * ldc + e] = sse2_order_scores_avx2(keys_t, m, d, stride, queries + b * d)[e] for
/// b < count, e < m, bit for bit: the same operations per (query, entry), with every key load
/// shared by four queries (count queries row-major, d doubles each; ldc >= m). Preconditions as
/// sse2_order_scores_avx2's, d >= 1.
void sse2_order_score_block_avx2(const float* keys_t, int m, int d, int stride,
                                 const double* queries, int count, double* scores, int ldc);

/// out[b * ldo + c] = sum_{u < count} weights[b * ldw + u] * rows[index[u] * stride + c] for
/// b < queries, c < d: value rows gathered by index (float, converted exactly), each sum from 0
/// with one FMA per u in ascending u, so every entry equals the scalar std::fma loop bit for bit.
/// Preconditions: every index[u] a row of `rows`, ldw >= count, ldo >= d, a CPU with AVX2 and FMA.
void gathered_weighted_rows_avx2(const float* rows, int stride, const int* index, int count,
                                 const double* weights, int ldw, int queries, int d, double* out,
                                 int ldo);
#endif

}  // namespace subevict::detail
