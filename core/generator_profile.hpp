#pragma once
/// \file
/// Per-layer generator profiles: a model's geometry plus one LlmLikeParams per layer, stored as a
/// TOML file (format "subevict.profile.v1", docs/workloads.md) and turned into a WorkloadSpec.
///
///   format = "subevict.profile.v1"
///   name = "llama2-7b"        # optional, informational
///   [shape]                   # required: layers (the model's depth), q_heads, kv_heads,
///   layers = 32               #   head_dim; optional score_scale (>= kLlmMinMagnitude; absent:
///                             #   1/sqrt(head_dim))
///   q_heads = 32
///   kv_heads = 32
///   head_dim = 128
///   [defaults]                # optional: any LlmLikeParams field (for_each_llm_param names)
///   rope_base = 10000.0
///   [[layers]]                # exactly shape.layers tables in layer order; their fields
///   sink_head_fraction = 0.0  #   override [defaults], omitted ones keep [defaults]'s value
///
/// Integer fields (sinks, token_types, window) take TOML integers; the others numbers (integer or float).

#include <cstdint>
#include <string>
#include <vector>

#include "core/generator.hpp"
#include "core/shape.hpp"

namespace subevict {

/// A model's attention geometry and its per-layer LLM-like parameters.
struct GeneratorProfile {
  std::string name;                 ///< informational; recorded as the workload's "profile"
  Shape shape;                      ///< the model's geometry; layers is its depth, tokens unused (1)
  double score_scale = 0;           ///< s_ij = score_scale <q_i, k_j>; 0 means 1/sqrt(head_dim)
  std::vector<LlmLikeParams> layers;  ///< one per model layer, in layer order

  friend bool operator==(const GeneratorProfile&, const GeneratorProfile&) = default;
};

/// The profile in the TOML file at `path`. Strict: throws InputError naming the file, the key (and
/// the layer, as "[[layers]] #L KEY") and the expectation for a TOML syntax error, a missing or
/// unknown key, a value of the wrong type, a non-finite or out-of-range value (integers outside
/// int, parameters outside LlmLikeParams::validate's ranges in [defaults] or a layer), a layer count other
/// than shape.layers, an invalid geometry, or layers that disagree on token_types or zipf_alpha.
/// Also InputError when the file cannot be read.
GeneratorProfile read_profile(const std::string& path);

/// Writes `profile` to `path` atomically (core/atomic_file.hpp) in the format read_profile reads:
/// parameters with one value in every layer under [defaults], the others in each [[layers]]
/// table; numbers in shortest round-trip form, so read_profile(path) == profile. Throws
/// InputError if the profile is invalid (as read_profile would) or the file cannot be written.
void write_profile(const std::string& path, const GeneratorProfile& profile);

/// The LLM-like spec of the first `layers` layers of `profile` (0: all of them) at `tokens`
/// tokens (>= 1) under `seed`; spec.profile = profile.name, spec.llm left at its defaults (unused).
/// Throws InputError for tokens < 1, layers < 0 or layers > profile.shape.layers, or an invalid
/// profile (validate_spec).
WorkloadSpec spec_from_profile(const GeneratorProfile& profile, int tokens, int layers, std::uint64_t seed);

}  // namespace subevict
