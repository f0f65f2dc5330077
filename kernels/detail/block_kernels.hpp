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
/// Statistics: row_pass (register-tiled scores, an online softmax per query row: L_i and the row
/// maximum), column_pass (the same tiles: column sums, counts below tau), oracle_pass (a few rows
/// per block sharing staged key tiles: U_i by block_top_k_mass). Simulation: SimulateGroups (one
/// block per (layer, KV head), greedy/eviction/evaluation/simulator.cpp semantics). SerialBlock runs any of them as
/// plain serial code (the portable backend's simulation and top-k selection).

#include <math.h>  // fmaf, the same name on host and device

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "kernels/detail/row_kernels.hpp"

namespace subevict::kernels::detail {

/// Heads with more dims than this fall back to the portable source (the tiled passes hold two
/// transposed tiles of d x 68 floats: 68 KiB at d = 128, 136 KiB at 256).
inline constexpr int kMaxTiledDim = 256;

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

/// Hands out aligned pieces of a shared-memory region in order; with a null base it only measures
/// (every piece is null). Pointers stay derived from the base pointer, so a compiler that knows
/// the base is shared memory keeps shared-memory loads (no round trip through an integer).
struct SharedCarver {
  unsigned char* base = nullptr;
  std::size_t offset = 0;
  /// `count` T's at the next multiple of `align` (a multiple of alignof(T); the region's base is
  /// 16-byte aligned).
  template <class T>
  SUBEVICT_HD T* take(std::size_t count, std::size_t align = alignof(T)) {
    offset = (offset + align - 1) / align * align;
    T* at = base == nullptr ? nullptr : reinterpret_cast<T*>(base + offset);
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

/// The sum of the `k` largest exp(s_j - L) over j < count, with the whole block (every thread
/// calls it alike; ties: any k of the equal ones, they carry equal mass). The k-th largest score
/// is found by bisection on its order key: the largest key K with #{j : key_j >= K} >= k, by 32
/// block-wide counting sweeps, so it needs no sort and no memory beyond the reduction arrays `red`
/// and `count_red` (threads() each) and *kth. O(32 count / threads()).
template <class Block>
SUBEVICT_HD double block_top_k_mass(const Block& b, const float* s, int count, int k, double L, double* red,
                                    int* count_red, float* kth) {
  const int tid = b.thread(), step = b.threads();
  const int take = k < count ? k : count;
  double mass = 0.0;
  if (take >= count) {
    for (int j = tid; j < count; j += step) mass += std::exp(double(s[j]) - L);
    return block_reduce(b, mass, red, PlusOp{});
  }
  if (take <= 0) return 0.0;
  std::uint32_t lo = 0, hi = 0xffffffffu;
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2 + 1;
    int at_least = 0;
    for (int j = tid; j < count; j += step) at_least += order_key(s[j]) >= mid;
    if (block_reduce(b, at_least, count_red, PlusOp{}) >= take) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  int above = 0;
  for (int j = tid; j < count; j += step) {
    const std::uint32_t key = order_key(s[j]);
    if (key > lo) {
      mass += std::exp(double(s[j]) - L);
      ++above;
    } else if (key == lo) {
      *kth = s[j];  // every writer stores the same value
    }
  }
  mass = block_reduce(b, mass, red, PlusOp{});  // its barriers publish *kth
  above = block_reduce(b, above, count_red, PlusOp{});
  return mass + double(take - above) * std::exp(double(*kth) - L);
}

/// block_top_k_mass on one thread: the serial selection of the portable backend.
SUBEVICT_HD inline double top_k_mass(const float* s, int count, int k, double L) {
  double red = 0.0;
  int count_red = 0;
  float kth = 0.0f;
  return block_top_k_mass(SerialBlock{}, s, count, k, L, &red, &count_red, &kth);
}

/// Rows (queries) and columns (keys) of one thread's register micro-tile in row_pass and
/// column_pass. Their blocks are side x side threads (tid = ty * side + tx) covering a tile of
/// side * kMicro queries x side * kMicro keys.
inline constexpr int kMicro = 4;

/// Padding of the transposed tiles' rows (x-major, TM + kTilePad floats per dim): keeps each
/// thread's kMicro entries 16-byte aligned for vector loads.
inline constexpr int kTilePad = 4;

static_assert(kMicro == 4, "micro-tiles are loaded as float4");

/// v[0..3] = p[0..3]: one 16-byte shared-memory load on a device, so p must be 16-byte aligned
/// (checked on the host, where the emulator runs the kernels: a misaligned layout aborts).
SUBEVICT_HD inline void load4(const float* p, float (&v)[4]) {
#ifdef __CUDA_ARCH__
  const float4 f = *reinterpret_cast<const float4*>(p);
  v[0] = f.x;
  v[1] = f.y;
  v[2] = f.z;
  v[3] = f.w;
#else
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) std::abort();
  for (int e = 0; e < 4; ++e) v[e] = p[e];
#endif
}

/// Loads rows first .. first + rows - 1 of a tokens x d matrix transposed into tile[x][r] (row
/// stride rows + kTilePad; rows past n are 0). Consecutive threads read consecutive floats of a
/// row (coalesced).
template <class Block>
SUBEVICT_HD void load_transposed(const Block& b, float* tile, const float* matrix, int first, int rows, int n, int d) {
  for (int e = b.thread(); e < rows * d; e += b.threads()) {
    const int r = e / d, x = e % d;
    tile[x * (rows + kTilePad) + r] = first + r < n ? matrix[std::size_t(first + r) * d + x] : 0.0f;
  }
}

/// The kMicro x kMicro scores acc[r][c] = <q_r, k_c> of one thread: queries r of column
/// q_col .. + kMicro of the transposed query tile, keys c of column k_col .. + kMicro of the
/// transposed key tile (both with `stride` floats per dim). Every score of every pass is the same
/// chain acc = fmaf(q_x, k_x, acc) over x in index order from 0, so the passes derive
/// bit-identical scores. The build disables FMA contraction (bit-identical workloads), so the
/// kernels fuse explicitly: one FFMA per term on a device, not a multiply and an add (half the
/// FP32 roof); Higham's bound of kernel_tolerance.hpp holds for the fused sum as for the plain one.
SUBEVICT_HD inline void micro_tile_scores(const float* q_tile, const float* k_tile, int stride, int q_col, int k_col,
                                          int d, float (&acc)[kMicro][kMicro]) {
  for (int r = 0; r < kMicro; ++r) {
    for (int c = 0; c < kMicro; ++c) acc[r][c] = 0.0f;
  }
  for (int x = 0; x < d; ++x) {
    float a[kMicro], k[kMicro];
    load4(q_tile + x * stride + q_col, a);
    load4(k_tile + x * stride + k_col, k);
    for (int r = 0; r < kMicro; ++r) {
      for (int c = 0; c < kMicro; ++c) acc[r][c] = fmaf(a[r], k[c], acc[r][c]);
    }
  }
}

/// Shared memory of row_pass and column_pass (tiles of `rows` = side * kMicro queries and keys):
/// the transposed query and key tiles, and the per-thread partials merged at the end (per query
/// row and thread column: the maximum and sum of row_pass; per key and thread row: the column
/// sums of column_pass), and the count reduction.
struct TileShared {
  float* q_tile;               // [d][rows + kTilePad]
  float* k_tile;               // [d][rows + kTilePad]
  double* partial_sum;         // [rows][side]
  float* partial_top;          // [rows][side]
  double* row_log_normalizer;  // [rows] (column_pass: the query tile's L_i)
  float* row_top;              // [rows] (column_pass: the query tile's row maxima)
  unsigned long long* count_red;  // [side * side]
};
SUBEVICT_HD inline TileShared tile_shared(SharedCarver& c, int side, int d) {
  const int rows = side * kMicro;
  TileShared out;
  out.partial_sum = c.take<double>(std::size_t(rows) * side);
  out.row_log_normalizer = c.take<double>(std::size_t(rows));
  out.count_red = c.take<unsigned long long>(std::size_t(side) * side);
  out.q_tile = c.take<float>(std::size_t(d) * (rows + kTilePad), 16);  // vector loads (load4)
  out.k_tile = c.take<float>(std::size_t(d) * (rows + kTilePad), 16);
  out.partial_top = c.take<float>(std::size_t(rows) * side);
  out.row_top = c.take<float>(std::size_t(rows));
  return out;
}
inline std::size_t tile_shared_bytes(int side, int d) { return carved_bytes(tile_shared, side, d); }

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
  /// A score as every pass takes it: the fused dot product scaled in double, rounded to float.
  SUBEVICT_HD float score(float dot) const { return float(scale * double(dot)); }
};

/// The side of a square block of `threads` threads (a power of 4), as the tiled passes lay it out.
SUBEVICT_HD inline int tile_side(int threads) {
  int side = 1;
  while (side * side < threads) side *= 2;
  return side;
}

/// Pass 1, grid (ceil(n / TM), heads), side x side threads, TM = side * kMicro query rows per
/// block: for every key tile up to the block's last row, each thread scores its kMicro x kMicro
/// micro-tile from the transposed shared tiles and keeps an online softmax (maximum, sum) per
/// query row over its keys; the side partials of each row then merge into L_i and the row
/// maximum. Per-entry exponentials in float (expf), sums in double.
struct RowPass {
  static constexpr const char* kName = "row_pass";
  StatsView v;
  template <class Block>
  SUBEVICT_HD void operator()(const Block& b) const {
    const int side = tile_side(b.threads()), rows = side * kMicro, stride = rows + kTilePad;
    const int tid = b.thread(), tx = tid % side, ty = tid / side, head = b.block_y();
    SharedCarver carver{b.shared()};
    const TileShared sh = tile_shared(carver, side, v.d);
    const int first = b.block_x() * rows;
    load_transposed(b, sh.q_tile, v.q_rows(head), first, rows, v.n, v.d);
    float top[kMicro];
    double sum[kMicro];
    for (int r = 0; r < kMicro; ++r) {
      top[r] = -INFINITY;
      sum[r] = 0.0;
    }
    for (int key_first = 0; key_first < first + rows && key_first < v.n; key_first += rows) {
      b.sync();  // the previous key tile is no longer read
      load_transposed(b, sh.k_tile, v.k_rows(head), key_first, rows, v.n, v.d);
      b.sync();
      float acc[kMicro][kMicro];
      micro_tile_scores(sh.q_tile, sh.k_tile, stride, ty * kMicro, tx * kMicro, v.d, acc);
      for (int r = 0; r < kMicro; ++r) {
        const int i = first + ty * kMicro + r;
        for (int c = 0; c < kMicro; ++c) {
          const int j = key_first + tx * kMicro + c;
          if (j > i || i >= v.n) continue;
          const float s = v.score(acc[r][c]);
          if (s > top[r]) {
            sum[r] *= double(expf(top[r] - s));  // 0 on the row's first key
            top[r] = s;
          }
          sum[r] += double(expf(s - top[r]));
        }
      }
    }
    for (int r = 0; r < kMicro; ++r) {
      sh.partial_top[(ty * kMicro + r) * side + tx] = top[r];
      sh.partial_sum[(ty * kMicro + r) * side + tx] = sum[r];
    }
    b.sync();
    for (int row = tid; row < rows; row += b.threads()) {
      const int i = first + row;
      if (i >= v.n) continue;
      float best = -INFINITY;
      for (int t = 0; t < side; ++t) best = sh.partial_top[row * side + t] > best ? sh.partial_top[row * side + t] : best;
      double total = 0.0;
      for (int t = 0; t < side; ++t) {
        const float part = sh.partial_top[row * side + t];
        if (part != -INFINITY) total += sh.partial_sum[row * side + t] * std::exp(double(part) - double(best));
      }
      v.log_normalizer[std::size_t(head) * v.n + i] = double(best) + std::log(total);
      v.row_max[std::size_t(head) * v.n + i] = best;
    }
  }
};

/// Pass 2, grid (ceil(n / TN), heads), side x side threads, TN = side * kMicro keys per block
/// (after row_pass): over the query tiles from the block's first key on, each thread scores its
/// micro-tile and adds a_ij = exp(s_ij - L_i) to its keys' partial column sums and counts the
/// entries with s_ij - max_j s_ij < log tau (a_ij < tau x the row maximum); the side partials of
/// each key then merge into the column sum, the counts into the head's total.
struct ColumnPass {
  static constexpr const char* kName = "column_pass";
  StatsView v;
  template <class Block>
  SUBEVICT_HD void operator()(const Block& b) const {
    const int side = tile_side(b.threads()), cols = side * kMicro, stride = cols + kTilePad;
    const int tid = b.thread(), tx = tid % side, ty = tid / side, head = b.block_y();
    SharedCarver carver{b.shared()};
    const TileShared sh = tile_shared(carver, side, v.d);
    const std::size_t at = std::size_t(head) * v.n;
    const int first = b.block_x() * cols;
    const double log_tau = std::log(v.tau);
    load_transposed(b, sh.k_tile, v.k_rows(head), first, cols, v.n, v.d);
    double column[kMicro];
    for (int c = 0; c < kMicro; ++c) column[c] = 0.0;
    unsigned long long count = 0;
    for (int query_first = first; query_first < v.n; query_first += cols) {
      b.sync();  // the previous query tile and its rows' L_i are no longer read
      load_transposed(b, sh.q_tile, v.q_rows(head), query_first, cols, v.n, v.d);
      for (int r = tid; r < cols; r += b.threads()) {
        const bool inside = query_first + r < v.n;
        sh.row_log_normalizer[r] = inside ? v.log_normalizer[at + query_first + r] : 0.0;
        sh.row_top[r] = inside ? v.row_max[at + query_first + r] : 0.0f;
      }
      b.sync();
      float acc[kMicro][kMicro];
      micro_tile_scores(sh.q_tile, sh.k_tile, stride, ty * kMicro, tx * kMicro, v.d, acc);
      for (int r = 0; r < kMicro; ++r) {
        const int i = query_first + ty * kMicro + r;
        if (i >= v.n) continue;
        const double L = sh.row_log_normalizer[ty * kMicro + r], top = sh.row_top[ty * kMicro + r];
        for (int c = 0; c < kMicro; ++c) {
          const int j = first + tx * kMicro + c;
          if (j > i) continue;
          const double s = v.score(acc[r][c]);
          column[c] += double(expf(float(s - L)));
          count += s - top < log_tau;
        }
      }
    }
    for (int c = 0; c < kMicro; ++c) sh.partial_sum[(tx * kMicro + c) * side + ty] = column[c];
    b.sync();
    for (int key = tid; key < cols; key += b.threads()) {
      if (first + key >= v.n) continue;
      double total = 0.0;
      for (int t = 0; t < side; ++t) total += sh.partial_sum[key * side + t];
      v.column_sum[at + first + key] = total;
    }
    const unsigned long long below = block_reduce(b, count, sh.count_red, PlusOp{});
    if (tid == 0) b.atomic_add(v.below + head, below);
  }
};

/// Query rows per oracle_pass block: each staged key tile serves this many rows, and a thread
/// scores its key against all of them from one vector load of the transposed queries per dim.
inline constexpr int kOracleRows = kMicro;

/// Shared memory of oracle_pass for `rows` (<= kOracleRows) query rows per block: reduction
/// arrays, the k-th score, the rows' queries transposed ([d][kOracleRows], rows past `rows` 0), a
/// tile of `threads` keys (row stride d + 1), and the rows' scores (n each).
struct OracleShared {
  double* red;
  int* count_red;
  float* kth;
  float* q;       // [d][kOracleRows]
  float* k_tile;  // [threads][d + 1]
  float* s;       // [rows][n]
};
SUBEVICT_HD inline OracleShared oracle_shared(SharedCarver& c, int threads, int rows, int n, int d) {
  OracleShared out;
  out.red = c.take<double>(std::size_t(threads));
  out.count_red = c.take<int>(std::size_t(threads));
  out.kth = c.take<float>(1);
  out.q = c.take<float>(std::size_t(d) * kOracleRows, 16);  // vector loads (load4)
  out.k_tile = c.take<float>(std::size_t(threads) * (d + 1));
  out.s = c.take<float>(std::size_t(rows) * n);
  return out;
}
inline std::size_t oracle_shared_bytes(int threads, int rows, int n, int d) {
  return carved_bytes(oracle_shared, threads, rows, n, d);
}

/// Pass 3, grid (ceil(n / rows), heads), `rows` (<= kOracleRows) query rows per block (after
/// row_pass). Scores: the block stages tiles of threads() keys in shared memory (coalesced
/// loads), thread t scoring key t of the tile against all the block's rows. Then per row, with
/// the whole block, U_i = a_ii + the `budget` largest a_ij over j < i, the k-th largest found by
/// bisection on the order key with block-wide counts (block_top_k_mass).
struct OraclePass {
  static constexpr const char* kName = "oracle_pass";
  StatsView v;
  int rows;
  template <class Block>
  SUBEVICT_HD void operator()(const Block& b) const {
    SharedCarver carver{b.shared()};
    const OracleShared sh = oracle_shared(carver, b.threads(), rows, v.n, v.d);
    const int head = b.block_y(), tid = b.thread(), step = b.threads(), d = v.d;
    const int first = b.block_x() * rows, count = rows < v.n - first ? rows : v.n - first;
    const float* qh = v.q_rows(head);
    for (int e = tid; e < kOracleRows * d; e += step) {
      const int r = e / d, x = e % d;
      sh.q[x * kOracleRows + r] = r < count ? qh[std::size_t(first + r) * d + x] : 0.0f;
    }
    const int last = first + count - 1;
    for (int key_first = 0; key_first <= last; key_first += step) {
      b.sync();  // the previous tile's scores are done (and the queries are loaded)
      for (int e = tid; e < step * d; e += step) {
        const int r = e / d, x = e % d;
        sh.k_tile[r * (d + 1) + x] = key_first + r <= last ? v.k_rows(head)[std::size_t(key_first + r) * d + x] : 0.0f;
      }
      b.sync();
      const int j = key_first + tid;
      if (j > last) continue;
      float acc[kOracleRows] = {};
      const float* k = sh.k_tile + tid * (d + 1);
      for (int x = 0; x < d; ++x) {
        float q4[kOracleRows];
        load4(sh.q + x * kOracleRows, q4);
        for (int r = 0; r < kOracleRows; ++r) acc[r] = fmaf(q4[r], k[x], acc[r]);  // the chain of micro_tile_scores
      }
      for (int r = 0; r < kOracleRows; ++r) {  // constant bounds: acc stays in registers
        if (r < count && j <= first + r) sh.s[std::size_t(r) * v.n + j] = v.score(acc[r]);
      }
    }
    b.sync();
    for (int r = 0; r < count; ++r) {
      const int i = first + r;
      const float* s = sh.s + std::size_t(r) * v.n;
      const double mass = block_top_k_mass(b, s, i, v.budget, v.log_normalizer[std::size_t(head) * v.n + i],
                                           sh.red, sh.count_red, sh.kth);
      if (tid == 0) {
        v.oracle_mass[std::size_t(head) * v.n + i] =
            std::exp(double(s[i]) - v.log_normalizer[std::size_t(head) * v.n + i]) + mass;
      }
    }
  }

};

/// Shared memory of simulate_groups: reduction arrays, the cache size and flag, and (when
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
/// block, greedy/eviction/evaluation/simulator.cpp semantics with prefill 0: push token i, the tracked softmax per
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
    SharedCarver carver{b.shared()};
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
