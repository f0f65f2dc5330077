// The portable backend: Thrust algorithms over __host__ __device__ functors. This one source is
// compiled twice: by g++ with THRUST_DEVICE_SYSTEM_OMP (kernels/portable.cpp, namespace
// detail::portable, CPU threads) and by nvcc with the CUDA device system (kernels/cuda_backend.cu,
// namespace detail::SUBEVICT_PORTABLE_NS). The includer defines SUBEVICT_PORTABLE_NS.
//
// Precision: workload elements are the exact core expressions (bit-identical); statistics take
// float dot products and accumulate in double; the simulation runs in double throughout.
#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/detail/backend_detail.hpp"
#include "kernels/detail/block_kernels.hpp"
#include "kernels/detail/row_kernels.hpp"

namespace subevict::kernels::detail::SUBEVICT_PORTABLE_NS {
namespace {

template <class T>
T* raw(thrust::device_vector<T>& v) {
  return thrust::raw_pointer_cast(v.data());
}
template <class T>
thrust::device_vector<T> to_device(const std::vector<T>& host) {
  return thrust::device_vector<T>(host.begin(), host.end());
}
template <class T>
thrust::device_vector<T> to_device(const T* host, std::size_t count) {
  return thrust::device_vector<T>(host, host + count);
}
template <class T>
void to_host(const thrust::device_vector<T>& device, std::vector<T>& host) {
  host.resize(device.size());
  thrust::copy(device.begin(), device.end(), host.begin());
}

enum class Tensor { kQuery, kKey, kValue };

struct ElementFn {
  GeneratorView t;
  Tensor tensor;
  SUBEVICT_HD float operator()(std::uint64_t e) const {
    return tensor == Tensor::kQuery ? query_element(t, e) : tensor == Tensor::kKey ? key_element(t, e) : value_element(t, e);
  }
};

/// Statistics of one causal row from its scores s[0..i].
struct RowSummary {
  double log_normalizer;
  double oracle_mass;
  std::int64_t below;
};

/// L_i = log sum_j exp(s_j) (max-shifted), the count of a_ij < tau max_j a_ij, and
/// U_i = a_ii + top_k_mass(s, i, budget). O(33 i).
SUBEVICT_HD inline RowSummary summarize_row(const float* s, int i, double tau, int budget) {
  float top = s[0];
  for (int j = 1; j <= i; ++j) top = s[j] > top ? s[j] : top;
  double sum = 0.0;
  std::int64_t below = 0;
  for (int j = 0; j <= i; ++j) {
    const double e = std::exp(double(s[j]) - double(top));
    sum += e;
    below += e < tau;
  }
  const double log_normalizer = double(top) + std::log(sum);
  const double diagonal = std::exp(double(s[i]) - log_normalizer);
  return {log_normalizer, diagonal + top_k_mass(s, i, budget, log_normalizer), below};
}

/// Statistics of one query row i = first + r of one head: scores into scratch[r], then L_i, the
/// count below tau and U_i (summarize_row above).
struct StatsRowFn {
  const float *q, *k;  // this head's Q and K (tokens x d)
  int n, d, first, budget;
  double scale, tau;
  float* scratch;      // [chunk][n]
  double *log_normalizer, *oracle_mass;  // this head's [n]
  std::int64_t* below;                   // this head's per-row counts [n]
  SUBEVICT_HD void operator()(int r) const {
    const int i = first + r;
    float* s = scratch + std::size_t(r) * n;
    const float* qi = q + std::size_t(i) * d;
    for (int j = 0; j <= i; ++j) s[j] = float(scale * double(dot(qi, k + std::size_t(j) * d, d)));
    const RowSummary row = summarize_row(s, i, tau, budget);
    log_normalizer[i] = row.log_normalizer;
    oracle_mass[i] = row.oracle_mass;
    below[i] = row.below;
  }
};

/// Column sums of one chunk: column j += sum over the chunk's rows i >= j of exp(s_ij - L_i).
struct ColumnFn {
  const float* scratch;
  const double* log_normalizer;
  int n, first, rows;
  double* column_sum;
  SUBEVICT_HD void operator()(int j) const {
    double sum = 0.0;
    for (int r = j > first ? j - first : 0; r < rows; ++r) {
      sum += std::exp(double(scratch[std::size_t(r) * n + j]) - log_normalizer[first + r]);
    }
    column_sum[j] += sum;
  }
};

/// One (layer, KV head) group's whole streaming simulation: the block kernel on one thread, with
/// this group's slice of `scratch` as its shared memory (the cache itself in the SimView's arrays).
struct SimGroupFn {
  SimView view;
  unsigned char* scratch;
  std::size_t scratch_stride;
  SUBEVICT_HD void operator()(int group) const {
    SimulateGroups{view, false}(SerialBlock{group, 0, scratch + std::size_t(group) * scratch_stride});
  }
};

}  // namespace

void generate(const GeneratorTables& tables, std::vector<float>& q, std::vector<float>& k, std::vector<float>& v) {
  thrust::device_vector<LayerCoefficients> layers = to_device(tables.layers);
  thrust::device_vector<std::uint8_t> sink_head = to_device(tables.sink_head);
  thrust::device_vector<std::int32_t> token_type = to_device(tables.token_type);
  thrust::device_vector<double> rope_cos = to_device(tables.rope_cos), rope_sin = to_device(tables.rope_sin),
                                dirs = to_device(tables.dirs), w = to_device(tables.w),
                                cos_phi = to_device(tables.cos_phi), key_scale = to_device(tables.key_scale);
  const Dims& s = tables.shape;
  const GeneratorView view{tables.llm_like, tables.seed, s.q_heads, s.kv_heads, s.tokens, s.head_dim,
                           tables.pairs, tables.token_types, raw(layers), raw(sink_head), raw(token_type),
                           raw(rope_cos), raw(rope_sin), raw(dirs), raw(w), raw(cos_phi),
                           raw(key_scale)};
  auto fill = [&view](std::vector<float>& out, std::size_t count, Tensor tensor) {
    thrust::device_vector<float> device(count);
    thrust::transform(thrust::counting_iterator<std::uint64_t>(0), thrust::counting_iterator<std::uint64_t>(count),
                      device.begin(), ElementFn{view, tensor});
    to_host(device, out);
  };
  fill(q, s.q_elements(), Tensor::kQuery);
  fill(k, s.kv_elements(), Tensor::kKey);
  fill(v, s.kv_elements(), Tensor::kValue);
}

void attention_stats(const StatsInput& in, StatsOutput& out) {
  const Dims& s = in.shape;
  const int n = s.tokens, d = s.head_dim, g = s.group_size();
  const std::size_t heads = std::size_t(s.layers) * s.q_heads;
  thrust::device_vector<float> q = to_device(in.q, s.q_elements()), k = to_device(in.k, s.kv_elements());
  thrust::device_vector<double> log_normalizer(heads * n), column_sum(heads * n, 0.0), oracle_mass(heads * n);
  thrust::device_vector<std::int64_t> below(heads * n);
  const int chunk = std::min(n, kStatsChunkRows);
  thrust::device_vector<float> scratch(std::size_t(chunk) * n);
  for (std::size_t h = 0; h < heads; ++h) {
    const std::size_t kv = kv_index(h, s.q_heads, g);
    const std::size_t at = h * n;
    for (int first = 0; first < n; first += chunk) {
      const int rows = std::min(chunk, n - first);
      thrust::for_each(thrust::counting_iterator<int>(0), thrust::counting_iterator<int>(rows),
                       StatsRowFn{raw(q) + h * n * d, raw(k) + kv * n * d, n, d, first, in.budget, in.scale,
                                  in.tau, raw(scratch), raw(log_normalizer) + at, raw(oracle_mass) + at,
                                  raw(below) + at});
      thrust::for_each(thrust::counting_iterator<int>(0), thrust::counting_iterator<int>(first + rows),
                       ColumnFn{raw(scratch), raw(log_normalizer) + at, n, first, rows, raw(column_sum) + at});
    }
  }
  to_host(log_normalizer, out.log_normalizer);
  to_host(column_sum, out.column_sum);
  to_host(oracle_mass, out.oracle_mass);
  std::vector<std::int64_t> per_row;
  to_host(below, per_row);
  out.below_tau.assign(heads, 0);
  for (std::size_t h = 0; h < heads; ++h) {
    for (int i = 0; i < n; ++i) out.below_tau[h] += per_row[h * n + i];
  }
}

void simulate(const SimInput& in, SimOutput& out) {
  const Dims& s = in.shape;
  const int n = s.tokens, d = s.head_dim, g = s.group_size();
  const int groups = s.layers * s.kv_heads;
  const std::int64_t rows = std::int64_t(s.layers) * s.q_heads * n;
  thrust::device_vector<float> q = to_device(in.q, s.q_elements()), k = to_device(in.k, s.kv_elements()),
                               v = to_device(in.v, s.kv_elements());
  thrust::device_vector<double> log_normalizer(rows), exact_output(std::size_t(rows) * d);
  thrust::for_each(thrust::counting_iterator<std::int64_t>(0), thrust::counting_iterator<std::int64_t>(rows),
                   ExactRowFn{raw(q), raw(k), raw(v), n, d, s.q_heads, g, in.scale, raw(log_normalizer),
                              raw(exact_output)});
  thrust::device_vector<int> budget = to_device(in.budget);
  const int capacity = std::min(*std::max_element(in.budget.begin(), in.budget.end()), n) + 1;
  thrust::device_vector<std::int32_t> slots(std::size_t(groups) * capacity), evicted(std::size_t(groups) * n);
  thrust::device_vector<double> weights(std::size_t(groups) * sim_weight_stride(capacity, g));
  thrust::device_vector<double> score(std::size_t(groups) * n);
  thrust::device_vector<double> retained(std::size_t(groups) * n * g), error(std::size_t(groups) * n * g);
  const SimView view{raw(q), raw(k), raw(v), raw(log_normalizer), raw(exact_output), raw(budget),
                     s.layers, s.q_heads, s.kv_heads, n, d, in.scale, in.policy, in.aggregation, in.recent,
                     in.sinks, capacity, raw(slots), raw(weights), raw(score), raw(retained), raw(error),
                     raw(evicted)};
  const std::size_t stride = (sim_shared_bytes(1, capacity, g, false) + 15) / 16 * 16;
  thrust::device_vector<unsigned char> scratch(std::size_t(groups) * stride);
  thrust::for_each(thrust::counting_iterator<int>(0), thrust::counting_iterator<int>(groups),
                   SimGroupFn{view, raw(scratch), stride});
  to_host(retained, out.retained_mass);
  to_host(error, out.output_error);
  to_host(evicted, out.evicted);
}

}  // namespace subevict::kernels::detail::SUBEVICT_PORTABLE_NS
