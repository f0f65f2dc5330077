// The CUDA backend: workload generation is the portable source (kernels/portable.inl) compiled by
// nvcc for the CUDA device system; the statistics and the simulation have hand-written kernels:
//   statistics  a tiled online-softmax kernel (one thread per query row, key tiles in shared
//               memory) for L_i, the row maximum and the diagonal; a tiled column kernel (one
//               thread per key) for the column sums and the counts below tau; one block per row
//               for U_i (scores in shared memory, k-th largest by bisection as row_kernels.hpp).
//   simulation  one block per (layer, KV head): the GQA group's query heads in the same block,
//               the cache (slots, attention, aggregate) in shared memory where it fits, else in
//               global scratch; the exact rows it is measured against come from the portable
//               source's online-softmax functor.
// Shapes outside the kernels' limits (head_dim > kMaxTiledDim, rows that do not fit in shared
// memory) fall back to the portable source on the device.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#define SUBEVICT_PORTABLE_NS cuda_portable
#include "kernels/portable.inl"

namespace subevict::kernels::detail {
namespace {

using cuda_portable::raw;
using cuda_portable::to_host;

constexpr int kTile = 32;           // query rows / keys per tile (threads of the tiled kernels)
constexpr int kMaxTiledDim = 256;   // 2 tiles of 32 x (d + 1) floats: 33 KiB at d = 128, 66 KiB at 256
constexpr int kBlock = 128;         // threads of the per-row and per-group kernels

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string("cuda backend: ") + what + ": " + cudaGetErrorString(status));
}

int max_shared_bytes() {
  int device = 0, bytes = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), "shared memory limit");
  return bytes;
}

/// Reduces one value per thread of a kBlock-thread block with `op` (a tree in shared `red`); every
/// thread gets the result. Must be reached by all threads.
template <class T, class Op>
__device__ T block_reduce(T v, T* red, Op op) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s /= 2) {
    if (int(threadIdx.x) < s) red[threadIdx.x] = op(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  const T out = red[0];
  __syncthreads();
  return out;
}
struct Plus {
  template <class T>
  __device__ T operator()(T a, T b) const { return a + b; }
};
struct Max {
  __device__ double operator()(double a, double b) const { return fmax(a, b); }
};
__device__ double block_sum(double v, double* red) { return block_reduce(v, red, Plus{}); }
__device__ double block_max(double v, double* red) { return block_reduce(v, red, Max{}); }
__device__ int block_count(int v, int* red) { return block_reduce(v, red, Plus{}); }

/// Score of a query row and a key row, as the portable backend takes it (float dot in index
/// order, scaled in double, rounded to float).
__device__ float score(const float* q, const float* k, int d, double scale) {
  float sum = 0.0f;
  for (int x = 0; x < d; ++x) sum += q[x] * k[x];
  return float(scale * double(sum));
}

/// The tokens x d rows of head index `head` of a [head][token][dim] tensor.
__device__ const float* head_rows(const float* tensor, std::size_t head, int n, int d) {
  return tensor + head * n * d;
}

/// Loads rows first .. first + kTile - 1 of a tokens x d matrix into a padded tile (row stride
/// d + 1; rows past n are zero), with the kTile threads of the block.
__device__ void load_tile(float* tile, const float* rows, int first, int n, int d) {
  for (int e = threadIdx.x; e < kTile * d; e += kTile) {
    const int r = e / d, x = e % d;
    tile[r * (d + 1) + x] = first + r < n ? rows[std::size_t(first + r) * d + x] : 0.0f;
  }
}

/// Pass 1: per query row, an online softmax over key tiles: L_i and the row's maximum score.
__global__ void row_pass(const float* q, const float* k, int n, int d, int q_heads, int group, double scale,
                         double* log_normalizer, float* row_max) {
  extern __shared__ float tiles[];
  const int head = blockIdx.y, stride = d + 1;  // padding: threads read different rows of a tile
  float* q_tile = tiles;
  float* k_tile = tiles + kTile * stride;
  const float *qh = head_rows(q, head, n, d), *kh = head_rows(k, kv_index(head, q_heads, group), n, d);
  const int first = blockIdx.x * kTile, i = first + int(threadIdx.x);
  load_tile(q_tile, qh, first, n, d);
  float top = -INFINITY;
  double sum = 0.0;
  for (int key_first = 0; key_first <= first; key_first += kTile) {
    __syncthreads();
    load_tile(k_tile, kh, key_first, n, d);
    __syncthreads();
    if (i >= n) continue;
    for (int r = 0; r < kTile && key_first + r <= i; ++r) {
      const float s = score(q_tile + threadIdx.x * stride, k_tile + r * stride, d, scale);
      if (s > top) {
        sum = sum * exp(double(top) - double(s));
        top = s;
      }
      sum += exp(double(s) - double(top));
    }
  }
  if (i < n) {
    log_normalizer[std::size_t(head) * n + i] = double(top) + log(sum);
    row_max[std::size_t(head) * n + i] = top;
  }
}

/// Pass 2: per key column j, the column sum over query tiles i >= j and the count below tau.
__global__ void column_pass(const float* q, const float* k, int n, int d, int q_heads, int group, double scale,
                            double tau, const double* log_normalizer, const float* row_max, double* column_sum,
                            unsigned long long* below) {
  extern __shared__ float tiles[];
  const int head = blockIdx.y, stride = d + 1;
  float* k_tile = tiles;
  float* q_tile = tiles + kTile * stride;
  const float *qh = head_rows(q, head, n, d), *kh = head_rows(k, kv_index(head, q_heads, group), n, d);
  const int first = blockIdx.x * kTile, j = first + int(threadIdx.x);
  load_tile(k_tile, kh, first, n, d);
  double sum = 0.0;
  unsigned long long count = 0;
  for (int query_first = first; query_first < n; query_first += kTile) {
    __syncthreads();
    load_tile(q_tile, qh, query_first, n, d);
    __syncthreads();
    if (j >= n) continue;
    for (int r = 0; r < kTile && query_first + r < n; ++r) {
      const int i = query_first + r;
      if (i < j) continue;
      const float s = score(q_tile + r * stride, k_tile + threadIdx.x * stride, d, scale);
      sum += exp(double(s) - log_normalizer[std::size_t(head) * n + i]);
      count += exp(double(s) - double(row_max[std::size_t(head) * n + i])) < tau;
    }
  }
  if (j < n) {
    column_sum[std::size_t(head) * n + j] = sum;
    atomicAdd(&below[head], count);
  }
}

/// U_i: one block per (row, head); scores of keys 0..i in shared memory, the k-th largest of the
/// first i by bisection on the order key (row_kernels.hpp top_k_mass, block-parallel).
__global__ void oracle_pass(const float* q, const float* k, int n, int d, int q_heads, int group, double scale,
                            int budget, const double* log_normalizer, double* oracle_mass) {
  extern __shared__ float s[];
  __shared__ double red[kBlock];
  __shared__ int count_red[kBlock];
  __shared__ float kth;
  const int i = blockIdx.x, head = blockIdx.y;
  const std::size_t kv = kv_index(head, q_heads, group);
  const float* qi = q + (std::size_t(head) * n + i) * d;
  const float* kh = k + std::size_t(kv) * n * d;
  for (int j = threadIdx.x; j <= i; j += kBlock) s[j] = score(qi, kh + std::size_t(j) * d, d, scale);
  __syncthreads();
  const double L = log_normalizer[std::size_t(head) * n + i];
  const int take = budget < i ? budget : i;
  double mass = 0.0;
  if (take >= i) {
    for (int j = threadIdx.x; j < i; j += kBlock) mass += exp(double(s[j]) - L);
    mass = block_sum(mass, red);
  } else if (take > 0) {
    std::uint32_t lo = 0, hi = 0xffffffffu;
    while (lo < hi) {
      const std::uint32_t mid = lo + (hi - lo) / 2 + 1;
      int at_least = 0;
      for (int j = threadIdx.x; j < i; j += kBlock) at_least += order_key(s[j]) >= mid;
      if (block_count(at_least, count_red) >= take) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    int above = 0;
    for (int j = threadIdx.x; j < i; j += kBlock) {
      const std::uint32_t key = order_key(s[j]);
      if (key > lo) {
        mass += exp(double(s[j]) - L);
        ++above;
      } else if (key == lo) {
        kth = s[j];  // every writer stores the same value
      }
    }
    mass = block_sum(mass, red);
    above = block_count(above, count_red);
    mass += double(take - above) * exp(double(kth) - L);
  }
  if (threadIdx.x == 0) oracle_mass[std::size_t(head) * n + i] = exp(double(s[i]) - L) + mass;
}

/// One (layer, KV head) group per block: greedy/simulator.cpp semantics (row_kernels.hpp
/// simulate_group, block-parallel over cache members and dims).
__global__ void simulate_groups(SimView v, bool cache_in_shared) {
  extern __shared__ unsigned char shared_bytes[];
  __shared__ double red[kBlock];
  __shared__ int token_red[kBlock];
  __shared__ int size, evicted_any;
  const int group = blockIdx.x, tid = threadIdx.x;
  const int layer = group / v.kv_heads, kv = group % v.kv_heads, g = v.q_heads / v.kv_heads;
  const int n = v.n, d = v.d, budget = v.budget[group], cap = v.capacity;
  double* att;
  std::int32_t* slot;
  if (cache_in_shared) {
    att = reinterpret_cast<double*>(shared_bytes);
    slot = reinterpret_cast<std::int32_t*>(att + sim_weight_stride(cap, g));
  } else {
    att = v.weights + std::size_t(group) * sim_weight_stride(cap, g);
    slot = v.slots + std::size_t(group) * cap;
  }
  const GroupArrays arrays = group_arrays(v, group, att);
  double *agg = arrays.agg, *head_top = arrays.head_top, *head_sum = arrays.head_sum, *score_of = arrays.score;
  const float *kh = arrays.k, *vh = arrays.v;
  for (int t = tid; t < n; t += kBlock) {
    double norm2 = 0.0;
    if (v.policy == kL2Norm) {
      for (int x = 0; x < d; ++x) norm2 += double(kh[std::size_t(t) * d + x]) * double(kh[std::size_t(t) * d + x]);
    }
    score_of[t] = v.policy == kL2Norm ? -sqrt(norm2) : 0.0;
  }
  if (tid == 0) {
    size = 0;
    evicted_any = 0;
  }
  __syncthreads();
  for (int i = 0; i < n; ++i) {
    const bool full = size == budget;
    __syncthreads();
    if (tid == 0) slot[size++] = i;
    __syncthreads();
    const int m = size;
    for (int h = 0; h < g; ++h) {
      const float* qi = v.q + ((std::size_t(layer) * v.q_heads + std::size_t(kv) * g + h) * n + i) * d;
      double* a = att + std::size_t(h) * m;
      double top = -INFINITY;
      for (int e = tid; e < m; e += kBlock) {
        const float* kt = kh + std::size_t(slot[e]) * d;
        double l = 0.0;
        for (int x = 0; x < d; ++x) l += (v.scale * double(qi[x])) * double(kt[x]);
        a[e] = l;
        top = fmax(top, l);
      }
      top = block_max(top, red);
      double sum = 0.0;
      for (int e = tid; e < m; e += kBlock) sum += (a[e] = exp(a[e] - top));
      sum = block_sum(sum, red);
      for (int e = tid; e < m; e += kBlock) a[e] /= sum;
      if (tid == 0) {
        head_top[h] = top;
        head_sum[h] = sum;
      }
    }
    __syncthreads();
    const double* group_att = att;
    if (g > 1) {
      for (int e = tid; e < m; e += kBlock) agg[e] = aggregate_member(att, m, g, e, v.aggregation);
      group_att = agg;
    }
    for (int h = 0; h < g; ++h) {
      const std::size_t row = (std::size_t(layer) * v.q_heads + std::size_t(kv) * g + h) * n + i;
      double r = 1.0, err = 0.0;
      if (evicted_any) {
        const double* o = v.exact_output + row * d;
        const double* a = att + std::size_t(h) * m;
        double diff2 = 0.0, norm2 = 0.0;
        for (int x = tid; x < d; x += kBlock) add_output_error_terms(o, a, slot, vh, m, d, x, &diff2, &norm2);
        diff2 = block_sum(diff2, red);
        norm2 = block_sum(norm2, red);
        r = fmin(1.0, exp(head_top[h] - v.log_normalizer[row]) * head_sum[h]);
        err = norm2 > 0.0 ? sqrt(diff2) / sqrt(norm2) : sqrt(diff2);
      }
      if (tid == 0) {
        v.retained[(std::size_t(group) * n + i) * g + h] = r;
        v.error[(std::size_t(group) * n + i) * g + h] = err;
      }
    }
    __syncthreads();
    for (int e = tid; e < m; e += kBlock) {
      if (v.policy == kH2o) score_of[slot[e]] += group_att[e];
      if (v.policy == kTova) score_of[slot[e]] = group_att[e];
    }
    __syncthreads();
    if (full) {
      // Block argmin of (key, token) over eligible members.
      double best_key = INFINITY;
      int best_token = 0x7fffffff;
      for (int e = tid; e < m; e += kBlock) {
        const int t = slot[e];
        if (!eligible(v, i, t)) continue;
        const double key = eviction_key(v, score_of, t);
        if (key < best_key || (key == best_key && t < best_token)) {
          best_key = key;
          best_token = t;
        }
      }
      red[tid] = best_key;
      token_red[tid] = best_token;
      __syncthreads();
      for (int s = kBlock / 2; s > 0; s /= 2) {
        if (tid < s) {
          const double other = red[tid + s];
          const int other_token = token_red[tid + s];
          if (other < red[tid] || (other == red[tid] && other_token < token_red[tid])) {
            red[tid] = other;
            token_red[tid] = other_token;
          }
        }
        __syncthreads();
      }
      if (tid == 0) {
        const int out = token_red[0] == 0x7fffffff ? slot[0] : token_red[0];
        for (int e = 0; e < m; ++e) {
          if (slot[e] == out) {
            slot[e] = slot[m - 1];
            break;
          }
        }
        --size;
        evicted_any = 1;
        v.evicted[std::size_t(group) * n + i] = out;
      }
    } else if (tid == 0) {
      v.evicted[std::size_t(group) * n + i] = -1;
    }
    __syncthreads();
  }
}

}  // namespace

namespace cuda {

bool device_available() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
}

void generate(const GeneratorTables& tables, std::vector<float>& q, std::vector<float>& k, std::vector<float>& v) {
  cuda_portable::generate(tables, q, k, v);
}

void attention_stats(const StatsInput& in, StatsOutput& out) {
  const Dims& s = in.shape;
  const int n = s.tokens, d = s.head_dim;
  const int heads = s.layers * s.q_heads;
  const std::size_t tile_bytes = 2 * std::size_t(kTile) * (d + 1) * sizeof(float);
  const std::size_t row_bytes = std::size_t(n) * sizeof(float);
  constexpr std::size_t kStaticShared = 4096;  // oracle_pass's reduction arrays, rounded up
  if (d > kMaxTiledDim || row_bytes + kStaticShared > std::size_t(max_shared_bytes())) {
    cuda_portable::attention_stats(in, out);
    return;
  }
  thrust::device_vector<float> q(in.q, in.q + s.q_elements()), k(in.k, in.k + s.kv_elements());
  thrust::device_vector<double> log_normalizer(std::size_t(heads) * n), column_sum(std::size_t(heads) * n),
      oracle_mass(std::size_t(heads) * n);
  thrust::device_vector<float> row_max(std::size_t(heads) * n);
  thrust::device_vector<unsigned long long> below(heads, 0ull);
  const dim3 tiles((n + kTile - 1) / kTile, heads);
  const int g = s.group_size();
  check(cudaFuncSetAttribute(row_pass, cudaFuncAttributeMaxDynamicSharedMemorySize, int(tile_bytes)), "row pass shared memory");
  check(cudaFuncSetAttribute(column_pass, cudaFuncAttributeMaxDynamicSharedMemorySize, int(tile_bytes)), "column pass shared memory");
  row_pass<<<tiles, kTile, tile_bytes>>>(raw(q), raw(k), n, d, s.q_heads, g, in.scale, raw(log_normalizer), raw(row_max));
  check(cudaGetLastError(), "row pass");
  column_pass<<<tiles, kTile, tile_bytes>>>(raw(q), raw(k), n, d, s.q_heads, g, in.scale, in.tau, raw(log_normalizer),
                                            raw(row_max), raw(column_sum), raw(below));
  check(cudaGetLastError(), "column pass");
  check(cudaFuncSetAttribute(oracle_pass, cudaFuncAttributeMaxDynamicSharedMemorySize, int(row_bytes)), "oracle pass shared memory");
  oracle_pass<<<dim3(n, heads), kBlock, row_bytes>>>(raw(q), raw(k), n, d, s.q_heads, g, in.scale, in.budget,
                                                       raw(log_normalizer), raw(oracle_mass));
  check(cudaGetLastError(), "oracle pass");
  check(cudaDeviceSynchronize(), "statistics");
  to_host(log_normalizer, out.log_normalizer);
  to_host(column_sum, out.column_sum);
  to_host(oracle_mass, out.oracle_mass);
  std::vector<unsigned long long> counts;
  to_host(below, counts);
  out.below_tau.assign(counts.begin(), counts.end());
}

void simulate(const SimInput& in, SimOutput& out) {
  const Dims& s = in.shape;
  const int n = s.tokens, d = s.head_dim, g = s.group_size();
  const int groups = s.layers * s.kv_heads;
  const std::int64_t rows = std::int64_t(s.layers) * s.q_heads * n;
  thrust::device_vector<float> q(in.q, in.q + s.q_elements()), k(in.k, in.k + s.kv_elements()),
      v(in.v, in.v + s.kv_elements());
  thrust::device_vector<double> log_normalizer(rows), exact_output(std::size_t(rows) * d);
  thrust::for_each(thrust::counting_iterator<std::int64_t>(0), thrust::counting_iterator<std::int64_t>(rows),
                   cuda_portable::ExactRowFn{raw(q), raw(k), raw(v), n, d, s.q_heads, g, in.scale,
                                             raw(log_normalizer), raw(exact_output)});
  thrust::device_vector<int> budget(in.budget.begin(), in.budget.end());
  const int capacity = std::min(*std::max_element(in.budget.begin(), in.budget.end()), n) + 1;
  const std::size_t shared = sim_weight_stride(capacity, g) * sizeof(double) + std::size_t(capacity) * sizeof(std::int32_t);
  const bool in_shared = shared + 4096 <= std::size_t(max_shared_bytes());  // room for the static arrays
  thrust::device_vector<std::int32_t> slots(in_shared ? 0 : std::size_t(groups) * capacity), evicted(std::size_t(groups) * n);
  thrust::device_vector<double> weights(in_shared ? 0 : std::size_t(groups) * sim_weight_stride(capacity, g));
  thrust::device_vector<double> score(std::size_t(groups) * n);
  thrust::device_vector<double> retained(std::size_t(groups) * n * g), error(std::size_t(groups) * n * g);
  const SimView view{raw(q), raw(k), raw(v), raw(log_normalizer), raw(exact_output), raw(budget),
                     s.layers, s.q_heads, s.kv_heads, n, d, in.scale, in.policy, in.aggregation, in.recent,
                     in.sinks, capacity, raw(slots), raw(weights), raw(score), raw(retained), raw(error),
                     raw(evicted)};
  const std::size_t dynamic = in_shared ? shared : 0;
  if (in_shared) {
    check(cudaFuncSetAttribute(simulate_groups, cudaFuncAttributeMaxDynamicSharedMemorySize, int(dynamic)), "simulation shared memory");
  }
  simulate_groups<<<groups, kBlock, dynamic>>>(view, in_shared);
  check(cudaGetLastError(), "simulation");
  check(cudaDeviceSynchronize(), "simulation");
  to_host(retained, out.retained_mass);
  to_host(error, out.output_error);
  to_host(evicted, out.evicted);
}

}  // namespace cuda
}  // namespace subevict::kernels::detail
