#include "core/generator.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/counter_rng.hpp"
#include "core/generator_profile.hpp"
#include "core/index_set.hpp"
#include "core/input_error.hpp"
#include "core/llm_like_model.hpp"
#include "core/number_text.hpp"
#include "core/presets.hpp"

namespace subevict {
namespace {

constexpr int kMaxHeadDim = 1024;

void require(bool ok, const std::string& field, const std::string& expected, double got) {
  if (!ok) throw InputError("llm-like parameters", field, expected, significant_digits(got, 17));
}

/// Runs row(layer, head, token, offset) for every row of a tensor with `heads` heads of `w`
/// (q_heads or kv_heads) whose KV head is in `kv_heads`, in parallel over those rows only:
/// `layer` is the model's layer (w's layer plus `first`), `offset` the row's place in w.
template <class RowFn>
void for_each_row(const Workload& w, int first, int heads, const std::vector<int>& kv_heads, int threads, RowFn row) {
  const Shape& s = w.shape();
  const int per_kv = heads / s.kv_heads;  // g for Q, 1 for K and V
  const long long units = (long long)kv_heads.size() * per_kv;  // heads generated per layer
  const long long rows = (long long)s.layers * units * s.tokens;
  const int team = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel for num_threads(team) schedule(static)
  for (long long r = 0; r < rows; ++r) {
    const int token = int(r % s.tokens);
    const int unit = int((r / s.tokens) % units);
    const int head = kv_heads[std::size_t(unit / per_kv)] * per_kv + unit % per_kv;
    const long long layer = r / (s.tokens * units);
    const long long place = (layer * heads + head) * s.tokens + token;
    row(first + int(layer), head, token, std::size_t(place) * std::size_t(s.head_dim));
  }
}

void generate_gaussian(const WorkloadSpec& spec, int first, const std::vector<int>& kv, int threads, Workload& w) {
  const Shape& s = spec.shape;
  auto fill = [&](std::vector<float>& data, Stream stream) {
    return [&data, &spec, &s, stream](int layer, int head, int token, std::size_t offset) {
      const std::uint64_t id = stream_id(stream, layer, head);
      const std::uint64_t element = std::uint64_t(token) * s.head_dim;
      for (int x = 0; x < s.head_dim; ++x) data[offset + x] = float(normal(spec.seed, id, element + x));
    };
  };
  for_each_row(w, first, s.q_heads, kv, threads, fill(w.q_data(), Stream::kQueryContent));
  for_each_row(w, first, s.kv_heads, kv, threads, fill(w.k_data(), Stream::kKeyContent));
  for_each_row(w, first, s.kv_heads, kv, threads, fill(w.v_data(), Stream::kValue));
}

void generate_llm_like(const WorkloadSpec& spec, int first, const std::vector<int>& kv, int threads, Workload& w) {
  const Shape& s = spec.shape;
  const LlmLikeTables tables = build_llm_like_tables(spec);
  auto head_tables = [&](int layer, int kv_head) -> const LlmLikeHeadTables& {
    return tables.heads[std::size_t(layer) * s.kv_heads + kv_head];
  };
  for_each_row(w, first, s.q_heads, kv, threads, [&](int l, int h, int i, std::size_t off) {
    llm_like_query_row(tables, head_tables(l, s.kv_head_of(h)), spec.seed, l, h, i,
                       w.q_data().data() + off);
  });
  for_each_row(w, first, s.kv_heads, kv, threads, [&](int l, int h, int j, std::size_t off) {
    llm_like_key_row(tables, head_tables(l, h), spec.seed, l, h, j, w.k_data().data() + off);
  });
  for_each_row(w, first, s.kv_heads, kv, threads, [&](int l, int h, int j, std::size_t off) {
    const double value_std = tables.layers[std::size_t(l)].value_std;
    const std::uint64_t id = stream_id(Stream::kValue, l, h);
    const std::uint64_t element = std::uint64_t(j) * s.head_dim;
    for (int x = 0; x < s.head_dim; ++x) {
      w.v_data()[off + x] = float(value_std * normal(spec.seed, id, element + x));
    }
  });
}

}  // namespace

std::vector<std::pair<const char*, std::vector<double>>> llm_param_columns(const std::vector<LlmLikeParams>& layers) {
  std::vector<std::pair<const char*, std::vector<double>>> columns;
  for (const LlmLikeParams& p : layers) {
    std::size_t param = 0;
    for_each_llm_param(p, [&](const char* name, const auto& value, const char*) {
      if (param == columns.size()) columns.push_back({name, {}});
      columns[param++].second.push_back(double(value));
    });
  }
  return columns;
}

void LlmLikeParams::validate() const {
  const std::string magnitude = "a finite value in [0, " + significant_digits(kLlmMaxMagnitude, 10) + "]";
  const std::string least = "a finite value >= " + significant_digits(kLlmMinMagnitude, 10);
  auto in_magnitude = [](double v) { return std::isfinite(v) && v >= 0 && v <= kLlmMaxMagnitude; };
  require(in_magnitude(content_logit_std), "content_logit_std", magnitude, content_logit_std);
  require(sinks >= 0, "sinks", "a count >= 0", sinks);
  require(in_magnitude(sink_logit), "sink_logit", magnitude, sink_logit);
  require(sink_head_fraction >= 0 && sink_head_fraction <= 1, "sink_head_fraction", "a value in [0, 1]",
          sink_head_fraction);
  require(sink_heads >= -1, "sink_heads", "a count >= 0, or -1 (sink_head_fraction decides)", sink_heads);
  require(low_norm_sinks == 0 || low_norm_sinks == 1, "low_norm_sinks", "0 or 1", low_norm_sinks);
  require(exact_sinks == 0 || exact_sinks == 1, "exact_sinks", "0 or 1", exact_sinks);
  require(exact_recency == 0 || exact_recency == 1, "exact_recency", "0 or 1", exact_recency);
  require(fixed_structure == 0 || fixed_structure == 1, "fixed_structure", "0 or 1", fixed_structure);
  require(token_types >= 1 && token_types <= kLlmMaxTokenTypes, "token_types",
          "an integer in [1, " + std::to_string(kLlmMaxTokenTypes) + "]", token_types);
  require(std::isfinite(zipf_alpha) && zipf_alpha >= 0, "zipf_alpha", "a finite value >= 0", zipf_alpha);
  require(in_magnitude(heavy_logit), "heavy_logit", magnitude, heavy_logit);
  require(std::isfinite(norm_logit_range) && std::abs(norm_logit_range) <= kLlmMaxMagnitude, "norm_logit_range",
          "a finite value in [-" + significant_digits(kLlmMaxMagnitude, 10) + ", " +
              significant_digits(kLlmMaxMagnitude, 10) + "]",
          norm_logit_range);
  require(in_magnitude(norm_spread) && norm_spread >= kLlmMinMagnitude, "norm_spread",
          "a finite value in [" + significant_digits(kLlmMinMagnitude, 10) + ", " +
              significant_digits(kLlmMaxMagnitude, 10) + "]",
          norm_spread);
  require(in_magnitude(recency_logit), "recency_logit", magnitude, recency_logit);
  require(recency_reach == 0 || (in_magnitude(recency_reach) && recency_reach >= 1), "recency_reach",
          "0 (no cut) or a finite number of keys in [1, " + significant_digits(kLlmMaxMagnitude, 10) + "]",
          recency_reach);
  require(salient_low_norm >= 0 && salient_low_norm <= 1, "salient_low_norm", "a value in [0, 1]", salient_low_norm);
  require(sink_token_rate >= 0 && sink_token_rate < 1, "sink_token_rate", "a share in [0, 1)", sink_token_rate);
  require(sink_norm_quantile == -1 || (sink_norm_quantile >= 0 && sink_norm_quantile <= 1), "sink_norm_quantile",
          "-1 (off) or a quantile in [0, 1]", sink_norm_quantile);
  require(std::isfinite(rope_base) && rope_base > 1, "rope_base", "a finite value > 1", rope_base);
  require(std::isfinite(temperature) && temperature >= kLlmMinMagnitude, "temperature", least, temperature);
  require(in_magnitude(value_std), "value_std", magnitude, value_std);
  require(window >= 0, "window", "0 (global) or a sliding window of >= 1 keys", window);
}

WorkloadSpec spec_from_preset(const std::string& name, int tokens, int layers, std::uint64_t seed,
                              PresetParams params) {
  const Preset& p = find_preset(name);
  if (tokens < 0) throw InputError("workload spec", "tokens", "a count >= 0 (0: the preset's default)", std::to_string(tokens));
  if (layers < 0) throw InputError("workload spec", "layers", "a count >= 0 (0: all of the model's)", std::to_string(layers));
  const int n = tokens > 0 ? tokens : p.default_tokens;
  if (params == PresetParams::kProfile) {
    if (const std::optional<GeneratorProfile> profile = preset_profile(p.name)) {
      WorkloadSpec spec = spec_from_profile(*profile, n, layers, seed);
      spec.preset = p.name;
      return spec;
    }
  }
  WorkloadSpec spec;
  spec.shape = {layers > 0 ? layers : p.layers, p.q_heads, p.kv_heads, n, p.head_dim};
  spec.kind = GeneratorKind::kLlmLike;
  spec.llm.rope_base = p.rope_base;
  spec.seed = seed;
  spec.preset = p.name;
  return spec;
}

void validate_spec(const WorkloadSpec& spec) {
  spec.shape.validate();
  if (!std::isfinite(spec.score_scale) || spec.score_scale < 0) {
    throw InputError("workload spec", "score_scale", "a finite value >= 0 (0: 1/sqrt(head_dim))",
                     significant_digits(spec.score_scale, 10));
  }
  if (spec.kind == GeneratorKind::kGaussian) return;
  if (spec.score_scale != 0 && spec.score_scale < kLlmMinMagnitude) {
    throw InputError("llm-like generator", "score_scale",
                     "0 (1/sqrt(head_dim)) or a value >= " + significant_digits(kLlmMinMagnitude, 10),
                     significant_digits(spec.score_scale, 17));
  }
  const int d = spec.shape.head_dim;
  if (d % 2 != 0 || d < 8 || d > kMaxHeadDim) {
    throw InputError("llm-like generator", "head_dim", "an even number in [8, 1024]", std::to_string(d));
  }
  auto heads_fit = [&](const LlmLikeParams& p, const std::string& where) {
    if (p.sink_heads > spec.shape.q_heads) {
      throw InputError("workload spec", where + "sink_heads",
                       "at most the query heads (" + std::to_string(spec.shape.q_heads) + ")",
                       std::to_string(p.sink_heads));
    }
  };
  if (spec.layer_params.empty()) {
    spec.llm.validate();
    return heads_fit(spec.llm, "");
  }
  const std::size_t layers = std::size_t(spec.shape.layers);
  if (spec.layer_params.size() != layers) {
    throw InputError("workload spec", "layer_params", "one entry per layer (" + std::to_string(layers) + ")",
                     std::to_string(spec.layer_params.size()) + " entries");
  }
  const LlmLikeParams& first = spec.layer_params[0];
  for (std::size_t l = 0; l < layers; ++l) {
    const LlmLikeParams& p = spec.layer_params[l];
    const std::string where = "layer " + std::to_string(l);
    try {
      p.validate();
    } catch (const InputError& e) {
      throw InputError("workload spec", where, std::string("valid parameters (") + e.what() + ")");
    }
    heads_fit(p, where + " ");
    auto agree = [&](const char* field, double mine, double theirs) {
      if (mine != theirs) {
        throw InputError("workload spec", where + " " + field,
                         "the value of layer 0 (" + significant_digits(theirs, 17) +
                             "; token types are shared by all layers)",
                         significant_digits(mine, 17));
      }
    };
    agree("token_types", p.token_types, first.token_types);
    agree("zipf_alpha", p.zipf_alpha, first.zipf_alpha);
  }
}

namespace {

/// prepare_workload for the spec's layers first..first + layers − 1 (the tensors' shape and those
/// layers' windows; the metadata is the whole spec's). Precondition: validate_spec(spec) passed.
Workload prepare_layers(const WorkloadSpec& spec, int first, int layers) {
  Shape shape = spec.shape;
  shape.layers = layers;
  Workload w(shape);
  if (spec.score_scale > 0) w.set_score_scale(spec.score_scale);
  if (spec.kind == GeneratorKind::kLlmLike) {
    std::vector<int> windows;
    for (int l = first; l < first + layers; ++l) windows.push_back(spec.layer_llm(l).window);
    w.set_windows(windows);
  }
  w.metadata["generator"] = to_string(spec.kind);
  if (spec.kind == GeneratorKind::kLlmLike) {
    // One "llm.NAME" per parameter with one value in every layer; the others per layer, as JSON.
    const std::vector<LlmLikeParams> params =
        spec.layer_params.empty() ? std::vector<LlmLikeParams>{spec.llm} : spec.layer_params;
    nlohmann::ordered_json per_layer = nlohmann::ordered_json::object();
    for (const auto& [name, values] : llm_param_columns(params)) {
      if (std::adjacent_find(values.begin(), values.end(), std::not_equal_to<>()) == values.end()) {
        w.metadata[std::string("llm.") + name] = significant_digits(values[0], 17);
      } else {
        per_layer[name] = values;
      }
    }
    if (!per_layer.empty()) w.metadata["llm.per_layer"] = per_layer.dump();
  }
  w.metadata["seed"] = std::to_string(spec.seed);
  if (!spec.preset.empty()) w.metadata["preset"] = spec.preset;
  if (!spec.profile.empty()) w.metadata["profile"] = spec.profile;
  return w;
}

}  // namespace

Workload prepare_workload(const WorkloadSpec& spec) {
  validate_spec(spec);
  return prepare_layers(spec, 0, spec.shape.layers);
}

Workload generate_kv_heads(const WorkloadSpec& spec, int first, int count, const std::vector<int>& kv_heads,
                           int threads) {
  validate_spec(spec);
  if (threads < 0) throw InputError("generator", "threads", "a count >= 0 (0: default)", std::to_string(threads));
  if (first < 0 || count < 1 || first > spec.shape.layers - count) {
    throw InputError("generator", "layers", "a range within the spec's " + std::to_string(spec.shape.layers) +
                     " layers", "first " + std::to_string(first) + ", count " + std::to_string(count));
  }
  for (std::size_t i = 0; i < kv_heads.size(); ++i) {
    if (kv_heads[i] < 0 || kv_heads[i] >= spec.shape.kv_heads || (i > 0 && kv_heads[i] <= kv_heads[i - 1])) {
      throw InputError("generator", "KV heads", "ascending indices in [0, " + std::to_string(spec.shape.kv_heads) + ")",
                       std::to_string(kv_heads[i]) + " at position " + std::to_string(i));
    }
  }
  if (kv_heads.empty()) throw InputError("generator", "KV heads", "at least one", "none");
  Workload w = prepare_layers(spec, first, count);
  if (int(kv_heads.size()) < spec.shape.kv_heads) w.metadata["generated_kv_heads"] = format_index_set(kv_heads);
  if (spec.kind == GeneratorKind::kGaussian) {
    generate_gaussian(spec, first, kv_heads, threads, w);
  } else {
    generate_llm_like(spec, first, kv_heads, threads, w);
  }
  return w;
}

Workload generate_layers(const WorkloadSpec& spec, int first, int count, int threads) {
  std::vector<int> all(static_cast<std::size_t>(std::max(0, spec.shape.kv_heads)));
  for (std::size_t h = 0; h < all.size(); ++h) all[h] = int(h);
  return generate_kv_heads(spec, first, count, all, threads);
}

Workload generate_workload(const WorkloadSpec& spec, int threads) {
  return generate_layers(spec, 0, spec.shape.layers, threads);
}

std::string to_string(GeneratorKind kind) {
  return kind == GeneratorKind::kGaussian ? "gaussian" : "llm-like";
}

GeneratorKind parse_generator_kind(const std::string& name) {
  if (name == "gaussian") return GeneratorKind::kGaussian;
  if (name == "llm-like") return GeneratorKind::kLlmLike;
  throw InputError("generator", "name", "'gaussian' or 'llm-like'", "'" + name + "'");
}

}  // namespace subevict
