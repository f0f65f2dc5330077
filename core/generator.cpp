#include "core/generator.hpp"

#include <omp.h>

#include <cmath>

#include "core/counter_rng.hpp"
#include "core/input_error.hpp"
#include "core/llm_like_model.hpp"
#include "core/number_text.hpp"
#include "core/presets.hpp"

namespace subevict {
namespace {

constexpr int kMaxHeadDim = 1024;

void require(bool ok, const std::string& field, const std::string& expected, double got) {
  if (!ok) throw InputError("llm-like parameters", field, expected, std::to_string(got));
}

/// Runs row(layer, head, token) for every row of a tensor with `heads` heads, in parallel.
template <class RowFn>
void for_each_row(const Shape& s, int heads, int threads, RowFn row) {
  const long long rows = (long long)s.layers * heads * s.tokens;
  const int team = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel for num_threads(team) schedule(static)
  for (long long r = 0; r < rows; ++r) {
    const int token = int(r % s.tokens);
    const int head = int((r / s.tokens) % heads);
    const int layer = int(r / (s.tokens * (long long)heads));
    row(layer, head, token, std::size_t(r) * std::size_t(s.head_dim));
  }
}

void generate_gaussian(const WorkloadSpec& spec, int threads, Workload& w) {
  const Shape& s = spec.shape;
  auto fill = [&](std::vector<float>& data, Stream stream) {
    return [&data, &spec, &s, stream](int layer, int head, int token, std::size_t offset) {
      const std::uint64_t id = stream_id(stream, layer, head);
      const std::uint64_t first = std::uint64_t(token) * s.head_dim;
      for (int x = 0; x < s.head_dim; ++x) data[offset + x] = float(normal(spec.seed, id, first + x));
    };
  };
  for_each_row(s, s.q_heads, threads, fill(w.q_data(), Stream::kQueryContent));
  for_each_row(s, s.kv_heads, threads, fill(w.k_data(), Stream::kKeyContent));
  for_each_row(s, s.kv_heads, threads, fill(w.v_data(), Stream::kValue));
}

void generate_llm_like(const WorkloadSpec& spec, int threads, Workload& w) {
  const Shape& s = spec.shape;
  const LlmLikeTables tables = build_llm_like_tables(spec);
  auto head_tables = [&](int layer, int kv_head) -> const LlmLikeHeadTables& {
    return tables.heads[std::size_t(layer) * s.kv_heads + kv_head];
  };
  for_each_row(s, s.q_heads, threads, [&](int l, int h, int i, std::size_t off) {
    llm_like_query_row(tables, head_tables(l, s.kv_head_of(h)), spec.seed, l, h, i,
                       w.q_data().data() + off);
  });
  for_each_row(s, s.kv_heads, threads, [&](int l, int h, int j, std::size_t off) {
    llm_like_key_row(tables, head_tables(l, h), spec.seed, l, h, j, w.k_data().data() + off);
  });
  const double value_std = spec.llm.value_std;
  for_each_row(s, s.kv_heads, threads, [&](int l, int h, int j, std::size_t off) {
    const std::uint64_t id = stream_id(Stream::kValue, l, h);
    const std::uint64_t first = std::uint64_t(j) * s.head_dim;
    for (int x = 0; x < s.head_dim; ++x) {
      w.v_data()[off + x] = float(value_std * normal(spec.seed, id, first + x));
    }
  });
}

}  // namespace

void LlmLikeParams::validate() const {
  auto finite_nonneg = [](double v) { return std::isfinite(v) && v >= 0; };
  require(finite_nonneg(content_logit_std), "content_logit_std", "a finite value >= 0", content_logit_std);
  require(sinks >= 0, "sinks", "a count >= 0", sinks);
  require(finite_nonneg(sink_logit), "sink_logit", "a finite value >= 0", sink_logit);
  require(token_types >= 1, "token_types", "at least 1", token_types);
  require(std::isfinite(zipf_alpha) && zipf_alpha >= 0, "zipf_alpha", "a finite value >= 0", zipf_alpha);
  require(finite_nonneg(heavy_logit), "heavy_logit", "a finite value >= 0", heavy_logit);
  require(finite_nonneg(norm_logit_range), "norm_logit_range", "a finite value >= 0", norm_logit_range);
  require(std::isfinite(norm_spread) && norm_spread > 0, "norm_spread", "a finite value > 0", norm_spread);
  require(finite_nonneg(recency_logit), "recency_logit", "a finite value >= 0", recency_logit);
  require(std::isfinite(rope_base) && rope_base > 1, "rope_base", "a finite value > 1", rope_base);
  require(std::isfinite(temperature) && temperature > 0, "temperature", "a finite value > 0", temperature);
  require(finite_nonneg(value_std), "value_std", "a finite value >= 0", value_std);
}

WorkloadSpec spec_from_preset(const std::string& name, int tokens, int layers, std::uint64_t seed) {
  const Preset& p = find_preset(name);
  if (tokens < 0) throw InputError("workload spec", "tokens", "a count >= 0 (0: the preset's default)", std::to_string(tokens));
  if (layers < 0) throw InputError("workload spec", "layers", "a count >= 0 (0: all of the model's)", std::to_string(layers));
  WorkloadSpec spec;
  spec.shape = {layers > 0 ? layers : p.layers, p.q_heads, p.kv_heads,
                tokens > 0 ? tokens : p.default_tokens, p.head_dim};
  spec.kind = GeneratorKind::kLlmLike;
  spec.llm.rope_base = p.rope_base;
  spec.seed = seed;
  spec.preset = p.name;
  return spec;
}

Workload generate_workload(const WorkloadSpec& spec, int threads) {
  spec.shape.validate();
  if (threads < 0) throw InputError("generator", "threads", "a count >= 0 (0: default)", std::to_string(threads));
  Workload w(spec.shape);
  if (spec.kind == GeneratorKind::kGaussian) {
    generate_gaussian(spec, threads, w);
  } else {
    spec.llm.validate();
    const int d = spec.shape.head_dim;
    if (d % 2 != 0 || d < 8 || d > kMaxHeadDim) {
      throw InputError("llm-like generator", "head_dim", "an even number in [8, 1024]", std::to_string(d));
    }
    generate_llm_like(spec, threads, w);
  }
  w.metadata["generator"] = to_string(spec.kind);
  if (spec.kind == GeneratorKind::kLlmLike) {
    for_each_llm_field(spec.llm, [&w](const char* name, const auto& value, const char*) {
      w.metadata[std::string("llm.") + name] = significant_digits(double(value), 17);
    });
  }
  w.metadata["seed"] = std::to_string(spec.seed);
  if (!spec.preset.empty()) w.metadata["preset"] = spec.preset;
  return w;
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
