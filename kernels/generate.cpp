#include "kernels/generate.hpp"

#include <algorithm>
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
  out.token_types = spec.llm.token_types;
  out.sinks = t.sinks;
  out.sigma = t.sigma;
  out.rho = t.rho;
  out.sink_amp = t.sink_amp;
  out.beta = t.beta;
  out.eta = t.eta;
  out.gamma = t.gamma;
  out.norm_spread = t.norm_spread;
  out.inv_temperature = t.inv_temperature;
  out.value_std = spec.llm.value_std;
  out.token_type = t.token_type;
  out.rope_cos = t.rope_cos;
  out.rope_sin = t.rope_sin;
  for (const LlmLikeHeadTables& h : t.heads) {
    for (const double* dir : {h.u, h.c, h.p, h.p_perp}) out.dirs.insert(out.dirs.end(), dir, dir + kStructureDims);
    out.w.insert(out.w.end(), h.w.begin(), h.w.end());
    out.cos_phi.insert(out.cos_phi.end(), h.cos_phi.begin(), h.cos_phi.end());
  }
  return out;
}

}  // namespace

Workload generate_workload(const WorkloadSpec& spec, Backend backend, int threads) {
  require_available(backend);
  // core validates the spec and writes the metadata; a 1-token, 1-layer copy costs nothing.
  WorkloadSpec probe = spec;
  probe.shape.validate();
  if (backend == Backend::kReference) return subevict::generate_workload(spec, threads);
  probe.shape.tokens = std::min(spec.shape.tokens, 1);
  probe.shape.layers = 1;
  Workload metadata_source = subevict::generate_workload(probe, 1);
  Workload w(spec.shape);
  w.metadata = metadata_source.metadata;
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
