#include "kernels/generate.hpp"

#include <string>

#include "core/input_error.hpp"
#include "core/llm_like_model.hpp"
#include "kernels/detail/backend_detail.hpp"

namespace subevict::kernels {
namespace {

/// core's tables (built on the host, as core does) flattened for the element functions.
detail::GeneratorTables flatten(const WorkloadSpec& spec) {
  detail::GeneratorTables out;
  out.seed = spec.seed;
  out.shape = detail::to_dims(spec.shape);
  out.llm_like = spec.kind == GeneratorKind::kLlmLike;
  if (!out.llm_like) return out;
  const LlmLikeTables t = build_llm_like_tables(spec);
  out.pairs = (t.head_dim - kStructureDims) / 2;
  out.token_types = spec.layer_llm(0).token_types;  // agrees across layers
  for (const LlmLikeLayerTables& c : t.layers) {
    out.layers.push_back({c.sigma, c.rho, c.sink_amp, c.beta, c.eta, c.gamma, c.norm_spread, c.inv_temperature,
                          c.value_std, c.sinks, c.sink_amp_q, c.bare_sinks, c.rope_table, c.sink_tokens,
                          c.sink_norm});
  }
  out.sink_head = t.sink_head;
  out.token_type = t.token_type;
  out.rope_cos = t.rope_cos;
  out.rope_sin = t.rope_sin;
  for (const LlmLikeHeadTables& h : t.heads) {
    for (const double* dir : {h.u, h.c, h.p, h.p_perp}) out.dirs.insert(out.dirs.end(), dir, dir + kStructureDims);
    out.w.insert(out.w.end(), h.w.begin(), h.w.end());
    out.cos_phi.insert(out.cos_phi.end(), h.cos_phi.begin(), h.cos_phi.end());
    out.key_scale.insert(out.key_scale.end(), h.key_scale.begin(), h.key_scale.end());
  }
  return out;
}

}  // namespace

Workload generate_workload(const WorkloadSpec& spec, Backend backend, int threads) {
  require_available(backend);
  if (backend == Backend::kReference) return subevict::generate_workload(spec, threads);
  // core validates the spec and records the metadata and the score scale; the backend fills it.
  Workload w = prepare_workload(spec);
  const detail::GeneratorTables tables = flatten(spec);
#ifdef SUBEVICT_KERNELS_CUDA
  if (backend == Backend::kCuda) {
    detail::cuda::generate(tables, w.q_data(), w.k_data(), w.v_data());
    return w;
  }
#endif
  detail::portable::generate(tables, w.q_data(), w.k_data(), w.v_data());
  return w;
}

}  // namespace subevict::kernels
