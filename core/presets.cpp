#include "core/presets.hpp"

#include "core/input_error.hpp"

namespace subevict {

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      {"llama2-7b", 32, 32, 32, 128, 10000.0, 1024, "Llama 2 7B: 32 layers, MHA 32 x 128"},
      {"llama3-8b", 32, 32, 8, 128, 500000.0, 1024, "Llama 3 8B: 32 layers, GQA 32/8 x 128"},
      {"mistral-7b", 32, 32, 8, 128, 10000.0, 1024, "Mistral 7B v0.1: 32 layers, GQA 32/8 x 128"},
      {"opt-6.7b", 32, 32, 32, 128, 10000.0, 1024,
       "OPT 6.7B: 32 layers, MHA 32 x 128 (learned positions; generator recency uses base 1e4)"},
      {"opt-30b", 48, 56, 56, 128, 10000.0, 1024,
       "OPT 30B: 48 layers, MHA 56 x 128 (learned positions; generator recency uses base 1e4)"},
      {"tiny", 2, 2, 2, 8, 10000.0, 32, "test preset: MHA 2 x 8"},
      {"tiny-gqa", 2, 4, 2, 8, 10000.0, 32, "test preset: GQA 4/2 x 8"},
      {"tiny-mqa", 2, 4, 1, 8, 10000.0, 32, "test preset: MQA 4/1 x 8"},
  };
  return all;
}

namespace {

/// Layers 0-1 of the Llama family: dense and sink-free (broad attention: small content scores,
/// no sink, heavy-hitter, key-norm or recency structure).
LlmLikeParams dense_layer() {
  LlmLikeParams p;
  p.content_logit_std = 1.0;
  p.sink_logit = 0;
  p.sink_head_fraction = 0;
  p.heavy_logit = 0;
  p.norm_logit_range = 0;
  p.recency_logit = 0.5;
  return p;
}

/// A deeper layer: token 0 is the one sink, in `fraction` of the heads, strong enough to take most
/// of the mass against ~500 competitors (log 500 ~ 6.2 plus the spread of the other scores); the
/// sink is strongest in the middle layers.
LlmLikeParams sink_layer(int layer, int layers, double fraction) {
  LlmLikeParams p;
  p.sinks = 1;
  p.sink_head_fraction = fraction;
  const double depth = double(layer) / (layers - 1);
  p.sink_logit = 16.0 + 4.0 * depth * (1.0 - depth);
  return p;
}

/// `preset`'s profile: layer l uses layer(l), with the preset's RoPE base.
template <class Layer>
GeneratorProfile build_profile(const Preset& preset, Layer layer) {
  GeneratorProfile profile;
  profile.name = preset.name;
  profile.shape = {preset.layers, preset.q_heads, preset.kv_heads, 1, preset.head_dim};
  for (int l = 0; l < preset.layers; ++l) {
    profile.layers.push_back(layer(l));
    profile.layers.back().rope_base = preset.rope_base;
  }
  return profile;
}

}  // namespace

std::optional<GeneratorProfile> preset_profile(const std::string& name) {
  const Preset& p = find_preset(name);
  // Sink-head rates (share of all heads whose last queries put > 0.3 on token 0) to match:
  // Llama-2-7B 92.5%, Llama-3-8B 99.0%, Mistral-7B 97.5%.
  if (p.name == "llama2-7b") {
    // 64 dense heads in layers 0-1; 0.987 of the other 960 heads: 92.5% of all 1024.
    return build_profile(p, [&](int l) { return l < 2 ? dense_layer() : sink_layer(l, p.layers, 0.987); });
  }
  if (p.name == "llama3-8b") {
    // ~10 non-sink heads, all in layer 0: 99.0%.
    return build_profile(p, [&](int l) { return sink_layer(l, p.layers, l == 0 ? 0.7 : 1.0); });
  }
  if (p.name == "mistral-7b") {
    // ~26 non-sink heads, all in layer 0: 97.5%.
    return build_profile(p, [&](int l) { return sink_layer(l, p.layers, l == 0 ? 0.2 : 1.0); });
  }
  return std::nullopt;
}

const Preset& find_preset(const std::string& name) {
  std::string known;
  for (const Preset& p : presets()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw InputError("preset", "name", "one of " + known, "'" + name + "'");
}

}  // namespace subevict
