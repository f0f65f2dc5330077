#pragma once
/// \file
/// Internal: the CUDA backend's hand-written kernels as block-level bodies, written against a
/// `Block` execution context instead of CUDA's built-ins, so that one source runs on a device
/// (kernels/cuda_backend.cu: DeviceBlock, threadIdx / __syncthreads) and, in the tests, on CPU
/// threads under a deterministic block emulator (tests/kernels/block_emulator.hpp), which lets
/// CI check every kernel against the reference without a GPU.
///
/// Each kernel is a functor with a kName and `template <class Block> operator()(const Block&)`.
/// A Block provides (all SUBEVICT_HD, reached by every thread of the block alike):
///   int thread() const, threads() const      this thread's index and the block size (a power of 2)
///   int block_x() const, block_y() const     the block's grid coordinates
///   void sync() const                        a barrier of the whole block (__syncthreads)
///   unsigned char* shared() const            the block's dynamic shared memory (16-byte aligned)
///   void atomic_add(unsigned long long* p, unsigned long long v) const
/// No kernel keeps static __shared__ arrays: each carves its shared memory with SharedCarver, so
/// the host computes the launch's shared bytes with the same carving (the *_shared_bytes below).
///
/// Statistics: row_pass (online softmax per query row over key tiles: L_i and the row maximum),
/// column_pass (per key over query tiles: column sums, counts below tau), oracle_pass (a few rows
/// per block sharing staged key tiles: U_i by a block-parallel bisection, row_kernels.hpp
/// top_k_mass). Simulation:
/// simulate_group_block (one block per (layer, KV head), greedy/simulator.cpp semantics).

#include <math.h>  // fmaf, the same name on host and device

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/detail/row_kernels.hpp"

namespace subevict::kernels::detail {

/// Kernels whose tiles hold more dims than this fall back to the portable source (two tiles of
/// 32 x (d + 1) floats: 33 KiB at d = 128, 66 KiB at 256).
inline constexpr int kMaxTiledDim = 256;

/// <a, b> over d floats in index order with fused multiply-adds. The build disables FMA contraction
/// (bit-identical workloads), so the statistics kernels fuse explicitly: one FFMA per term on a
/// device instead of a multiply and an add (half the FP32 roof). Higham's bound of
/// kernel_tolerance.hpp holds for the fused sum as for the plain one.
SUBEVICT_HD inline float fused_dot(const float* a, const float* b, int d) {
  float sum = 0.0f;
  for (int x = 0; x < d; ++x) sum = fmaf(a[x], b[x], sum);
  return sum;
}

/// A Block of one thread: runs a block kernel as plain serial code (barriers are no-ops), one call
/// per block, e.g. from a Thrust functor on CPU threads (the portable backend's simulation).
struct SerialBlock {
  int x = 0, y = 0;
  unsigned char* memory = nullptr;  ///< this block's "shared" scratch
  SUBEVICT_HD int thread() const { return 0; }
  SUBEVICT_HD int threads() const { return 1; }
  SUBEVICT_HD int block_x() const { return x; }
  SUBEVICT_HD int block_y() const { return y; }
  SUBEVICT_HD void sync() const {}
  SUBEVICT_HD unsigned char* shared() const { return memory; }
  SUBEVICT_HD void atomic_add(unsigned long long* p, unsigned long long v) const {
#ifdef __CUDA_ARCH__
    atomicAdd(p, v);
#else
    __atomic_fetch_add(p, v, __ATOMIC_RELAXED);  // blocks may run on concurrent CPU threads
#endif
  }
};

/// Hands out aligned pieces of a shared-memory region in order; with base 0 it only measures.
struct SharedCarver {
  std::uintptr_t base = 0;
  std::size_t offset = 0;
  template <class T>
  SUBEVICT_HD T* take(std::size_t count) {
    offset = (offset + alignof(T) - 1) / alignof(T) * alignof(T);
    T* at = reinterpret_cast<T*>(base + offset);
    offset += count * sizeof(T);
    return at;
  }
};

/// The bytes that `carve(carver, args...)` takes from a region: a launch's dynamic shared memory.
template <class Carve, class... Args>
std::size_t carved_bytes(Carve carve, Args... args) {
  SharedCarver c;
  (void)carve(c, args...);
  return c.offset;
}

/// Reduces one value per thread with `op` over a tree in `red` (threads() entries); every thread
/// gets the result.
template <class Block, class T, class Op>
SUBEVICT_HD T block_reduce(const Block& b, T v, T* red, Op op) {
  red[b.thread()] = v;
  b.sync();
  for (int s = b.threads() / 2; s > 0; s /= 2) {
    if (b.thread() < s) red[b.thread()] = op(red[b.thread()], red[b.thread() + s]);
    b.sync();
  }
  const T out = red[0];
  b.sync();
  return out;
}
struct PlusOp {
  template <class T>
  SUBEVICT_HD T operator()(T a, T b) const { return a + b; }
};
struct MaxOp {
  SUBEVICT_HD double operator()(double a, double b) const { return a > b ? a : b; }
};

/// The d-dim rows first .. first + threads() - 1 of a tokens x d matrix into a tile with row
/// stride d + 1 (the padding spreads one thread's row reads over the banks); rows past n are 0.
template <class Block>
SUBEVICT_HD void load_tile(const Block& b, float* tile, const float* rows, int first, int n, int d) {
  const int tile_rows = b.threads();
  for (int e = b.thread(); e < tile_rows * d; e += tile_rows) {
    const int r = e / d, x = e % d;
    tile[r * (d + 1) + x] = first + r < n ? rows[std::size_t(first + r) * d + x] : 0.0f;
  }
}

/// Shared bytes of row_pass and column_pass: two tiles of `tile_rows` x (d + 1) floats.
inline std::size_t tile_shared_bytes(int tile_rows, int d) {
  return 2 * std::size_t(tile_rows) * std::size_t(d + 1) * sizeof(float);
}

/// What the statistics kernels read: Q [head][token][d], K [kv head][token][d] (device memory).
struct StatsView {
  const float *q, *k;
  int n, d, q_heads, group;
  double scale, tau;
  int budget;
  double *log_normalizer, *column_sum, *oracle_mass;  // [head][token]
  float* row_max;                                     // [head][token]
  unsigned long long* below;                          // [head]
  SUBEVICT_HD const float* q_rows(int head) const { return q + std::size_t(head) * n * d; }
  SUBEVICT_HD const float* k_rows(int head) const { return k + kv_index(std::size_t(head), q_heads, group) * n * d; }
};

/// Pass 1, grid (ceil(n / threads), heads), one thread per query row: an online softmax over the
/// key tiles up to the row's tile gives L_i and the row's maximum score.
struct RowPass {
  static constexpr const char* kName = "row_pass";
  StatsView v;
  template <class Block>
  SUBEVICT_HD void operator()(const Block& b) const {
    const int tile_rows = b.threads(), stride = v.d + 1, head = b.block_y();
    float* q_tile = reinterpret_cast<float*>(b.shared());
    float* k_tile = q_tile + tile_rows * stride;
    const int first = b.block_x() * tile_rows, i = first + b.thread();
    load_tile(b, q_tile, v.q_rows(head), first, v.n, v.d);
    float top = -INFINITY;
    double sum = 0.0;
    for (int key_first = 0; key_first <= first; key_first += tile_rows) {
      b.sync();
      load_tile(b, k_tile, v.k_rows(head), key_first, v.n, v.d);
      b.sync();
      if (i >= v.n) continue;
      for (int r = 0; r < tile_rows && key_first + r <= i; ++r) {
        const float s = float(v.scale * double(fused_dot(q_tile + b.thread() * stride, k_tile + r * stride, v.d)));
        if (s > top) {
          sum *= std::exp(double(top) - double(s));  // 0 on the first key
          top = s;
        }
        sum += std::exp(double(s) - double(top));
      }
    }
    if (i < v.n) {
      v.log_normalizer[std::size_t(head) * v.n + i] = double(top) + std::log(sum);
      v.row_max[std::size_t(head) * v.n + i] = top;
    }
  }
};

/// Pass 2, grid (ceil(n / threads), heads), one thread per key column j: the column sum over the
/// query tiles i >= j and the entries below tau x the row maximum (after row_pass).
struct ColumnPass {
  static constexpr const char* kName = "column_pass";
  StatsView v;
  template <class Block>
  SUBEVICT_HD void operator()(const Block& b) const {
    const int tile_rows = b.threads(), stride = v.d + 1, head = b.block_y();
    float* k_tile = reinterpret_cast<float*>(b.shared());
    float* q_tile = k_tile + tile_rows * stride;
    const int first = b.block_x() * tile_rows, j = first + b.thread();
    const std::size_t at = std::size_t(head) * v.n;
    load_tile(b, k_tile, v.k_rows(head), first, v.n, v.d);
    double sum = 0.0;
    unsigned long long count = 0;
    for (int query_first = first; query_first < v.n; query_first += tile_rows) {
      b.sync();
      load_tile(b, q_tile, v.q_rows(head), query_first, v.n, v.d);
      b.sync();
      if (j >= v.n) continue;
      for (int r = 0; r < tile_rows && query_first + r < v.n; ++r) {
        const int i = query_first + r;
        if (i < j) continue;
        const float s = float(v.scale * double(fused_dot(q_tile + r * stride, k_tile + b.thread() * stride, v.d)));
        sum += std::exp(double(s) - v.log_normalizer[at + i]);
        count += std::exp(double(s) - double(v.row_max[at + i])) < v.tau;
      }
    }
    if (j < v.n) {
      v.column_sum[at + j] = sum;
      b.atomic_add(v.below + head, count);
    }
  }
};

/// Query rows per oracle_pass block: the key tiles staged in shared memory serve this many rows.
inline constexpr int kOracleRows = 4;

/// Shared memory of oracle_pass for `rows` query rows per block: reduction arrays, the k-th
/// score, the rows' queries, a tile of threads / rows keys (row stride d + 1), and the rows'
/// scores (n each).
struct OracleShared {
  double* red;
  int* count_red;
  float* kth;
  float* q;       // [rows][d]
  float* k_tile;  // [threads / rows][d + 1]
  float* s;       // [rows][n]
};
SUBEVICT_HD inline OracleShared oracle_shared(SharedCarver& c, int threads, int rows, int n, int d) {
  OracleShared out;
  out.red = c.take<double>(std::size_t(threads));
  out.count_red = c.take<int>(std::size_t(threads));
  out.kth = c.take<float>(1);
  out.q = c.take<float>(std::size_t(rows) * d);
  out.k_tile = c.take<float>(std::size_t(threads / rows) * (d + 1));
  out.s = c.take<float>(std::size_t(rows) * n);
  return out;
}
inline std::size_t oracle_shared_bytes(int threads, int rows, int n, int d) {
  return carved_bytes(oracle_shared, threads, rows, n, d);
}

/// Pass 3, grid (ceil(n / rows), heads), `rows` query rows per block (a divisor of the block
/// size; after row_pass). Scores: the block stages tiles of threads / rows keys in shared memory
/// (coalesced loads, each tile serving all the block's rows), thread t scoring key t % tile
/// against row t / tile. Then per row, with the whole block, U_i = a_ii + the `budget` largest
/// a_ij over j < i, the k-th largest found by bisection on the order key with block-wide counts
/// (row_kernels.hpp top_k_mass).
struct OraclePass {
  static constexpr const char* kName = "oracle_pass";
  StatsView v;
  int rows;
  template <class Block>
  SUBEVICT_HD void operator()(const Block& b) const {
    SharedCarver carver{reinterpret_cast<std::uintptr_t>(b.shared())};
    const OracleShared sh = oracle_shared(carver, b.threads(), rows, v.n, v.d);
    const int head = b.block_y(), tid = b.thread(), step = b.threads(), d = v.d;
    const int first = b.block_x() * rows, count = rows < v.n - first ? rows : v.n - first;
    const int tile = step / rows, key = tid % tile, row = tid / tile;
    const float* qh = v.q_rows(head);
    for (int e = tid; e < rows * d; e += step) {
      sh.q[e] = e / d < count ? qh[std::size_t(first) * d + e] : 0.0f;
    }
    const int last = first + count - 1;
    for (int key_first = 0; key_first <= last; key_first += tile) {
      b.sync();  // the previous tile's scores are done (and the queries are loaded)
      for (int e = tid; e < tile * d; e += step) {
        const int r = e / d, x = e % d;
        sh.k_tile[r * (d + 1) + x] = key_first + r <= last ? v.k_rows(head)[std::size_t(key_first + r) * d + x] : 0.0f;
      }
      b.sync();
      const int j = key_first + key;
      if (row < count && j <= first + row) {
        sh.s[std::size_t(row) * v.n + j] =
            float(v.scale * double(fused_dot(sh.q + row * d, sh.k_tile + key * (d + 1), d)));
      }
    }
    b.sync();
    for (int r = 0; r < count; ++r) {
      const int i = first + r;
      const float* s = sh.s + std::size_t(r) * v.n;
      const double mass = block_top_k_mass(b, s, i, v.budget, v.log_normalizer[std::size_t(head) * v.n + i], sh);
      if (tid == 0) {
        v.oracle_mass[std::size_t(head) * v.n + i] =
            std::exp(double(s[i]) - v.log_normalizer[std::size_t(head) * v.n + i]) + mass;
      }
    }
  }

 private:
  /// row_kernels.hpp top_k_mass(s, i, k, L) with the block: the largest key K with
  /// #{j < i : key_j >= K} >= k is the key of the k-th largest score.
  template <class Block>
  SUBEVICT_HD static double block_top_k_mass(const Block& b, const float* s, int i, int budget, double L,
                                             const OracleShared& sh) {
    const int tid = b.thread(), step = b.threads();
    const int take = budget < i ? budget : i;
    double mass = 0.0;
    if (take >= i) {
      for (int j = tid; j < i; j += step) mass += std::exp(double(s[j]) - L);
      return block_reduce(b, mass, sh.red, PlusOp{});
    }
    if (take <= 0) return 0.0;
    std::uint32_t lo = 0, hi = 0xffffffffu;
    while (lo < hi) {
      const std::uint32_t mid = lo + (hi - lo) / 2 + 1;
      int at_least = 0;
      for (int j = tid; j < i; j += step) at_least += order_key(s[j]) >= mid;
      if (block_reduce(b, at_least, sh.count_red, PlusOp{}) >= take) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    int above = 0;
    for (int j = tid; j < i; j += step) {
      const std::uint32_t key = order_key(s[j]);
      if (key > lo) {
        mass += std::exp(double(s[j]) - L);
        ++above;
      } else if (key == lo) {
        *sh.kth = s[j];  // every writer stores the same value
      }
    }
    mass = block_reduce(b, mass, sh.red, PlusOp{});  // its barriers publish *kth
    above = block_reduce(b, above, sh.count_red, PlusOp{});
    return mass + double(take - above) * std::exp(double(*sh.kth) - L);
  }
};

/// Shared memory of simulate_group_block: reduction arrays, the cache size and flag, and (when
/// `cache_in_shared`) the group's attention scratch and slots; else those live in the SimView's
/// global arrays.
struct SimShared {
  double* red;
  double* att;  // nullptr when the cache is in global memory
  int* token_red;
  std::int32_t* slot;  // nullptr when the cache is in global memory
  int* size;
  int* evicted_any;
};
SUBEVICT_HD inline SimShared sim_shared(SharedCarver& c, int threads, int capacity, int g, bool cache_in_shared) {
  SimShared out;
  out.red = c.take<double>(std::size_t(threads));
  out.att = cache_in_shared ? c.take<double>(sim_weight_stride(capacity, g)) : nullptr;
  out.token_red = c.take<int>(std::size_t(threads));
  out.slot = cache_in_shared ? c.take<std::int32_t>(std::size_t(capacity)) : nullptr;
  out.size = c.take<int>(1);
  out.evicted_any = c.take<int>(1);
  return out;
}
inline std::size_t sim_shared_bytes(int threads, int capacity, int g, bool cache_in_shared) {
  return carved_bytes(sim_shared, threads, capacity, g, cache_in_shared);
}

/// Grid (groups), one block per (layer, KV head) group: the GQA group's query heads in the same
/// block, greedy/simulator.cpp semantics with prefill 0: push token i, the tracked softmax per
/// query head over the cache in slot order, the metrics against the exact row, the policy's
/// choice, swap-with-last removal; block-parallel over cache members and dims. The exact rows
/// (log_normalizer, exact_output) are inputs. O(n k g d) per group. The portable backend runs it
/// with a SerialBlock per group.
struct SimulateGroups {
  static constexpr const char* kName = "simulate_groups";
  SimView v;
  bool cache_in_shared;
  template <class Block>
  SUBEVICT_HD void operator()(const Block& b) const {
    const int group = b.block_x(), tid = b.thread(), step = b.threads();
    const int layer = group / v.kv_heads, kv = group % v.kv_heads, g = v.q_heads / v.kv_heads;
    const int n = v.n, d = v.d, budget = v.budget[group], cap = v.capacity;
    SharedCarver carver{reinterpret_cast<std::uintptr_t>(b.shared())};
    const SimShared sh = sim_shared(carver, step, cap, g, cache_in_shared);
    double* att = cache_in_shared ? sh.att : v.weights + std::size_t(group) * sim_weight_stride(cap, g);
    std::int32_t* slot = cache_in_shared ? sh.slot : v.slots + std::size_t(group) * cap;
    const GroupArrays arrays = group_arrays(v, group, att);
    double *agg = arrays.agg, *head_top = arrays.head_top, *head_sum = arrays.head_sum, *score_of = arrays.score;
    const float *kh = arrays.k, *vh = arrays.v;
    for (int t = tid; t < n; t += step) {
      double norm2 = 0.0;
      if (v.policy == kL2Norm) {
        for (int x = 0; x < d; ++x) norm2 += double(kh[std::size_t(t) * d + x]) * double(kh[std::size_t(t) * d + x]);
      }
      score_of[t] = v.policy == kL2Norm ? -std::sqrt(norm2) : 0.0;
    }
    if (tid == 0) {
      *sh.size = 0;
      *sh.evicted_any = 0;
    }
    b.sync();
    for (int i = 0; i < n; ++i) {
      const bool full = *sh.size == budget;
      b.sync();
      if (tid == 0) slot[(*sh.size)++] = i;
      b.sync();
      const int m = *sh.size;
      for (int h = 0; h < g; ++h) {
        const float* qi = v.q + ((std::size_t(layer) * v.q_heads + std::size_t(kv) * g + h) * n + i) * d;
        double* a = att + std::size_t(h) * m;
        double top = -INFINITY;
        for (int e = tid; e < m; e += step) {
          const float* kt = kh + std::size_t(slot[e]) * d;
          double l = 0.0;
          for (int x = 0; x < d; ++x) l += (v.scale * double(qi[x])) * double(kt[x]);
          a[e] = l;
          top = l > top ? l : top;
        }
        top = block_reduce(b, top, sh.red, MaxOp{});
        double sum = 0.0;
        for (int e = tid; e < m; e += step) sum += (a[e] = std::exp(a[e] - top));
        sum = block_reduce(b, sum, sh.red, PlusOp{});
        for (int e = tid; e < m; e += step) a[e] /= sum;
        if (tid == 0) {
          head_top[h] = top;
          head_sum[h] = sum;
        }
      }
      b.sync();
      const double* group_att = att;
      if (g > 1) {
        for (int e = tid; e < m; e += step) agg[e] = aggregate_member(att, m, g, e, v.aggregation);
        group_att = agg;  // each thread reads back only the members it wrote
      }
      for (int h = 0; h < g; ++h) {
        const std::size_t row = (std::size_t(layer) * v.q_heads + std::size_t(kv) * g + h) * n + i;
        double r = 1.0, err = 0.0;
        if (*sh.evicted_any) {
          const double* o = v.exact_output + row * d;
          const double* a = att + std::size_t(h) * m;
          double diff2 = 0.0, norm2 = 0.0;
          for (int x = tid; x < d; x += step) add_output_error_terms(o, a, slot, vh, m, d, x, &diff2, &norm2);
          diff2 = block_reduce(b, diff2, sh.red, PlusOp{});
          norm2 = block_reduce(b, norm2, sh.red, PlusOp{});
          r = std::exp(head_top[h] - v.log_normalizer[row]) * head_sum[h];
          r = r < 1.0 ? r : 1.0;
          err = norm2 > 0.0 ? std::sqrt(diff2) / std::sqrt(norm2) : std::sqrt(diff2);
        }
        if (tid == 0) {
          v.retained[(std::size_t(group) * n + i) * g + h] = r;
          v.error[(std::size_t(group) * n + i) * g + h] = err;
        }
      }
      for (int e = tid; e < m; e += step) {
        if (v.policy == kH2o) score_of[slot[e]] += group_att[e];
        if (v.policy == kTova) score_of[slot[e]] = group_att[e];
      }
      b.sync();
      if (full) {
        evict_one(b, i, m, slot, score_of, sh);
      } else if (tid == 0) {
        v.evicted[std::size_t(group) * n + i] = kNoEvictionCode;
      }
      b.sync();
    }
  }

 private:
  static constexpr std::int32_t kNoEvictionCode = -1;
  static constexpr int kNoToken = 0x7fffffff;

  /// The block argmin of (eviction key, token) over the eligible members, then the swap-with-last
  /// removal by thread 0 (reads score_of after the scores' barrier).
  template <class Block>
  SUBEVICT_HD void evict_one(const Block& b, int i, int m, std::int32_t* slot, const double* score_of,
                             const SimShared& sh) const {
    const int tid = b.thread();
    double best_key = INFINITY;
    int best_token = kNoToken;
    for (int e = tid; e < m; e += b.threads()) {
      const int t = slot[e];
      if (!eligible(v, i, t)) continue;
      const double key = eviction_key(v, score_of, t);
      if (key < best_key || (key == best_key && t < best_token)) {
        best_key = key;
        best_token = t;
      }
    }
    sh.red[tid] = best_key;
    sh.token_red[tid] = best_token;
    b.sync();
    for (int s = b.threads() / 2; s > 0; s /= 2) {
      if (tid < s) {
        const double other = sh.red[tid + s];
        const int other_token = sh.token_red[tid + s];
        if (other < sh.red[tid] || (other == sh.red[tid] && other_token < sh.token_red[tid])) {
          sh.red[tid] = other;
          sh.token_red[tid] = other_token;
        }
      }
      b.sync();
    }
    if (tid == 0) {
      const int out = sh.token_red[0] == kNoToken ? slot[0] : sh.token_red[0];
      for (int e = 0; e < m; ++e) {
        if (slot[e] == out) {
          slot[e] = slot[m - 1];
          break;
        }
      }
      --*sh.size;
      *sh.evicted_any = 1;
      v.evicted[std::size_t(b.block_x()) * v.n + i] = out;
    }
  }
};

}  // namespace subevict::kernels::detail
