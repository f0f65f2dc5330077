// The device's measured roofline: the peaks that scripts/gpu_check divides the attention
// statistics at llama2-7b, n = 8192 by (acceptance: >= 50% of the measured memory-bandwidth or
// FLOP roofline, whichever bounds; docs/kernels.md). Datasheet peaks overstate what a kernel can
// reach, so the roof is measured on the same device, in the same run as the statistics.
// - BM_DeviceRoofline/copy_bandwidth: grid-stride float4 copy (4 loads in flight per thread)
//   between two 1 GiB device buffers; bytes = read + write (2 GiB per launch), items = floats.
// - BM_DeviceRoofline/fp32_fma, fp64_fma: every thread runs 8 independent FMA chains on registers
//   for 4096 steps; counter `flops` = 2 FLOPs per FMA, items = FMAs. The project compiles CUDA with
//   --fmad=false, so the FMAs are written as __fmaf_rn / __fma_rn (a * b + c would not fuse).
// Timed with CUDA events (manual time: kernel time only). Built into kernels_bench when CUDA is
// enabled; without a visible device each benchmark skips with an error instead of failing.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

constexpr std::size_t kCopyBytes = std::size_t(1) << 30;  // per buffer
constexpr int kChains = 8;                                // independent FMA chains per thread
constexpr int kSteps = 4096;                              // FMAs per chain

// Four independent loads in flight per thread before the stores, then the remainder.
__global__ void copy_kernel(const float4* __restrict__ in, float4* __restrict__ out, std::size_t count) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  std::size_t e = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; e + 3 * stride < count; e += 4 * stride) {
    const float4 a = in[e], b = in[e + stride], c = in[e + 2 * stride], d = in[e + 3 * stride];
    out[e] = a;
    out[e + stride] = b;
    out[e + 2 * stride] = c;
    out[e + 3 * stride] = d;
  }
  for (; e < count; e += stride) out[e] = in[e];
}

__device__ __forceinline__ float fma_rn(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ double fma_rn(double a, double b, double c) { return __fma_rn(a, b, c); }

// b and c are kernel arguments, so the chains cannot be folded at compile time; the sum is stored
// so they cannot be dropped.
template <typename T>
__global__ void fma_kernel(T b, T c, T* out) {
  const int tid = blockIdx.x * blockDim.x + threadIdx.x;
  T acc[kChains];
#pragma unroll
  for (int k = 0; k < kChains; ++k) acc[k] = T(tid) + T(k);
#pragma unroll 16
  for (int s = 0; s < kSteps; ++s) {
#pragma unroll
    for (int k = 0; k < kChains; ++k) acc[k] = fma_rn(acc[k], b, c);
  }
  T sum = 0;
#pragma unroll
  for (int k = 0; k < kChains; ++k) sum += acc[k];
  out[tid] = sum;
}

// Skips the benchmark (and returns false) when no device is visible or a CUDA call failed.
bool ok(benchmark::State& state, cudaError_t e) {
  if (e == cudaSuccess) return true;
  state.SkipWithError((std::string("CUDA error: ") + cudaGetErrorString(e)).c_str());
  return false;
}

bool device_visible(benchmark::State& state, cudaDeviceProp* prop) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    (void)cudaGetLastError();  // clear the sticky "no device" / "no driver" error
    state.SkipWithError("no CUDA device visible");
    return false;
  }
  if (!ok(state, cudaGetDeviceProperties(prop, 0))) return false;
  state.SetLabel(prop->name);
  return true;
}

// Times one launch per iteration with CUDA events, after one untimed warm-up launch.
template <typename Launch>
bool time_launches(benchmark::State& state, Launch launch) {
  cudaEvent_t start{}, stop{};
  if (!ok(state, cudaEventCreate(&start)) || !ok(state, cudaEventCreate(&stop))) return false;
  launch();
  bool good = ok(state, cudaGetLastError()) && ok(state, cudaDeviceSynchronize());
  if (good) {
    for (auto _ : state) {
      cudaEventRecord(start);
      launch();
      cudaEventRecord(stop);
      if (!ok(state, cudaEventSynchronize(stop))) {
        good = false;
        break;
      }
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      state.SetIterationTime(double(ms) * 1e-3);
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return good && ok(state, cudaGetLastError());
}

void bm_copy_bandwidth(benchmark::State& state) {
  cudaDeviceProp prop{};
  if (!device_visible(state, &prop)) return;
  float4 *in = nullptr, *out = nullptr;
  const std::size_t count = kCopyBytes / sizeof(float4);
  if (ok(state, cudaMalloc(&in, kCopyBytes)) && ok(state, cudaMalloc(&out, kCopyBytes)) &&
      ok(state, cudaMemset(in, 0, kCopyBytes))) {
    int per_sm = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, copy_kernel, 256, 0);
    const int blocks = prop.multiProcessorCount * (per_sm > 0 ? per_sm : 8);
    if (time_launches(state, [&] { copy_kernel<<<blocks, 256>>>(in, out, count); })) {
      state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(2 * kCopyBytes));
      state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(kCopyBytes / sizeof(float)));
    }
  }
  cudaFree(in);
  cudaFree(out);
}

template <typename T>
void bm_fma(benchmark::State& state) {
  cudaDeviceProp prop{};
  if (!device_visible(state, &prop)) return;
  // 16 blocks of 256 per SM: two full-occupancy waves, about 1 ms at the H200's FP32 peak.
  const int blocks = prop.multiProcessorCount * 16, threads = 256;
  T* out = nullptr;
  if (ok(state, cudaMalloc(&out, sizeof(T) * std::size_t(blocks) * threads)) &&
      time_launches(state, [&] { fma_kernel<T><<<blocks, threads>>>(T(0.999), T(1e-3), out); })) {
    const double fmas = double(state.iterations()) * blocks * threads * double(kChains) * kSteps;
    state.SetItemsProcessed(std::int64_t(fmas));
    state.counters["flops"] = benchmark::Counter(2.0 * fmas, benchmark::Counter::kIsRate);
  }
  cudaFree(out);
}

benchmark::internal::Benchmark* add(const char* name, void (*body)(benchmark::State&)) {
  return benchmark::RegisterBenchmark(name, body)->UseManualTime()->Unit(benchmark::kMillisecond);
}

[[maybe_unused]] benchmark::internal::Benchmark* const kRegistered[] = {
    add("BM_DeviceRoofline/copy_bandwidth", bm_copy_bandwidth),
    add("BM_DeviceRoofline/fp32_fma", bm_fma<float>),
    add("BM_DeviceRoofline/fp64_fma", bm_fma<double>),
};

}  // namespace
