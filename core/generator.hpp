#pragma once
/// \file
/// Deterministic attention workloads: i.i.d. Gaussian, and an LLM-like generator whose structures
/// (attention sinks, heavy-hitter token types, low-norm keys, RoPE recency, temperature) each have
/// a strength parameter, so each can be switched off and its effect measured.

#include <cstdint>
#include <string>

#include "core/shape.hpp"
#include "core/workload.hpp"

namespace subevict {

/// Strengths of the LLM-like structures, each in logits (units of the pre-softmax score
/// s_ij = <q_i, k_j> / sqrt(d)), so a value of 0 switches that structure off.
///
/// Model (per layer l and KV head; directions are orthonormal and drawn per head):
///   k_j = sigma z_j + rho R_j w + [j < sinks] a u + beta (cos phi_t p + sin phi_t p') + m_j c
///   q_i = (sigma z'_i + rho R_i w + a u + eta p - gamma c) / temperature
/// z, z' i.i.d. standard normal (content), R_j the RoPE rotation of position j applied to the
/// recency vector w, t = type(j) drawn Zipf(zipf_alpha) over `token_types` types (shared by all
/// layers and heads: types are token identities), cos phi_t = min(1, E_t / 6) with E_t ~ Exp(1)
/// per (head, type), m_j = norm_spread U_j with U_j ~ U(0, 1) per (head, token). The structure
/// directions u, c, p, p' live in the last three rotary pairs (the lowest frequencies, which real
/// models use as position-insensitive channels) and are left unrotated; w lives in the other pairs.
/// Resulting logit contributions: content ~ N(0, content_logit_std^2); recency
/// recency_logit * mean_p cos((i-j) theta_p); sink sink_logit; heavy hitter
/// 6 heavy_logit cos phi_t (so heavy_logit * Exp(1) truncated at 6: a power-law tail of exp(score));
/// key norm -norm_logit_range * U_j, i.e. low-norm keys attract attention.
struct LlmLikeParams {
  double content_logit_std = 1.5;
  int sinks = 4;                 ///< number of sink tokens (the first positions)
  double sink_logit = 7.0;
  int token_types = 512;
  double zipf_alpha = 1.1;
  double heavy_logit = 1.2;
  double norm_logit_range = 3.0;
  double norm_spread = 24.0;     ///< range of the key-norm component (in key units)
  double recency_logit = 3.0;
  double rope_base = 10000.0;
  double temperature = 1.0;      ///< queries are divided by this
  double value_std = 1.0;

  /// Throws InputError naming the field unless every value is finite and in range.
  void validate() const;
};

/// Calls visit(name, field, help) for every field of `params` (an LlmLikeParams, const or not), in
/// declaration order: the one list of parameters that the command line and the workload metadata
/// are built from.
template <class Params, class Visit>
void for_each_llm_field(Params& params, Visit visit) {
  visit("content_logit_std", params.content_logit_std, "Std of content scores");
  visit("sinks", params.sinks, "Attention-sink tokens (the first positions)");
  visit("sink_logit", params.sink_logit, "Score bonus of sinks (0: off)");
  visit("token_types", params.token_types, "Heavy-hitter token types");
  visit("zipf_alpha", params.zipf_alpha, "Zipf exponent of type frequency");
  visit("heavy_logit", params.heavy_logit, "Scale of type salience (0: off)");
  visit("norm_logit_range", params.norm_logit_range, "Score range of low-norm keys (0: off)");
  visit("norm_spread", params.norm_spread, "Range of the key-norm offset, in key units");
  visit("recency_logit", params.recency_logit, "RoPE recency score (0: off)");
  visit("rope_base", params.rope_base, "RoPE base (default: the preset's)");
  visit("temperature", params.temperature, "Softmax temperature");
  visit("value_std", params.value_std, "Std of values");
}

enum class GeneratorKind { kGaussian, kLlmLike };

/// Everything that determines a generated workload. The result is a pure function of this spec
/// (and not of the thread count).
struct WorkloadSpec {
  Shape shape;
  GeneratorKind kind = GeneratorKind::kLlmLike;
  LlmLikeParams llm;
  std::uint64_t seed = 0;
  std::string preset;  ///< informational, recorded in the workload's metadata
};

/// The spec of preset `name` (see presets.hpp) with the given tokens (0: the preset's default),
/// layers (0: all of the model's layers) and seed, LLM-like structure with the preset's RoPE base.
WorkloadSpec spec_from_preset(const std::string& name, int tokens, int layers, std::uint64_t seed);

/// Generates Q, K, V. Gaussian: every element i.i.d. N(0, 1). LLM-like: the model above; requires
/// an even head_dim >= 8. `threads` (0 = OpenMP default) changes nothing but speed. Throws
/// InputError for an invalid spec. Cost O(layers * heads * tokens * head_dim).
Workload generate_workload(const WorkloadSpec& spec, int threads = 0);

/// "gaussian" / "llm-like"; parse throws InputError for other names.
std::string to_string(GeneratorKind kind);
GeneratorKind parse_generator_kind(const std::string& name);

}  // namespace subevict
