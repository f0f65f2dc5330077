#pragma once
/// \file
/// Internal: the plain-data interface between the public kernels API (host, Eigen) and the
/// backend translation units (kernels/portable.inl compiled by g++ and by nvcc, and the CUDA
/// kernels). Nothing here includes Eigen, so nvcc only sees this header, core/counter_rng.hpp and
/// core/sink_token.hpp.
/// Not installed as API; tensors are row-major [layer][head][token][dim] as in core::Workload.

#include <cstdint>
#include <utility>
#include <vector>

#include "core/counter_rng.hpp"
#include "core/sink_token.hpp"

namespace subevict {
struct Shape;
}

namespace subevict::kernels::detail {

/// The sizes of a workload (core/shape.hpp Shape without its C++20 parts, so nvcc in C++17 mode
/// can read this header).
struct Dims {
  int layers = 1, q_heads = 1, kv_heads = 1, tokens = 1, head_dim = 1;
  int group_size() const { return q_heads / kv_heads; }
  std::size_t q_elements() const { return std::size_t(layers) * q_heads * tokens * head_dim; }
  std::size_t kv_elements() const { return std::size_t(layers) * kv_heads * tokens * head_dim; }
};

/// The Dims of a Shape (host code; defined in kernels/backend.cpp).
Dims to_dims(const Shape& shape);

/// Number of structure dims of the LLM-like model (core/llm_like_model.hpp kStructureDims).
inline constexpr int kStructure = 6;

/// The coefficients of one layer (core/llm_like_model.hpp LlmLikeLayerTables).
struct LayerCoefficients {
  double sigma = 0, rho = 0, sink_amp = 0, beta = 0, eta = 0, gamma = 0, norm_spread = 0;
  double inv_temperature = 1, value_std = 1;
  int sinks = 0;
  double sink_amp_q = 0;
  int bare_sinks = 0;
  int rope_table = 0;
  int sink_tokens = 0;
  double sink_norm = 0;
};

/// Flattened generator tables (core/llm_like_model.hpp LlmLikeTables) and scalars.
struct GeneratorTables {
  bool llm_like = true;
  std::uint64_t seed = 0;
  Dims shape;
  int pairs = 0, token_types = 1;
  std::vector<LayerCoefficients> layers;    ///< [layer]
  std::vector<std::uint8_t> sink_head;      ///< [layer][q_head]: 1 iff the query has the sink term
  std::vector<std::int32_t> token_type;     ///< [token]
  std::vector<double> rope_cos, rope_sin;   ///< [rope table][token][pair]
  std::vector<double> dirs;                 ///< [layer][kv_head][u, c, p, p_perp][6]
  std::vector<double> w;                    ///< [layer][kv_head][2 * pairs]
  std::vector<double> cos_phi;              ///< [layer][kv_head][token_types]
  std::vector<double> key_scale;            ///< [layer][kv_head][token_types]
};

/// The tables as raw pointers (host or device memory), passed by value into functors/kernels.
struct GeneratorView {
  bool llm_like;
  std::uint64_t seed;
  int q_heads, kv_heads, tokens, head_dim, pairs, token_types;
  const LayerCoefficients* layers;
  const std::uint8_t* sink_head;
  const std::int32_t* token_type;
  const double *rope_cos, *rope_sin, *dirs, *w, *cos_phi, *key_scale;
};

/// Element (layer, head, token, x) of a tensor with `heads` heads from its flat index e.
struct ElementIndex {
  int layer, head, token, x;
};
SUBEVICT_HD inline ElementIndex element_index(std::uint64_t e, int heads, int tokens, int head_dim) {
  const std::uint64_t row = e / std::uint64_t(head_dim);
  return {int(row / (std::uint64_t(tokens) * std::uint64_t(heads))),
          int((row / std::uint64_t(tokens)) % std::uint64_t(heads)), int(row % std::uint64_t(tokens)),
          int(e % std::uint64_t(head_dim))};
}

/// The content-plus-recency part of dim x of the row at `pos`, content of scale `sigma` and recency
/// of scale `rho` (core's rotated_part, one entry): the same IEEE operations in the same order.
SUBEVICT_HD inline double rotated_entry(const GeneratorView& t, const LayerCoefficients& c, std::uint64_t stream,
                                        int kv_index, int pos, int x, double sigma, double rho) {
  double z0, z1;
  normal_pair(t.seed, stream, std::uint64_t(pos) * std::uint64_t(t.head_dim / 2) + std::uint64_t(x / 2), &z0, &z1);
  const int p = x / 2;
  if (p >= t.pairs) return sigma * (x % 2 == 0 ? z0 : z1);
  const std::size_t angle = (std::size_t(c.rope_table) * std::size_t(t.tokens) + std::size_t(pos)) * t.pairs + p;
  const double cs = t.rope_cos[angle];
  const double sn = t.rope_sin[angle];
  const double* w = t.w + std::size_t(kv_index) * 2 * t.pairs;
  const double w0 = w[2 * p], w1 = w[2 * p + 1];
  return x % 2 == 0 ? sigma * z0 + rho * (w0 * cs - w1 * sn) : sigma * z1 + rho * (w0 * sn + w1 * cs);
}

/// Element e of Q (core's generate_gaussian / llm_like_query_row, one entry).
SUBEVICT_HD inline float query_element(const GeneratorView& t, std::uint64_t e) {
  const ElementIndex at = element_index(e, t.q_heads, t.tokens, t.head_dim);
  const std::uint64_t stream = stream_id(Stream::kQueryContent, std::uint32_t(at.layer), std::uint32_t(at.head));
  if (!t.llm_like) return float(normal(t.seed, stream, std::uint64_t(at.token) * t.head_dim + at.x));
  const int kv_index = at.layer * t.kv_heads + at.head / (t.q_heads / t.kv_heads);
  const LayerCoefficients& c = t.layers[at.layer];
  double v = rotated_entry(t, c, stream, kv_index, at.token, at.x, c.sigma, c.rho);
  const int xs = at.x - (t.head_dim - kStructure);
  if (xs >= 0) {
    const double* d = t.dirs + std::size_t(kv_index) * 4 * kStructure;
    const double sink = t.sink_head[std::size_t(at.layer) * t.q_heads + at.head] ? c.sink_amp_q : 0.0;
    v += sink * d[xs] + c.eta * d[2 * kStructure + xs] - c.gamma * d[kStructure + xs];
  }
  return float(v * c.inv_temperature);
}

/// Element e of K (core's llm_like_key_row, one entry).
SUBEVICT_HD inline float key_element(const GeneratorView& t, std::uint64_t e) {
  const ElementIndex at = element_index(e, t.kv_heads, t.tokens, t.head_dim);
  const std::uint64_t stream = stream_id(Stream::kKeyContent, std::uint32_t(at.layer), std::uint32_t(at.head));
  if (!t.llm_like) return float(normal(t.seed, stream, std::uint64_t(at.token) * t.head_dim + at.x));
  const int kv_index = at.layer * t.kv_heads + at.head;
  const LayerCoefficients& c = t.layers[at.layer];
  const bool sink_token = is_sink_token(t.seed, c.sinks, c.sink_tokens, t.tokens, at.token);
  if (c.bare_sinks != 0 && sink_token) {  // a bare sink key: its sink direction alone
    const int xs = at.x - (t.head_dim - kStructure);
    if (xs < 0) return 0.0f;
    const double* d = t.dirs + std::size_t(kv_index) * 4 * kStructure;
    const double a = c.sink_amp, m = c.sink_norm;  // core: a u + m c
    return float(m > 0 ? a * d[xs] + m * d[kStructure + xs] : a * d[xs]);
  }
  // The key's type scales its content, recency and norm component alike (core: salient_low_norm).
  const std::size_t type = std::size_t(kv_index) * t.token_types + std::size_t(t.token_type[at.token]);
  const double scale = t.key_scale[type];
  const double sigma = c.sigma * scale, rho = c.rho * scale;
  double v = rotated_entry(t, c, stream, kv_index, at.token, at.x, sigma, rho);
  const int xs = at.x - (t.head_dim - kStructure);
  if (xs >= 0) {
    const double* d = t.dirs + std::size_t(kv_index) * 4 * kStructure;
    if (c.bare_sinks != 0) {  // core: no content along the sink direction u, same order
      double along = 0;
      for (int y = 0; y < kStructure; ++y) {
        along += rotated_entry(t, c, stream, kv_index, at.token, t.head_dim - kStructure + y, sigma, rho) * d[y];
      }
      v = v - along * d[xs];
    }
    const double sink = sink_token ? c.sink_amp : 0.0;
    const double cos_phi = t.cos_phi[type];
    const double sin_phi = std::sqrt(1.0 - cos_phi * cos_phi);
    const double drawn = c.norm_spread * uniform(t.seed, stream_id(Stream::kKeyNormBias, std::uint32_t(at.layer),
                                                                   std::uint32_t(at.head)),
                                                 std::uint64_t(at.token));
    const double m = drawn * scale;
    v += sink * d[xs] + c.beta * (cos_phi * d[2 * kStructure + xs] + sin_phi * d[3 * kStructure + xs]) +
         m * d[kStructure + xs];
  }
  return float(v);
}

/// Element e of V.
SUBEVICT_HD inline float value_element(const GeneratorView& t, std::uint64_t e) {
  const ElementIndex at = element_index(e, t.kv_heads, t.tokens, t.head_dim);
  const std::uint64_t stream = stream_id(Stream::kValue, std::uint32_t(at.layer), std::uint32_t(at.head));
  const double z = normal(t.seed, stream, std::uint64_t(at.token) * t.head_dim + at.x);
  return t.llm_like ? float(t.layers[at.layer].value_std * z) : float(z);
}

/// Inputs of the statistics (host pointers to the workload's tensors).
struct StatsInput {
  Dims shape;
  double scale = 1;
  const float *q = nullptr, *k = nullptr;
  double tau = 0.01;
  int budget = 0;
};

/// Outputs of the statistics (kernels/attention_stats.hpp AttentionStats, same layouts).
struct StatsOutput {
  std::vector<double> log_normalizer, column_sum, oracle_mass;
  std::vector<std::int64_t> below_tau;
};

/// Policy codes of the simulation kernels (BatchedPolicy order) and aggregation codes
/// (greedy::GroupAggregation order: sum, mean, max).
enum PolicyCode : int { kH2o = 0, kLocal = 1, kStreamingLlm = 2, kL2Norm = 3, kTova = 4 };

/// Inputs of the batched simulation: the budget per group is already resolved (n for groups the
/// policy does not compress); recent (h2o) and sinks (streamingllm) are validated sizes.
struct SimInput {
  Dims shape;
  double scale = 1;
  const float *q = nullptr, *k = nullptr, *v = nullptr;
  int policy = kH2o;
  int aggregation = 0;
  int recent = 0;
  int sinks = 0;
  std::vector<int> budget;  ///< [group]
};

/// Outputs (kernels/batched_simulation.hpp BatchedSimulation layouts).
struct SimOutput {
  std::vector<double> retained_mass, output_error;
  std::vector<std::int32_t> evicted;
};

/// The Thrust implementation (kernels/portable.inl) compiled for the OpenMP device system.
namespace portable {
void generate(const GeneratorTables& tables, std::vector<float>& q, std::vector<float>& k, std::vector<float>& v);
void attention_stats(const StatsInput& in, StatsOutput& out);
void simulate(const SimInput& in, SimOutput& out);
}  // namespace portable

/// The CUDA backend (kernels/cuda_backend.cu): the same portable source compiled by nvcc for
/// generation, hand-written kernels for the statistics and the simulation.
namespace cuda {
bool device_available();
void generate(const GeneratorTables& tables, std::vector<float>& q, std::vector<float>& k, std::vector<float>& v);
void attention_stats(const StatsInput& in, StatsOutput& out);
void simulate(const SimInput& in, SimOutput& out);
/// (kernel name, milliseconds) of the calling thread's last attention_stats / simulate launches.
std::vector<std::pair<const char*, double>> last_kernel_times();
}  // namespace cuda

}  // namespace subevict::kernels::detail
