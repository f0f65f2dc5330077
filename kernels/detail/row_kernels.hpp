#pragma once
/// \file
/// Internal: the per-row and per-group computations shared by the portable functors
/// (kernels/portable.inl) and the block kernels (kernels/detail/block_kernels.hpp). Plain __host__
/// __device__ functions on raw pointers; no allocation, no library calls but std::exp, std::log
/// and std::sqrt. Ties go to the lowest token index, as everywhere.

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/portable_math.hpp"

namespace subevict::kernels::detail {

/// Rows per statistics chunk of the portable backend (scratch: chunk x n floats).
inline constexpr int kStatsChunkRows = 256;

/// <a, b> over d floats, accumulated in float in index order.
SUBEVICT_HD inline float dot(const float* a, const float* b, int d) {
  float sum = 0.0f;
  for (int x = 0; x < d; ++x) sum += a[x] * b[x];
  return sum;
}

/// A float's bits mapped to an unsigned key with the same order (-0 < +0; no NaN expected).
SUBEVICT_HD inline std::uint32_t order_key(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/// Exact causal row i by an online softmax in double: *log_normalizer = log sum_{j<=i} exp(s_ij)
/// and o[0..d) = sum_j a_ij v_j, s_ij = sum_x (scale q_x) k_jx. O(i d).
SUBEVICT_HD inline void exact_row(const float* q, const float* k, const float* v, int i, int d, double scale,
                                  double* o, double* log_normalizer) {
  double top = -INFINITY, sum = 0.0;
  for (int x = 0; x < d; ++x) o[x] = 0.0;
  for (int j = 0; j <= i; ++j) {
    double s = 0.0;
    for (int x = 0; x < d; ++x) s += (scale * double(q[x])) * double(k[std::size_t(j) * d + x]);
    if (s > top) {
      const double factor = std::exp(top - s);  // 0 on the first key
      sum *= factor;
      for (int x = 0; x < d; ++x) o[x] *= factor;
      top = s;
    }
    const double w = std::exp(s - top);
    sum += w;
    for (int x = 0; x < d; ++x) o[x] += w * double(v[std::size_t(j) * d + x]);
  }
  for (int x = 0; x < d; ++x) o[x] /= sum;
  *log_normalizer = top + std::log(sum);
}

/// Everything one group's simulation reads and writes; arrays are indexed by group inside.
struct SimView {
  const float *q, *k, *v;
  const double *log_normalizer, *exact_output;  // [layer][q_head][token], [..][d]
  const int* budget;                            // [group]
  int layers, q_heads, kv_heads, n, d;
  double scale;
  int policy, aggregation, recent, sinks, capacity;
  std::int32_t* slots;    // [group][capacity]
  double* weights;        // [group][sim_weight_stride]
  double* score;          // [group][n]
  double *retained, *error;  // [group][n][g]
  std::int32_t* evicted;  // [group][n]
};

/// Doubles of per-group weight scratch: attention [g][capacity], aggregate [capacity], per-head
/// maximum and sum [g] each.
SUBEVICT_HD inline std::size_t sim_weight_stride(int capacity, int g) {
  return std::size_t(capacity) * g + std::size_t(capacity) + 2 * std::size_t(g);
}

/// The group aggregate of member e: sum, mean or max (aggregation 0, 1, 2) of att[h * m + e] over
/// the g heads, in head order (greedy/eviction/policies/policy_support.cpp aggregate).
SUBEVICT_HD inline double aggregate_member(const double* att, int m, int g, int e, int aggregation) {
  double value = att[e];
  for (int h = 1; h < g; ++h) {
    const double w = att[std::size_t(h) * m + e];
    value = aggregation == 2 ? (w > value ? w : value) : value + w;
  }
  return aggregation == 1 ? value / double(g) : value;
}

/// Dim x of the output error: adds (o_x - õ_x)^2 to *diff2 and o_x^2 to *norm2, with
/// õ_x = sum_e a[e] v[slot[e]][x] over the m cache members.
SUBEVICT_HD inline void add_output_error_terms(const double* o, const double* a, const std::int32_t* slot,
                                               const float* v, int m, int d, int x, double* diff2, double* norm2) {
  double tracked = 0.0;
  for (int e = 0; e < m; ++e) tracked += a[e] * double(v[std::size_t(slot[e]) * d + x]);
  *diff2 += (o[x] - tracked) * (o[x] - tracked);
  *norm2 += o[x] * o[x];
}

/// The KV head index (layer * kv_heads + kv_head) read by query head index `head` (layer *
/// q_heads + q_head), with `group` query heads per KV head (core/shape.hpp kv_head_of).
SUBEVICT_HD inline std::size_t kv_index(std::size_t head, int q_heads, int group) {
  return (head / q_heads) * std::size_t(q_heads / group) + (head % q_heads) / group;
}

/// Exact row i of one query head (global row index): L_i and o_i by an online softmax in double.
struct ExactRowFn {
  const float *q, *k, *v;
  int n, d, q_heads, group;
  double scale;
  double *log_normalizer, *output;  // [row], [row][d]
  SUBEVICT_HD void operator()(std::int64_t row) const {
    const int i = int(row % n);
    const std::int64_t head = row / n;  // layer * q_heads + q_head
    const std::size_t kv = kv_index(std::size_t(head), q_heads, group);
    const float* qi = q + std::size_t(row) * d;
    const float* kh = k + std::size_t(kv) * n * d;
    const float* vh = v + std::size_t(kv) * n * d;
    double* o = output + std::size_t(row) * d;
    exact_row(qi, kh, vh, i, d, scale, o, &log_normalizer[row]);
  }
};

/// One group's views into the per-group arrays of a SimView, given its attention scratch `att`
/// (sim_weight_stride doubles: attention [g][capacity], then the aggregate, maxima and sums).
struct GroupArrays {
  double *agg, *head_top, *head_sum, *score;
  const float *k, *v;
};
SUBEVICT_HD inline GroupArrays group_arrays(const SimView& s, int group, double* att) {
  const int g = s.q_heads / s.kv_heads;
  double* agg = att + std::size_t(s.capacity) * g;
  return {agg, agg + s.capacity, agg + s.capacity + g, s.score + std::size_t(group) * s.n,
          s.k + std::size_t(group) * s.n * s.d, s.v + std::size_t(group) * s.n * s.d};
}

/// The eviction key of token t at step i (smaller leaves first) and whether t may leave:
/// h2o accumulated score outside the recent window, local / streamingllm age (equal keys, so the
/// lowest token), l2norm -||k_t||, tova the current attention.
SUBEVICT_HD inline bool eligible(const SimView& s, int i, int t) {
  if (s.policy == 0) return t <= i - s.recent;
  if (s.policy == 2) return t >= s.sinks;
  return true;
}
SUBEVICT_HD inline double eviction_key(const SimView& s, const double* score, int t) {
  return (s.policy == 1 || s.policy == 2) ? 0.0 : score[t];
}

}  // namespace subevict::kernels::detail
