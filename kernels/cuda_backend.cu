// The CUDA backend: workload generation is the portable source (kernels/portable.inl) compiled by
// nvcc for the CUDA device system; the statistics and the simulation run the block kernels of
// kernels/detail/block_kernels.hpp through the launches of kernels/detail/block_pipeline.hpp,
// here on a device (DeviceBlock: threadIdx, __syncthreads, dynamic shared memory). The tests run
// the same kernels and launches under tests/kernels/block_emulator.hpp on CPU threads.
//   statistics  row_pass and column_pass on 64 x 64 score tiles (16 x 16 threads, 4 x 4 register
//               micro-tiles from float4 shared loads); oracle_pass with 4 query rows per
//               kBlock-thread block, one key per thread.
//   simulation  one kBlock-thread block per (layer, KV head) group, the GQA group's query heads
//               in the same block, the cache in shared memory where it fits; the exact rows come
//               from the portable source's ExactRowFn.
// Shapes outside the kernels' limits (head_dim > kMaxTiledDim, rows that do not fit in shared
// memory) fall back to the portable source on the device.
#include <cuda_runtime.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#define SUBEVICT_PORTABLE_NS cuda_portable
#include "kernels/portable.inl"
#include "kernels/detail/block_pipeline.hpp"

namespace subevict::kernels::detail {
namespace {

using cuda_portable::raw;
using cuda_portable::to_host;

constexpr int kTileSide = 16;  // tiled passes: 16 x 16 threads, 64 x 64 score tiles
constexpr int kBlock = 128;    // threads of the oracle and simulation blocks

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string("cuda backend: ") + what + ": " + cudaGetErrorString(status));
}

/// The Block of block_kernels.hpp on a device.
struct DeviceBlock {
  __device__ int thread() const { return int(threadIdx.x); }
  __device__ int threads() const { return int(blockDim.x); }
  __device__ int block_x() const { return int(blockIdx.x); }
  __device__ int block_y() const { return int(blockIdx.y); }
  __device__ void sync() const { __syncthreads(); }
  __device__ unsigned char* shared() const {
    extern __shared__ __align__(16) unsigned char dynamic_shared[];
    return dynamic_shared;
  }
  __device__ void atomic_add(unsigned long long* p, unsigned long long v) const { atomicAdd(p, v); }
};

template <class Kernel>
__global__ void run_block_kernel(Kernel kernel) {
  kernel(DeviceBlock{});
}

/// The kernel times of the calling thread's last statistics or simulation (last_kernel_times).
thread_local std::vector<std::pair<const char*, double>> kernel_times;

/// A CUDA event, destroyed with its owner.
class Event {
 public:
  Event() { check(cudaEventCreate(&event_), "cudaEventCreate"); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() { cudaEventDestroy(event_); }
  void record() { check(cudaEventRecord(event_), "cudaEventRecord"); }
  float milliseconds_since(const Event& start) const {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start.event_, event_), "cudaEventElapsedTime");
    return ms;
  }

 private:
  cudaEvent_t event_{};
};

/// The executor of block_pipeline.hpp on the current device (Thrust device vectors). Every launch
/// is bracketed by two events; finish() turns them into kernel_times.
struct CudaExecutor {
  CudaExecutor() { kernel_times.clear(); }
  template <class T>
  using Buffer = thrust::device_vector<T>;
  template <class T>
  Buffer<T> upload(const T* host, std::size_t count) { return Buffer<T>(host, host + count); }
  template <class T>
  Buffer<T> zeros(std::size_t count) { return Buffer<T>(count, T(0)); }
  template <class T>
  static T* raw(Buffer<T>& buffer) { return cuda_portable::raw(buffer); }
  template <class T>
  void download(const Buffer<T>& buffer, std::vector<T>& host) { to_host(buffer, host); }
  template <class Fn>
  void for_each(const char* name, std::int64_t count, Fn fn) {
    timed_.push_back({name, std::make_unique<Event>(), std::make_unique<Event>()});
    timed_.back().start->record();
    thrust::for_each(thrust::counting_iterator<std::int64_t>(0), thrust::counting_iterator<std::int64_t>(count), fn);
    timed_.back().stop->record();
  }
  template <class Kernel>
  void launch(const LaunchShape& shape, const Kernel& kernel) {
    timed_.push_back({Kernel::kName, std::make_unique<Event>(), std::make_unique<Event>()});
    check(cudaFuncSetAttribute(run_block_kernel<Kernel>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               int(shape.shared_bytes)),
          "shared memory size");
    timed_.back().start->record();
    run_block_kernel<Kernel><<<dim3(unsigned(shape.grid_x), unsigned(shape.grid_y)), unsigned(shape.threads),
                               shape.shared_bytes>>>(kernel);
    check(cudaGetLastError(), Kernel::kName);
    timed_.back().stop->record();
  }
  void finish(const char* what) {
    check(cudaDeviceSynchronize(), what);
    for (const Timed& t : timed_) kernel_times.emplace_back(t.kernel, double(t.stop->milliseconds_since(*t.start)));
    timed_.clear();
  }
  int tile_side() const { return kTileSide; }
  int block_threads() const { return kBlock; }
  std::size_t max_shared_bytes() const {
    int device = 0, bytes = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), "shared memory limit");
    return std::size_t(bytes);
  }

 private:
  struct Timed {
    const char* kernel;
    std::unique_ptr<Event> start, stop;
  };
  std::vector<Timed> timed_;
};

}  // namespace

namespace cuda {

bool device_available() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
}

void generate(const GeneratorTables& tables, std::vector<float>& q, std::vector<float>& k, std::vector<float>& v) {
  cuda_portable::generate(tables, q, k, v);
}

void attention_stats(const StatsInput& in, StatsOutput& out) {
  CudaExecutor exec;
  if (!run_block_stats(exec, in, out)) cuda_portable::attention_stats(in, out);
}

void simulate(const SimInput& in, SimOutput& out) {
  CudaExecutor exec;
  run_block_simulation(exec, in, out);
}

std::vector<std::pair<const char*, double>> last_kernel_times() { return kernel_times; }

}  // namespace cuda
}  // namespace subevict::kernels::detail
