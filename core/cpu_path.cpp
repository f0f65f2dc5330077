#include "core/cpu_path.hpp"

#include <cstdlib>

#include "core/attention_avx2.hpp"
#include "core/input_error.hpp"

namespace subevict {

std::string to_string(CpuPath path) { return path == CpuPath::kAvx2Fma ? "avx2" : "portable"; }

bool cpu_supports_avx2_fma() {
#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
  static const bool supported = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return supported;
#else
  return false;
#endif
}

CpuPath choose_cpu_path(std::string_view requested, bool avx2_fma_available) {
  if (requested.empty() || requested == "auto")
    return avx2_fma_available ? CpuPath::kAvx2Fma : CpuPath::kPortable;
  if (requested == "portable") return CpuPath::kPortable;
  if (requested == "avx2") {
    if (!avx2_fma_available) {
      throw InputError("SUBEVICT_CPU_PATH", "avx2",
                       "a CPU with AVX2 and FMA and a build with the AVX2 kernels");
    }
    return CpuPath::kAvx2Fma;
  }
  throw InputError("SUBEVICT_CPU_PATH", "path", "auto, portable or avx2",
                   "'" + std::string(requested) + "'");
}

CpuPath active_cpu_path() {
  const char* requested = std::getenv("SUBEVICT_CPU_PATH");
  return choose_cpu_path(requested ? requested : "", cpu_supports_avx2_fma());
}

}  // namespace subevict
