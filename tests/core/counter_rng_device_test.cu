// GPU half of the bit-identity promise: normals drawn on a CUDA device equal the host's bit for bit.
// Labelled gpu; skips cleanly where no device exists.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/counter_rng.hpp"

namespace {

__global__ void draw_normals(std::uint64_t seed, std::uint64_t tensor, int n, double* out) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e < n) out[e] = subevict::normal(seed, tensor, std::uint64_t(e));
}

TEST(CounterRngDevice, NormalsAreBitIdenticalToTheHost) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no CUDA device";
  const int n = 1 << 20;
  const std::uint64_t seed = 0x1234abcdull, tensor = subevict::stream_id(subevict::Stream::kKeyContent, 3, 5);
  double* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, n * sizeof(double)), cudaSuccess);
  draw_normals<<<(n + 255) / 256, 256>>>(seed, tensor, n, device);
  std::vector<double> from_device(n);
  ASSERT_EQ(cudaMemcpy(from_device.data(), device, n * sizeof(double), cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(device);
  long long mismatches = 0;
  for (int e = 0; e < n; ++e) {
    const double host = subevict::normal(seed, tensor, std::uint64_t(e));
    mismatches += std::memcmp(&host, &from_device[e], sizeof host) != 0;
  }
  EXPECT_EQ(mismatches, 0) << "of " << n << " normals";
}

}  // namespace
