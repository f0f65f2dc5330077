#pragma once
/// \file
/// Deterministic attention workloads: i.i.d. Gaussian, and an LLM-like generator whose structures
/// (attention sinks, heavy-hitter token types, low-norm keys, RoPE recency, temperature) each have
/// a strength parameter, so each can be switched off and its effect measured.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/shape.hpp"
#include "core/workload.hpp"

namespace subevict {

/// Largest logit strength, value_std and norm_spread of the LLM-like generator (see LlmLikeParams).
inline constexpr double kLlmMaxMagnitude = 1e6;
/// Smallest temperature, norm_spread and nonzero score_scale of the LLM-like generator.
inline constexpr double kLlmMinMagnitude = 1e-6;
/// How much of LlmLikeParams::salient_low_norm a token type of salience cos phi_t gets: 0 below
/// 1/4 (a type logit under a quarter of its cap; 78% of the types), rising linearly to 1 at 1/2
/// and above (5% of the types), so the most salient types' keys are the lowest.
constexpr double salience_ramp(double cos_phi) {
  return cos_phi <= 0.25 ? 0.0 : cos_phi >= 0.5 ? 1.0 : (cos_phi - 0.25) / 0.25;
}
/// Most heavy-hitter token types of the LLM-like generator: 2^18 covers every tokenizer's
/// vocabulary, and the per-type tables (token_types x head_dim doubles per head) stay below a GiB.
inline constexpr int kLlmMaxTokenTypes = 1 << 18;

/// Strengths of the LLM-like structures, each in logits (units of the pre-softmax score
/// s_ij = <q_i, k_j> / sqrt(d)), so a value of 0 switches that structure off.
///
/// Model (per layer l and KV head; directions are orthonormal and drawn per head):
///   k_j = sigma z_j + rho R_j w + [j < sinks] a u + beta (cos phi_t p + sin phi_t p') + m_j c
///   q_i = (sigma z'_i + rho R_i w + a u + eta p - gamma c) / temperature
/// z, z' i.i.d. standard normal (content), R_j the RoPE rotation of position j applied to the
/// recency vector w, t = type(j) drawn Zipf(zipf_alpha) over `token_types` types (shared by all
/// layers and heads: types are token identities), cos phi_t = min(1, E_t / 6) with E_t ~ Exp(1)
/// per (head, type), m_j = norm_spread U_j with U_j ~ U(0, 1) per (head, token) (a key's sigma z_j,
/// rho R_j w and m_j times 1 - salient_low_norm · salience_ramp(cos phi_t)). The structure
/// directions u, c, p, p' live in the last three rotary pairs (the lowest frequencies, which real
/// models use as position-insensitive channels) and are left unrotated; w lives in the other pairs.
/// Resulting logit contributions: content ~ N(0, content_logit_std^2); recency
/// recency_logit * mean_p cos((i-j) theta_p); sink sink_logit; heavy hitter
/// 6 heavy_logit cos phi_t (so heavy_logit * Exp(1) truncated at 6: a power-law tail of exp(score));
/// key norm -norm_logit_range * U_j, i.e. low-norm keys attract attention (high-norm ones when
/// norm_logit_range < 0).
/// Sink heads: the query term a u is present only in the query heads that are sink heads; query
/// head h of layer l is one iff uniform(seed, stream (kSinkHead, l, h), 0) < sink_head_fraction
/// (so 1 makes every head one, the model before the fraction existed, and 0 none); with
/// sink_heads >= 0 exactly that many heads per layer are (see LlmLikeParams::sink_heads).
/// A WorkloadSpec may give each layer its own LlmLikeParams (WorkloadSpec::layer_params).
///
/// Magnitude bounds (validate, validate_spec): the logit strengths, value_std and norm_spread are
/// at most kLlmMaxMagnitude; temperature, norm_spread and a nonzero score_scale at least
/// kLlmMinMagnitude. With every parameter at its bound at once and head_dim in [8, 1024], the
/// largest generated entry is about gamma / temperature <= 10^24 (gamma = norm_logit_range /
/// (score_scale norm_spread)), so Q, K and V stay finite in float (max ~3.4e38); without the
/// bounds finite parameters overflow to Inf (and 0 * Inf to NaN).
struct LlmLikeParams {
  double content_logit_std = 1.5;
  int sinks = 4;                 ///< number of sink tokens (the first positions)
  double sink_logit = 7.0;
  double sink_head_fraction = 1.0;  ///< share of query heads that attend to the sinks, in [0, 1]
  /// Exact number of sink heads per layer, in [0, q_heads]; -1 (the default, and every profile
  /// written before the field existed): sink_head_fraction decides per head. When set, the seed
  /// chooses WHICH heads (the sink_heads smallest draws uniform(seed, (kSinkHead, l, h), 0), ties
  /// to the lower head) but never HOW MANY, so every seed of a twin has the same sink structure.
  int sink_heads = -1;
  /// 1: the sink tokens get the lowest key norm, as in real models: a sink key is only its sink
  /// direction, a_k u with a_k = min(a, ref / 4) (ref the key norm of a token without sink and
  /// norm component), and the sink amplitude sits on the query side (a_q = a^2 / a_k, so the sink
  /// logit is unchanged); no content, recency, type or norm term (m_j = 0); the other keys carry
  /// no content along u (so a_q reads no noise from them). 0 (the default): the
  /// sink key is an ordinary key plus a u, with a mid-range drawn norm component.
  int low_norm_sinks = 0;
  /// 1: a sink key is its sink direction alone, a u, at the full amplitude (the key a low_norm_sinks
  /// sink has, without lowering its norm), and the other keys carry no content along u: the sink
  /// logit is exactly sink_logit under every seed instead of sink_logit plus the sink token's own
  /// drawn content, type and norm terms (about +-1 logit at a content_logit_std of 1.5, which moves
  /// a layer's first-token mass by a factor e from seed to seed). Implied by low_norm_sinks.
  /// 0 (the default): the sink key is an ordinary drawn key plus a u.
  int exact_sinks = 0;
  /// 1: the recency vector w has the same magnitude in every rotary pair (only each pair's phase
  /// is drawn), so the recency logit is exactly recency_logit * mean_p cos((i-j) theta_p) under
  /// every seed. 0 (the default): w is a uniformly drawn unit vector, the documented mean holds
  /// in expectation only and the recency profile of a (layer, KV head) varies with the seed.
  int exact_recency = 0;
  /// How far back the recency reaches, in keys: rotary pair p, of wavelength lambda_p = 1 /
  /// theta_p = rope_base^(2p / head_dim), keeps the share 1 / (1 + (lambda_p / recency_reach)^4)
  /// of its weight and the weights are renormalized, so the recency logit falls to about 0 at
  /// distances beyond recency_reach (with exact_recency: recency_logit * sum_p share_p
  /// cos((i-j) theta_p), shares proportional to those). 0 (the default): no cut, the recency
  /// reaches as far as the longest wavelength.
  double recency_reach = 0.0;
  /// In [0, 1]: the keys of heavy-hitter token types get their content, their recency component
  /// and their key-norm component (sigma z_j, rho R_j w and m_j) scaled by 1 - salient_low_norm ·
  /// salience_ramp(cos phi_t) (the most salient types fully, none below a quarter of the cap), so
  /// they sit at the lowest key norms, as real models' heavy hitters do in layers without a sink
  /// (SmolLM2-135M: the lowest-norm tenth of the keys receives 0.60-0.71 of the attention), while
  /// the other keys keep their drawn, unordered norms. Their logits change too: up to
  /// norm_logit_range more from the norm term, a narrower content spread, and less recency (at 1
  /// none: the most salient keys draw attention from every distance alike, as real heavy hitters
  /// do). 0 (the default): every key as the model above.
  double salient_low_norm = 0.0;
  /// In [0, 1): the share of the tokens after the first `sinks` that are sink tokens too, keyed as
  /// the first ones are (the same sink term, bare with low_norm_sinks or exact_sinks), as real
  /// models' early layers attend to a dozen later tokens alike with the first one (SmolLM2-135M
  /// layers 3-10: 11-13 of 2048 keys, at the lowest key norms, 0.2-0.8 of the attention). Exactly
  /// K = round(sink_token_rate · (tokens - sinks)) of them, one in each of K equal stretches of
  /// the later tokens, at the place uniform(seed, (kSinkToken, 0, 0), s) draws within stretch s
  /// (core/sink_token.hpp): the seed chooses WHERE (as the text does) but never HOW MANY, nor
  /// leaves a long stretch without one (where they fall decides how much a window that keeps the
  /// first token misses: drawn independently per token, the twin's streamingllm / OPT moved by up
  /// to 0.15 between seeds). Layers with the same K share them. 0 (the default): the first `sinks`
  /// tokens only.
  double sink_token_rate = 0.0;
  /// In [0, 1], or -1 (the default: off): the sink tokens' keys (the first `sinks` and the later
  /// ones of sink_token_rate alike) get the norm of an ordinary key whose drawn norm component sits
  /// at this quantile, sqrt(ref^2 + (q · norm_spread)^2) with ref the norm of a key without sink
  /// and norm component, as some real layers key their sinks at a high norm (Gemma 3 270M: the
  /// first key at rank 1232-2047 of 2048 in layers 5, 11, 12 and 15, the later sinks of 12 and 15
  /// at 1577-2045). The key is bare (implies exact_sinks): a_k' u + m c, with m >= 0 along the
  /// norm direction c and a_k' = a_k + gamma m / a_q (gamma the norm term's query coefficient), so
  /// a sink head's sink logit stays what it was, while a head without the sink term reads the key's
  /// norm as any other key's (-norm_logit_range · the norm share). Where the sink key already has
  /// that norm or more (with low_norm_sinks it has the lowest), it is unchanged.
  double sink_norm_quantile = -1.0;
  /// 1: the layer's per-head structure (which heads are sink heads, the directions u, c, p, p',
  /// the recency vector w, the type saliences cos phi_t) is drawn with seed 0 whatever the
  /// workload's seed, like a model's weights; only the token-level draws (content, token types,
  /// norm components m_j) follow the seed, like the text. A twin's seeds then differ as texts do.
  /// 0 (the default): every draw follows the seed.
  int fixed_structure = 0;
  int token_types = 512;
  double zipf_alpha = 1.1;
  double heavy_logit = 1.2;
  /// Logit range of the key-norm term -norm_logit_range * U_j: positive, low-norm keys attract
  /// attention; negative, high-norm keys do.
  double norm_logit_range = 3.0;
  double norm_spread = 24.0;     ///< range of the key-norm component (in key units)
  double recency_logit = 3.0;
  double rope_base = 10000.0;
  double temperature = 1.0;      ///< queries are divided by this
  double value_std = 1.0;
  /// The layer's attention mask (Workload::window): 0 global, W >= 1 a sliding window of W keys.
  /// It shapes no tensor; the generated workload records it, and every measurement masks with it.
  int window = 0;

  /// Throws InputError naming the field and its range unless every value is finite and in range:
  /// content_logit_std, sink_logit, heavy_logit, recency_logit and value_std in
  /// [0, kLlmMaxMagnitude]; norm_logit_range in [-kLlmMaxMagnitude, kLlmMaxMagnitude]; sinks >= 0;
  /// sink_head_fraction in [0, 1]; sink_heads >= -1; low_norm_sinks, exact_sinks, exact_recency
  /// and fixed_structure 0 or 1; recency_reach 0 or in [1, kLlmMaxMagnitude]; salient_low_norm in
  /// [0, 1]; sink_token_rate in [0, 1); sink_norm_quantile -1 or in [0, 1]; token_types in [1, kLlmMaxTokenTypes];
  /// zipf_alpha >= 0; norm_spread in [kLlmMinMagnitude, kLlmMaxMagnitude]; rope_base > 1;
  /// temperature >= kLlmMinMagnitude; window >= 0.
  void validate() const;

  friend bool operator==(const LlmLikeParams&, const LlmLikeParams&) = default;
};

/// Calls visit(name, field, help) for the fields of `params` (an LlmLikeParams, const or not) that
/// existed in version 1 of the sweep job ids, in declaration order: sweep grids and job ids are
/// built from this list, so it never grows (ids stay stable). Every other use takes
/// for_each_llm_param.
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

/// Calls visit(name, field, help) for every field of `params`: for_each_llm_field's, then
/// sink_head_fraction, window, sink_heads, low_norm_sinks, exact_recency, fixed_structure,
/// exact_sinks, recency_reach, salient_low_norm, sink_token_rate and sink_norm_quantile. The
/// one list the command line, the workload metadata and profile files (core/generator_profile.hpp)
/// are built from.
template <class Params, class Visit>
void for_each_llm_param(Params& params, Visit visit) {
  for_each_llm_field(params, visit);
  visit("sink_head_fraction", params.sink_head_fraction, "Share of query heads that attend to the sinks");
  visit("window", params.window, "Attention mask: 0 global, W a sliding window of W keys");
  visit("sink_heads", params.sink_heads, "Exact sink heads per layer (-1: sink_head_fraction decides per head)");
  visit("low_norm_sinks", params.low_norm_sinks, "1: sink keys have the lowest key norm (sink amplitude on the query side)");
  visit("exact_recency", params.exact_recency, "1: the same recency spectrum under every seed (equal weight per rotary pair)");
  visit("fixed_structure", params.fixed_structure, "1: per-head structure drawn with seed 0 (a model's weights); tokens follow the seed");
  visit("exact_sinks", params.exact_sinks, "1: a sink key is its sink direction alone (the sink logit under every seed)");
  visit("recency_reach", params.recency_reach, "Keys beyond which the recency falls off (0: no cut)");
  visit("salient_low_norm", params.salient_low_norm,
        "In [0, 1]: how far heavy-hitter keys' content, recency and norm component are lowered (1: the lowest norms)");
  visit("sink_token_rate", params.sink_token_rate,
        "In [0, 1): share of the later tokens that are sink tokens too (0: the first `sinks` only)");
  visit("sink_norm_quantile", params.sink_norm_quantile,
        "In [0, 1]: the sink keys' norm, as a quantile of the drawn key norms (-1: off)");
}

/// For each parameter of for_each_llm_param, in its order: (name, its value in each of `layers`),
/// values as doubles (exact for the integer fields).
std::vector<std::pair<const char*, std::vector<double>>> llm_param_columns(const std::vector<LlmLikeParams>& layers);

enum class GeneratorKind { kGaussian, kLlmLike };

/// Everything that determines a generated workload. The result is a pure function of this spec
/// (and not of the thread count).
struct WorkloadSpec {
  Shape shape;
  GeneratorKind kind = GeneratorKind::kLlmLike;
  LlmLikeParams llm;  ///< the parameters of every layer when layer_params is empty
  /// Empty: `llm` in every layer. Otherwise exactly shape.layers entries, layer l generated with
  /// layer_params[l] (and `llm` unused). token_types and zipf_alpha must agree across layers
  /// (token types are token identities shared by all layers); rope_base may differ per layer.
  std::vector<LlmLikeParams> layer_params;
  std::uint64_t seed = 0;
  /// The factor s_ij = score_scale <q_i, k_j> the workload declares (0: 1/sqrt(head_dim)); the
  /// LLM-like parameters are logits under this scale.
  double score_scale = 0;
  std::string preset;   ///< informational, recorded in the workload's metadata
  std::string profile;  ///< informational (the per-layer profile's name), recorded likewise

  /// The LLM-like parameters of layer `layer` (0 <= layer < shape.layers).
  const LlmLikeParams& layer_llm(int layer) const {
    return layer_params.empty() ? llm : layer_params[std::size_t(layer)];
  }
};

/// Which LLM-like parameters spec_from_preset gives a preset.
enum class PresetParams {
  kUniform,  ///< the LlmLikeParams defaults in every layer (with the preset's RoPE base)
  kProfile,  ///< the preset's per-layer profile (preset_profile) where it has one, else kUniform
};

/// The spec of preset `name` (see presets.hpp) with the given tokens (0: the preset's default),
/// layers (0: all of the model's layers; with a profile, its first `layers` layers) and seed,
/// LLM-like structure with the preset's RoPE base. Throws InputError for an unknown preset or a
/// negative count.
WorkloadSpec spec_from_preset(const std::string& name, int tokens, int layers, std::uint64_t seed,
                              PresetParams params = PresetParams::kUniform);

/// Throws InputError naming the field (and the layer) unless `spec` can be generated: a valid shape
/// (std::invalid_argument from Shape::validate), and for the LLM-like generator valid parameters
/// in every layer, layer_params empty or one per layer, agreeing where they must, and an even
/// head_dim in [8, 1024]; score_scale finite and >= 0, and for the LLM-like generator 0 or
/// >= kLlmMinMagnitude.
void validate_spec(const WorkloadSpec& spec);

/// A zero-filled Workload of spec.shape carrying what generate_workload records besides the
/// tensors: the score scale and the metadata ("generator", "seed", "preset", "profile", and for
/// the LLM-like generator "llm.NAME" for every parameter with one value in all layers plus, when
/// some vary, "llm.per_layer": a compact JSON object {NAME: [value of layer 0, 1, ...]} of the
/// others). Validates the spec first (validate_spec). Backends fill the tensors.
Workload prepare_workload(const WorkloadSpec& spec);

/// Generates Q, K, V. Gaussian: every element i.i.d. N(0, 1). LLM-like: the model above; requires
/// an even head_dim >= 8. `threads` (0 = OpenMP default) changes nothing but speed. Throws
/// InputError for an invalid spec. Cost O(layers * heads * tokens * head_dim).
Workload generate_workload(const WorkloadSpec& spec, int threads = 0);

/// Layers [first, first + count) of generate_workload(spec, threads), bit for bit, as a workload
/// of `count` layers with generate_workload's metadata: each layer keeps its own random streams,
/// and the layers outside the range are not generated. Throws InputError for an invalid spec or a
/// range outside 0..spec.shape.layers. Cost O(count * heads * tokens * head_dim).
Workload generate_layers(const WorkloadSpec& spec, int first, int count, int threads = 0);

/// generate_layers(spec, first, count, threads) with only the KV heads `kv_heads` generated: their
/// K and V rows and their query heads' Q rows, bit for bit; every other row stays 0, and when some
/// KV head is left out the metadata's "generated_kv_heads" lists the generated ones in the
/// index-set syntax (format_index_set: "0,2", "0-3").
/// For runs that read a few heads of a long context (simulate --heads 0 on llama2-7b generates 1
/// of 32). Throws as generate_layers, and InputError unless kv_heads is non-empty, ascending and
/// within [0, kv_heads). Cost O(count * |kv_heads| * (g + 2) * tokens * head_dim).
Workload generate_kv_heads(const WorkloadSpec& spec, int first, int count, const std::vector<int>& kv_heads,
                           int threads = 0);

/// "gaussian" / "llm-like"; parse throws InputError for other names.
std::string to_string(GeneratorKind kind);
GeneratorKind parse_generator_kind(const std::string& name);

}  // namespace subevict
