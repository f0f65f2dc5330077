#pragma once
/// \file
/// The LLM-like generator split into host-side tables (small, per head) and element functions that
/// evaluate one query or key row from them. The row functions use only IEEE +, -, *, /, sqrt on the
/// tables and on counter_rng draws, in a fixed order, so a device port that evaluates the same
/// expressions on the same tables reproduces the CPU's bits. Tables are built on the host.

#include <cstdint>
#include <vector>

#include "core/counter_rng.hpp"
#include "core/generator.hpp"
#include "core/sink_token.hpp"

namespace subevict {

/// Dimensions reserved for the unrotated structure directions (the last three rotary pairs).
inline constexpr int kStructureDims = 6;

/// Per-head directions and the coefficients derived from LlmLikeParams.
struct LlmLikeHeadTables {
  double u[kStructureDims] = {}, c[kStructureDims] = {}, p[kStructureDims] = {};
  double p_perp[kStructureDims] = {};
  std::vector<double> w;           ///< recency vector over the first head_dim - 6 dims, unit norm
  std::vector<double> cos_phi;     ///< per token type: alignment of the type's key direction with p
  /// Per token type: the factor on a key's content, recency and norm component, 1 -
  /// salient_low_norm · salience_ramp(cos_phi) (exactly 1 for every type when salient_low_norm is 0).
  std::vector<double> key_scale;
};

/// The coefficients of one layer, derived from its LlmLikeParams (see build_llm_like_tables).
struct LlmLikeLayerTables {
  /// sink_amp: the sink amplitude a of the keys; sink_amp_q: the queries' (a, or a^2 / a_k with
  /// low_norm_sinks, see LlmLikeParams::low_norm_sinks).
  double sigma = 0, rho = 0, sink_amp = 0, beta = 0, eta = 0, gamma = 0, norm_spread = 0;
  double inv_temperature = 1, value_std = 1;
  int sinks = 0;
  double sink_amp_q = 0;
  /// 1: a sink key is sink_amp u alone and other keys carry no content along u
  /// (LlmLikeParams::low_norm_sinks, exact_sinks or sink_norm_quantile).
  int bare_sinks = 0;
  int rope_table = 0;      ///< which of LlmLikeTables' RoPE tables (the layer's rope_base) it reads
  /// The number of later sink tokens, round(LlmLikeParams::sink_token_rate · (tokens - sinks)),
  /// placed by is_sink_token (core/sink_token.hpp).
  int sink_tokens = 0;
  /// A bare sink key's component along the norm direction c: it is sink_amp u + sink_norm c
  /// (LlmLikeParams::sink_norm_quantile; else 0).
  double sink_norm = 0;
};

/// Tables shared by all heads (token identities and RoPE angles) plus the per-layer and per-head
/// tables. One RoPE table per distinct rope_base, in order of first use by layer (a model with one
/// base has one table).
struct LlmLikeTables {
  int tokens = 0, head_dim = 0, q_heads = 0;
  std::vector<LlmLikeLayerTables> layers;  ///< [layer]
  std::vector<std::uint8_t> sink_head;     ///< [layer][q_head]: 1 iff the query has the sink term
  std::vector<std::int32_t> token_type;    ///< [tokens]
  std::vector<double> rope_cos, rope_sin;  ///< [rope table][tokens][rotated pairs]
  std::vector<LlmLikeHeadTables> heads;    ///< [layer][kv_head]
};

/// Builds every table for `spec` (host only; uses std::pow, std::cos on the host). Precondition:
/// validate_spec(spec) passed.
LlmLikeTables build_llm_like_tables(const WorkloadSpec& spec);

/// Key row j of (layer, kv_head) into out[0..head_dim).
void llm_like_key_row(const LlmLikeTables& t, const LlmLikeHeadTables& head, std::uint64_t seed,
                      int layer, int kv_head, int j, float* out);
/// Query row i of (layer, q_head) reading KV head tables `head` into out[0..head_dim).
void llm_like_query_row(const LlmLikeTables& t, const LlmLikeHeadTables& head, std::uint64_t seed,
                        int layer, int q_head, int i, float* out);

}  // namespace subevict
