#pragma once
/// \file
/// The backends of the kernels module (docs/kernels.md):
///   reference  core/ and greedy/ (Eigen, double precision): the oracle every other backend is
///              checked against;
///   portable   Thrust algorithms with host/device functors from one source (kernels/portable.inl),
///              compiled by g++ against the OpenMP device system (CPU threads);
///   cuda       CUDA kernels for the hot paths plus the same portable source compiled by nvcc;
///              present when the library was built with CUDA and a device is visible at run time.

#include <string>
#include <string_view>
#include <vector>

#include "core/workload.hpp"

namespace subevict::kernels {

enum class Backend { kReference, kPortable, kCuda };

/// "reference" / "portable" / "cuda".
[[nodiscard]] std::string to_string(Backend backend);

/// The inverse of to_string; throws InputError (source "backend") for other names.
[[nodiscard]] Backend parse_backend(std::string_view name);

/// True when the CUDA backend was compiled in (SUBEVICT_HAVE_CUDA), whether or not a device exists.
[[nodiscard]] bool cuda_compiled();

/// True when the CUDA backend was compiled in and cudaGetDeviceCount reports at least one device
/// (queried once per process: device visibility does not change while it runs).
[[nodiscard]] bool cuda_device_available();

/// The backends that can run here, slowest first: reference, portable, then cuda when
/// cuda_device_available().
[[nodiscard]] std::vector<Backend> available_backends();

/// The fastest available backend: cuda when a device is visible, else reference (on CPU threads the
/// Eigen reference outruns the portable Thrust code, bench/results/kernels_cpu.md).
[[nodiscard]] Backend fastest_backend();

/// Throws InputError (source "backend") unless `backend` is available here (cuda without a
/// device or without a CUDA build names the reason).
void require_available(Backend backend);

/// Throws InputError (source `what`) when a layer of `workload` attends over a sliding window:
/// the batched kernels compute global causal attention only (run such workloads on the
/// reference simulator, greedy/eviction/evaluation/simulator.hpp).
void require_global_attention(const Workload& workload, const std::string& what);

/// The device time of one kernel launch.
struct KernelTime {
  std::string kernel;  ///< row_pass, column_pass, oracle_pass, exact_rows or simulate_groups
  double milliseconds = 0;
};

/// The kernels that the calling thread's last cuda-backend attention_stats or simulate_batched
/// launched, in launch order, timed with CUDA events; empty before any such call, without a CUDA
/// build, or after a call that fell back to the portable source. For profiling (bench/
/// kernels_bench reports them per benchmark).
[[nodiscard]] std::vector<KernelTime> last_cuda_kernel_times();

}  // namespace subevict::kernels
