#pragma once
/// \file
/// Run-time CPU dispatch: which code path the hot exact-attention kernels take. One binary holds
/// both the portable path (the baseline x86-64 / any-CPU build, Eigen) and, on x86-64 with
/// GCC or Clang, an AVX2 + FMA path compiled with per-function target attributes (no
/// translation unit is built with -mavx2, so no inline or template code compiled for AVX2 can be
/// merged by the linker into baseline code). Workload generation never depends on the path.

#include <string>
#include <string_view>

namespace subevict {

enum class CpuPath {
  kPortable,  ///< Eigen in double at the build's baseline instruction set
  kAvx2Fma,   ///< hand-written AVX2 + FMA kernels in double (core/attention_avx2.hpp)
};

/// "portable" / "avx2".
[[nodiscard]] std::string to_string(CpuPath path);

/// True when this binary holds the AVX2 + FMA kernels and the running CPU supports AVX2 and FMA
/// (__builtin_cpu_supports; false on other architectures and compilers).
[[nodiscard]] bool cpu_supports_avx2_fma();

/// The path for a requested name: "" or "auto" gives kAvx2Fma when `avx2_fma_available`, else
/// kPortable; "portable" gives kPortable; "avx2" gives kAvx2Fma. Throws InputError (source
/// "SUBEVICT_CPU_PATH") for other names and for "avx2" when it is not available.
[[nodiscard]] CpuPath choose_cpu_path(std::string_view requested, bool avx2_fma_available);

/// The path this process uses now: choose_cpu_path(the environment variable SUBEVICT_CPU_PATH,
/// or "" when unset, cpu_supports_avx2_fma()). Read at every call (cheap), so a test or a
/// benchmark can switch paths with setenv; set it before starting threads.
[[nodiscard]] CpuPath active_cpu_path();

}  // namespace subevict
