#include "core/llm_like_model.hpp"

#include <algorithm>
#include <cmath>

namespace subevict {
namespace {

/// Gram-Schmidt on `count` vectors of length `dim` drawn from normal stream `stream` starting at
/// element `first`; returns them orthonormal (classical GS in double, fixed order).
std::vector<double> orthonormal_draw(std::uint64_t seed, std::uint64_t stream, std::uint64_t first,
                                     int count, int dim) {
  std::vector<double> v(std::size_t(count) * dim);
  for (std::size_t e = 0; e < v.size(); ++e) v[e] = normal(seed, stream, first + e);
  for (int a = 0; a < count; ++a) {
    double* va = &v[std::size_t(a) * dim];
    for (int b = 0; b < a; ++b) {
      const double* vb = &v[std::size_t(b) * dim];
      double dot = 0;
      for (int x = 0; x < dim; ++x) dot += va[x] * vb[x];
      for (int x = 0; x < dim; ++x) va[x] -= dot * vb[x];
    }
    double norm = 0;
    for (int x = 0; x < dim; ++x) norm += va[x] * va[x];
    norm = std::sqrt(norm);
    for (int x = 0; x < dim; ++x) va[x] /= norm;
  }
  return v;
}

int rotated_pairs(int head_dim) { return (head_dim - kStructureDims) / 2; }

}  // namespace

LlmLikeTables build_llm_like_tables(const WorkloadSpec& spec) {
  const Shape& s = spec.shape;
  const LlmLikeParams& prm = spec.llm;
  const double d = s.head_dim;
  const double sqrt_d = std::sqrt(d);
  LlmLikeTables t;
  t.tokens = s.tokens;
  t.head_dim = s.head_dim;
  // Each coefficient realises the logit contribution documented in LlmLikeParams.
  t.sigma = std::sqrt(prm.content_logit_std);
  t.rho = std::sqrt(prm.recency_logit * sqrt_d);
  t.sink_amp = std::sqrt(prm.sink_logit * sqrt_d);
  t.eta = t.beta = std::sqrt(6.0 * prm.heavy_logit * sqrt_d);
  t.norm_spread = prm.norm_spread;
  t.gamma = prm.norm_spread > 0 ? prm.norm_logit_range * sqrt_d / prm.norm_spread : 0.0;
  t.inv_temperature = 1.0 / prm.temperature;
  t.sinks = prm.sinks;

  // Token types: Zipf(alpha) over ranks 1..T by inverse CDF on the host table.
  std::vector<double> cdf(prm.token_types);
  double total = 0;
  for (int r = 0; r < prm.token_types; ++r) cdf[r] = (total += std::pow(double(r + 1), -prm.zipf_alpha));
  t.token_type.resize(s.tokens);
  const std::uint64_t type_stream = stream_id(Stream::kTokenType, 0, 0);
  for (int j = 0; j < s.tokens; ++j) {
    const double target = uniform(spec.seed, type_stream, j) * total;
    t.token_type[j] = std::int32_t(std::upper_bound(cdf.begin(), cdf.end() - 1, target) - cdf.begin());
  }

  // RoPE angles j * base^(-2p/d) for the rotated pairs p = 0..pairs-1 (standard frequencies).
  const int pairs = rotated_pairs(s.head_dim);
  t.rope_cos.resize(std::size_t(s.tokens) * pairs);
  t.rope_sin.resize(t.rope_cos.size());
  for (int p = 0; p < pairs; ++p) {
    const double theta = std::pow(prm.rope_base, -2.0 * p / d);
    for (int j = 0; j < s.tokens; ++j) {
      t.rope_cos[std::size_t(j) * pairs + p] = std::cos(j * theta);
      t.rope_sin[std::size_t(j) * pairs + p] = std::sin(j * theta);
    }
  }

  t.heads.resize(std::size_t(s.layers) * s.kv_heads);
  for (int l = 0; l < s.layers; ++l) {
    for (int h = 0; h < s.kv_heads; ++h) {
      LlmLikeHeadTables& ht = t.heads[std::size_t(l) * s.kv_heads + h];
      const std::uint64_t dir_stream = stream_id(Stream::kDirections, l, h);
      const auto dirs = orthonormal_draw(spec.seed, dir_stream, 0, 4, kStructureDims);
      std::copy_n(&dirs[0], kStructureDims, ht.u);
      std::copy_n(&dirs[kStructureDims], kStructureDims, ht.c);
      std::copy_n(&dirs[2 * kStructureDims], kStructureDims, ht.p);
      std::copy_n(&dirs[3 * kStructureDims], kStructureDims, ht.p_perp);
      ht.w = orthonormal_draw(spec.seed, dir_stream, 4 * kStructureDims, 1, 2 * pairs);
      ht.cos_phi.resize(prm.token_types);
      const std::uint64_t sal_stream = stream_id(Stream::kTypeSalience, l, h);
      for (int type = 0; type < prm.token_types; ++type) {
        const double exp1 = -std::log(uniform(spec.seed, sal_stream, type));
        ht.cos_phi[type] = std::min(1.0, exp1 / 6.0);
      }
    }
  }
  return t;
}

namespace {

/// Content plus rotated recency for dims [0, 2*pairs), written as doubles into row[].
void rotated_part(const LlmLikeTables& t, const LlmLikeHeadTables& head, std::uint64_t seed,
                  std::uint64_t content_stream, int pos, double* row) {
  const int pairs = rotated_pairs(t.head_dim);
  const std::uint64_t first_pair = std::uint64_t(pos) * std::uint64_t(t.head_dim / 2);
  for (int p = 0; p < pairs; ++p) {
    double z0, z1;
    normal_pair(seed, content_stream, first_pair + p, &z0, &z1);
    const double cs = t.rope_cos[std::size_t(pos) * pairs + p];
    const double sn = t.rope_sin[std::size_t(pos) * pairs + p];
    const double w0 = head.w[2 * p], w1 = head.w[2 * p + 1];
    row[2 * p] = t.sigma * z0 + t.rho * (w0 * cs - w1 * sn);
    row[2 * p + 1] = t.sigma * z1 + t.rho * (w0 * sn + w1 * cs);
  }
  for (int p = pairs; p < t.head_dim / 2; ++p) {
    double z0, z1;
    normal_pair(seed, content_stream, first_pair + p, &z0, &z1);
    row[2 * p] = t.sigma * z0;
    row[2 * p + 1] = t.sigma * z1;
  }
}

}  // namespace

void llm_like_key_row(const LlmLikeTables& t, const LlmLikeHeadTables& head, std::uint64_t seed,
                      int layer, int kv_head, int j, float* out) {
  double row[1024];
  rotated_part(t, head, seed, stream_id(Stream::kKeyContent, layer, kv_head), j, row);
  const double sink = j < t.sinks ? t.sink_amp : 0.0;
  const double cos_phi = head.cos_phi[t.token_type[j]];
  const double sin_phi = std::sqrt(1.0 - cos_phi * cos_phi);
  const double m = t.norm_spread * uniform(seed, stream_id(Stream::kKeyNormBias, layer, kv_head), j);
  const int base = t.head_dim - kStructureDims;
  for (int x = 0; x < kStructureDims; ++x) {
    row[base + x] += sink * head.u[x] + t.beta * (cos_phi * head.p[x] + sin_phi * head.p_perp[x]) +
                     m * head.c[x];
  }
  for (int x = 0; x < t.head_dim; ++x) out[x] = float(row[x]);
}

void llm_like_query_row(const LlmLikeTables& t, const LlmLikeHeadTables& head, std::uint64_t seed,
                        int layer, int q_head, int i, float* out) {
  double row[1024];
  rotated_part(t, head, seed, stream_id(Stream::kQueryContent, layer, q_head), i, row);
  const int base = t.head_dim - kStructureDims;
  for (int x = 0; x < kStructureDims; ++x) {
    row[base + x] += t.sink_amp * head.u[x] + t.eta * head.p[x] - t.gamma * head.c[x];
  }
  for (int x = 0; x < t.head_dim; ++x) out[x] = float(row[x] * t.inv_temperature);
}

}  // namespace subevict
