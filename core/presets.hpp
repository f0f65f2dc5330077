#pragma once
/// \file
/// Named model shapes for workload generation.

#include <optional>
#include <string>
#include <vector>

#include "core/generator_profile.hpp"

namespace subevict {

/// The attention geometry of a model (per layer) and its rotary base. `layers` is the model's
/// depth; experiments usually generate fewer layers (the CLI's --layers).
struct Preset {
  std::string name;
  int layers;
  int q_heads;
  int kv_heads;
  int head_dim;
  double rope_base;     ///< RoPE base (theta); models without RoPE use 10000 for the generator
  int default_tokens;   ///< tokens when the caller gives none
  std::string note;     ///< where the numbers come from
};

/// All presets: llama2-7b, llama3-8b, mistral-7b, opt-6.7b, opt-30b and the tiny test presets
/// tiny (MHA), tiny-gqa and tiny-mqa.
const std::vector<Preset>& presets();

/// The preset called `name`; throws InputError listing the known names otherwise.
const Preset& find_preset(const std::string& name);

/// The per-layer profile of preset `name` (llama2-7b, llama3-8b, mistral-7b: one LlmLikeParams per
/// model layer, chosen to match published per-layer attention statistics, docs/workloads.md), or
/// nullopt for a preset without one (the OPT and tiny presets). Throws InputError for an unknown
/// name.
std::optional<GeneratorProfile> preset_profile(const std::string& name);

}  // namespace subevict
