#include "kernels/backend.hpp"

#include "core/input_error.hpp"
#include "core/shape.hpp"
#include "kernels/detail/backend_detail.hpp"

namespace subevict::kernels {

detail::Dims detail::to_dims(const Shape& shape) {
  return {shape.layers, shape.q_heads, shape.kv_heads, shape.tokens, shape.head_dim};
}

std::string to_string(Backend backend) {
  switch (backend) {
    case Backend::kPortable: return "portable";
    case Backend::kCuda: return "cuda";
    case Backend::kReference: break;
  }
  return "reference";
}

Backend parse_backend(std::string_view name) {
  for (Backend b : {Backend::kReference, Backend::kPortable, Backend::kCuda}) {
    if (name == to_string(b)) return b;
  }
  throw InputError("backend", "name", "reference, portable or cuda", "'" + std::string(name) + "'");
}

bool cuda_compiled() {
#ifdef SUBEVICT_KERNELS_CUDA
  return true;
#else
  return false;
#endif
}

bool cuda_device_available() {
#ifdef SUBEVICT_KERNELS_CUDA
  static const bool available = detail::cuda::device_available();  // fixed for the process
  return available;
#else
  return false;
#endif
}

std::vector<Backend> available_backends() {
  std::vector<Backend> out{Backend::kReference, Backend::kPortable};
  if (cuda_device_available()) out.push_back(Backend::kCuda);
  return out;
}

Backend fastest_backend() { return cuda_device_available() ? Backend::kCuda : Backend::kReference; }

std::vector<KernelTime> last_cuda_kernel_times() {
#ifdef SUBEVICT_KERNELS_CUDA
  std::vector<KernelTime> out;
  for (const auto& [kernel, ms] : detail::cuda::last_kernel_times()) out.push_back({kernel, ms});
  return out;
#else
  return {};
#endif
}

void require_available(Backend backend) {
  if (backend != Backend::kCuda || cuda_device_available()) return;
  throw InputError("backend", "cuda",
                   cuda_compiled() ? "a visible CUDA device (none found)" : "a build with CUDA (SUBEVICT_WITH_CUDA)");
}

void require_global_attention(const Workload& workload, const std::string& what) {
  const std::vector<int> windows = workload.windows();
  for (std::size_t l = 0; l < windows.size(); ++l) {
    if (windows[l] > 0) {
      throw InputError(what, "layer " + std::to_string(l),
                       "global causal attention (the batched kernels have no sliding-window mask; use the "
                       "reference backend)",
                       "a window of " + std::to_string(windows[l]) + " keys");
    }
  }
}

}  // namespace subevict::kernels
