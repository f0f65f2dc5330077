#include "core/llm_like_model.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

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

/// Cuts the recency off beyond `reach` keys (LlmLikeParams::recency_reach): pair p of the
/// recency vector `w`, of wavelength lambda_p = 1 / theta_p = rope_base^(2p / head_dim), keeps the
/// share 1 / (1 + (lambda_p / reach)^4) of its squared weight, and w is renormalized to unit norm.
/// Formed in logs, so no base or reach overflows. reach = 0 leaves w untouched (bit for bit).
void cut_recency(double reach, double rope_base, int head_dim, std::vector<double>& w) {
  if (reach == 0) return;
  const int pairs = int(w.size() / 2);
  const double log_step = 2.0 / head_dim * std::log(rope_base);  // log(lambda_p) = p * log_step
  const double log_reach = std::log(reach);
  double norm = 0;
  for (int p = 0; p < pairs; ++p) {
    const double x = 4 * (p * log_step - log_reach);  // log((lambda_p / reach)^4)
    const double keep = x > 0 ? std::exp(-x) / (1 + std::exp(-x)) : 1 / (1 + std::exp(x));
    const double scale = std::sqrt(keep);
    double& w0 = w[2 * std::size_t(p)];
    double& w1 = w[2 * std::size_t(p) + 1];
    w0 *= scale;
    w1 *= scale;
    norm += w0 * w0 + w1 * w1;
  }
  norm = std::sqrt(norm);
  for (double& x : w) x = norm > 0 ? x / norm : x;
}

LlmLikeLayerTables layer_tables(const LlmLikeParams& prm, double d, double score_scale) {
  const double sqrt_d = std::sqrt(d);
  // Logits are s = scale <q, k>; `unit` is 1 (exactly, so no bit changes) at scale 1/sqrt(d).
  const double unit = score_scale > 0 ? 1.0 / (score_scale * sqrt_d) : 1.0;
  LlmLikeLayerTables c;
  // Each coefficient realises the logit contribution documented in LlmLikeParams.
  c.sigma = std::sqrt(prm.content_logit_std * unit);
  c.rho = std::sqrt(prm.recency_logit * sqrt_d * unit);
  c.sink_amp = std::sqrt(prm.sink_logit * sqrt_d * unit);
  c.eta = c.beta = std::sqrt(6.0 * prm.heavy_logit * sqrt_d * unit);
  c.norm_spread = prm.norm_spread;
  c.gamma = prm.norm_spread > 0 ? prm.norm_logit_range * sqrt_d * unit / prm.norm_spread : 0.0;
  c.inv_temperature = 1.0 / prm.temperature;
  c.value_std = prm.value_std;
  c.sinks = prm.sinks;
  c.sink_amp_q = c.sink_amp;
  c.bare_sinks = prm.low_norm_sinks != 0 || prm.exact_sinks != 0 || prm.sink_norm_quantile >= 0 ? 1 : 0;
  // The key norm of a token without sink and norm component: content, recency, type terms.
  const double ref = std::sqrt(c.sigma * c.sigma * d + c.rho * c.rho + c.beta * c.beta);
  if (prm.low_norm_sinks != 0 && c.sink_amp > 0) {
    const double a = c.sink_amp;
    if (ref > 0 && ref / 4 < a) c.sink_amp = ref / 4;
    c.sink_amp_q = a * a / c.sink_amp;
  }
  const double target = std::hypot(ref, prm.sink_norm_quantile * prm.norm_spread);
  if (prm.sink_norm_quantile >= 0 && target > c.sink_amp) {
    // The norm m along c and the raised amplitude a + y, y = g m (g = gamma / a_q, 0 without a
    // query amplitude), that keep a sink head's logit a_q a: (a + g m)^2 + m^2 = target^2, m >= 0.
    // Solved for m where |g| <= 1 and for y (with s = 1 / g) where |g| > 1, so no square of g
    // overflows (a sink_logit near 0 makes g near 1e166).
    const double a = c.sink_amp, g = c.sink_amp_q > 0 ? c.gamma / c.sink_amp_q : 0.0;
    const double t2 = target * target;
    double m = 0, y = 0;
    if (std::abs(g) <= 1) {
      m = (-a * g + std::sqrt(t2 * (1 + g * g) - a * a)) / (1 + g * g);
      y = g * m;
    } else {
      const double s = 1 / g, root = std::sqrt(t2 * (1 + s * s) - a * a * s * s);
      y = (-a + (s > 0 ? root : -root)) / (1 + s * s);  // the root with m = y s >= 0
      m = y * s;
    }
    c.sink_norm = m;
    c.sink_amp = a + y;
  }
  return c;
}

}  // namespace

LlmLikeTables build_llm_like_tables(const WorkloadSpec& spec) {
  const Shape& s = spec.shape;
  const LlmLikeParams& prm = spec.layer_llm(0);  // token types agree across layers
  const double d = s.head_dim;
  LlmLikeTables t;
  t.tokens = s.tokens;
  t.head_dim = s.head_dim;
  t.q_heads = s.q_heads;
  t.sink_head.resize(std::size_t(s.layers) * s.q_heads);
  for (int l = 0; l < s.layers; ++l) {
    const LlmLikeParams& layer = spec.layer_llm(l);
    t.layers.push_back(layer_tables(layer, d, spec.score_scale));
    std::vector<std::pair<double, int>> draws;
    const std::uint64_t structure_seed = layer.fixed_structure != 0 ? 0 : spec.seed;
    for (int h = 0; h < s.q_heads; ++h) draws.push_back({uniform(structure_seed, stream_id(Stream::kSinkHead, l, h), 0), h});
    if (layer.sink_heads < 0) {
      for (const auto& [draw, h] : draws) t.sink_head[std::size_t(l) * s.q_heads + h] = draw < layer.sink_head_fraction;
    } else {  // exactly sink_heads heads: those with the smallest draws (ties to the lower head)
      std::sort(draws.begin(), draws.end());
      for (int r = 0; r < layer.sink_heads && r < s.q_heads; ++r) {
        t.sink_head[std::size_t(l) * s.q_heads + draws[std::size_t(r)].second] = 1;
      }
    }
  }

  // Later sink tokens: round(rate · (tokens - sinks)) per layer.
  for (int l = 0; l < s.layers; ++l) {
    const LlmLikeParams& layer = spec.layer_llm(l);
    const int later = std::max(0, s.tokens - layer.sinks);
    t.layers[std::size_t(l)].sink_tokens = std::min(later, int(std::lround(layer.sink_token_rate * later)));
  }

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

  // RoPE angles j * base^(-2p/d) for the rotated pairs p = 0..pairs-1 (standard frequencies), one
  // table per distinct base.
  const int pairs = rotated_pairs(s.head_dim);
  std::vector<double> bases;
  for (int l = 0; l < s.layers; ++l) {
    const double base = spec.layer_llm(l).rope_base;
    const auto found = std::find(bases.begin(), bases.end(), base);
    t.layers[std::size_t(l)].rope_table = int(found - bases.begin());
    if (found == bases.end()) bases.push_back(base);
  }
  const std::size_t table_size = std::size_t(s.tokens) * pairs;
  t.rope_cos.resize(bases.size() * table_size);
  t.rope_sin.resize(t.rope_cos.size());
  for (std::size_t b = 0; b < bases.size(); ++b) {
    for (int p = 0; p < pairs; ++p) {
      const double theta = std::pow(bases[b], -2.0 * p / d);
      for (int j = 0; j < s.tokens; ++j) {
        t.rope_cos[b * table_size + std::size_t(j) * pairs + p] = std::cos(j * theta);
        t.rope_sin[b * table_size + std::size_t(j) * pairs + p] = std::sin(j * theta);
      }
    }
  }

  t.heads.resize(std::size_t(s.layers) * s.kv_heads);
  for (int l = 0; l < s.layers; ++l) {
    for (int h = 0; h < s.kv_heads; ++h) {
      LlmLikeHeadTables& ht = t.heads[std::size_t(l) * s.kv_heads + h];
      const std::uint64_t dir_stream = stream_id(Stream::kDirections, l, h);
      const std::uint64_t structure_seed = spec.layer_llm(l).fixed_structure != 0 ? 0 : spec.seed;
      const auto dirs = orthonormal_draw(structure_seed, dir_stream, 0, 4, kStructureDims);
      std::copy_n(&dirs[0], kStructureDims, ht.u);
      std::copy_n(&dirs[kStructureDims], kStructureDims, ht.c);
      std::copy_n(&dirs[2 * kStructureDims], kStructureDims, ht.p);
      std::copy_n(&dirs[3 * kStructureDims], kStructureDims, ht.p_perp);
      ht.w = orthonormal_draw(structure_seed, dir_stream, 4 * kStructureDims, 1, 2 * pairs);
      if (spec.layer_llm(l).exact_recency != 0) {  // the same weight 1/pairs in every pair: only phases drawn
        for (int p = 0; p < pairs; ++p) {
          const double len = std::sqrt(ht.w[2 * p] * ht.w[2 * p] + ht.w[2 * p + 1] * ht.w[2 * p + 1]);
          const double scale = len > 0 ? 1.0 / (len * std::sqrt(double(pairs))) : 0.0;
          ht.w[2 * p] = len > 0 ? ht.w[2 * p] * scale : 1.0 / std::sqrt(double(pairs));
          ht.w[2 * p + 1] *= scale;
        }
      }
      cut_recency(spec.layer_llm(l).recency_reach, spec.layer_llm(l).rope_base, s.head_dim, ht.w);
      ht.cos_phi.resize(prm.token_types);
      ht.key_scale.resize(prm.token_types);
      const std::uint64_t sal_stream = stream_id(Stream::kTypeSalience, l, h);
      const double lowered = spec.layer_llm(l).salient_low_norm;
      for (int type = 0; type < prm.token_types; ++type) {
        const double exp1 = -std::log(uniform(structure_seed, sal_stream, type));
        ht.cos_phi[type] = std::min(1.0, exp1 / 6.0);
        ht.key_scale[type] = 1.0 - lowered * salience_ramp(ht.cos_phi[type]);
      }
    }
  }
  return t;
}

namespace {

/// Content (of scale `sigma`) plus rotated recency (of scale `rho`) for dims [0, 2*pairs), written
/// as doubles into row[].
void rotated_part(const LlmLikeTables& t, const LlmLikeLayerTables& c, const LlmLikeHeadTables& head,
                  std::uint64_t seed, std::uint64_t content_stream, int pos, double sigma, double rho, double* row) {
  const int pairs = rotated_pairs(t.head_dim);
  const std::uint64_t first_pair = std::uint64_t(pos) * std::uint64_t(t.head_dim / 2);
  const std::size_t angles = (std::size_t(c.rope_table) * std::size_t(t.tokens) + std::size_t(pos)) * pairs;
  for (int p = 0; p < pairs; ++p) {
    double z0, z1;
    normal_pair(seed, content_stream, first_pair + p, &z0, &z1);
    const double cs = t.rope_cos[angles + p];
    const double sn = t.rope_sin[angles + p];
    const double w0 = head.w[2 * p], w1 = head.w[2 * p + 1];
    row[2 * p] = sigma * z0 + rho * (w0 * cs - w1 * sn);
    row[2 * p + 1] = sigma * z1 + rho * (w0 * sn + w1 * cs);
  }
  for (int p = pairs; p < t.head_dim / 2; ++p) {
    double z0, z1;
    normal_pair(seed, content_stream, first_pair + p, &z0, &z1);
    row[2 * p] = sigma * z0;
    row[2 * p + 1] = sigma * z1;
  }
}

}  // namespace

void llm_like_key_row(const LlmLikeTables& t, const LlmLikeHeadTables& head, std::uint64_t seed,
                      int layer, int kv_head, int j, float* out) {
  double row[1024];
  const LlmLikeLayerTables& c = t.layers[std::size_t(layer)];
  const bool sink_token = is_sink_token(seed, c.sinks, c.sink_tokens, t.tokens, j);
  if (c.bare_sinks != 0 && sink_token) {  // a bare sink key: its sink direction alone
    const int base = t.head_dim - kStructureDims;
    const double a = c.sink_amp, m = c.sink_norm;
    for (int x = 0; x < t.head_dim; ++x) {
      out[x] = float(x < base ? 0.0 : m > 0 ? a * head.u[x - base] + m * head.c[x - base] : a * head.u[x - base]);
    }
    return;
  }
  // The key's type scales its content, recency and norm component alike (salient_low_norm).
  const double cos_phi = head.cos_phi[t.token_type[j]];
  const double scale = head.key_scale[t.token_type[j]];
  const double sigma = c.sigma * scale, rho = c.rho * scale;
  rotated_part(t, c, head, seed, stream_id(Stream::kKeyContent, layer, kv_head), j, sigma, rho, row);
  const int first = t.head_dim - kStructureDims;
  if (c.bare_sinks != 0) {
    // No content along the sink direction u: the query's large sink amplitude a_q reads only the
    // sink keys' a_k u, not noise a_q sigma z_u on every other key.
    double along = 0;
    for (int x = 0; x < kStructureDims; ++x) along += row[first + x] * head.u[x];
    for (int x = 0; x < kStructureDims; ++x) row[first + x] = row[first + x] - along * head.u[x];
  }
  const double sink = sink_token ? c.sink_amp : 0.0;
  const double sin_phi = std::sqrt(1.0 - cos_phi * cos_phi);
  const double drawn = c.norm_spread * uniform(seed, stream_id(Stream::kKeyNormBias, layer, kv_head), j);
  const double m = drawn * scale;
  const int base = t.head_dim - kStructureDims;
  for (int x = 0; x < kStructureDims; ++x) {
    row[base + x] += sink * head.u[x] + c.beta * (cos_phi * head.p[x] + sin_phi * head.p_perp[x]) +
                     m * head.c[x];
  }
  for (int x = 0; x < t.head_dim; ++x) out[x] = float(row[x]);
}

void llm_like_query_row(const LlmLikeTables& t, const LlmLikeHeadTables& head, std::uint64_t seed,
                        int layer, int q_head, int i, float* out) {
  double row[1024];
  const LlmLikeLayerTables& c = t.layers[std::size_t(layer)];
  rotated_part(t, c, head, seed, stream_id(Stream::kQueryContent, layer, q_head), i, c.sigma, c.rho, row);
  const double sink = t.sink_head[std::size_t(layer) * t.q_heads + q_head] ? c.sink_amp_q : 0.0;
  const int base = t.head_dim - kStructureDims;
  for (int x = 0; x < kStructureDims; ++x) {
    row[base + x] += sink * head.u[x] + c.eta * head.p[x] - c.gamma * head.c[x];
  }
  for (int x = 0; x < t.head_dim; ++x) out[x] = float(row[x] * c.inv_temperature);
}

}  // namespace subevict
