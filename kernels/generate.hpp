#pragma once
/// \file
/// Workload generation on a chosen backend. Every backend evaluates the same per-element pure
/// function of (seed, tensor id, element index) that core/generator.cpp evaluates per row
/// (core/counter_rng.hpp, core/llm_like_model.hpp), so the tensors are bit-identical to
/// subevict::generate_workload on every backend (the build disables FMA contraction everywhere).

#include "core/generator.hpp"
#include "core/workload.hpp"
#include "kernels/backend.hpp"

namespace subevict::kernels {

/// generate_workload(spec) on `backend`: the same Workload (tensors and metadata) as core's
/// generator. Throws InputError for an invalid spec (as core does) or an unavailable backend.
/// `threads` (0: OpenMP default) applies to the reference backend. Cost O(layers * heads *
/// tokens * head_dim); the portable and cuda backends hold the tensors twice while copying back.
[[nodiscard]] Workload generate_workload(const WorkloadSpec& spec, Backend backend, int threads = 0);

}  // namespace subevict::kernels
