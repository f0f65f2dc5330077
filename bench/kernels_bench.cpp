// The kernels module per backend over a size grid (bench/results/kernels_cpu.md, and
// scripts/gpu_check on a CUDA machine). Every benchmark is registered for every available backend
// (reference, portable, cuda when a device is visible); names read BM_<what>/<backend>/<tokens>.
// - Generate: llama2-7b shape, one layer; items = Q, K and V elements, bytes = their float32 bytes.
// - Stats: attention_stats (budget n/10, tau 0.01) on llama2-7b, one layer (32 heads); items =
//   causal score entries (heads n (n + 1) / 2), bytes = Q and K read once.
// - SimulateH2o: simulate_batched, h2o at budget n/5, llama3-8b shape (8 KV heads x 4 query
//   heads), one layer; items = token-query-head steps (n q_heads), bytes = Q, K and V read once.
// `--large` adds the GPU sizes (n = 8192, llama2-7b for the statistics) for the cuda backend and
// the reference sizes that scripts/gpu_check compares against.
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/generator.hpp"
#include "kernels/attention_stats.hpp"
#include "kernels/batched_simulation.hpp"
#include "kernels/generate.hpp"

namespace subevict::kernels {
namespace {

/// On cuda, the device milliseconds of each kernel of the last iteration as counters <kernel>_ms
/// (scripts/gpu_check prints them: where the time goes).
void add_kernel_times(benchmark::State& state, Backend backend) {
  if (backend != Backend::kCuda) return;
  for (const KernelTime& t : last_cuda_kernel_times()) state.counters[t.kernel + "_ms"] += t.milliseconds;
}

void bench_generate(benchmark::State& state, Backend backend, int n) {
  const WorkloadSpec spec = spec_from_preset("llama2-7b", n, 1, 1);
  for (auto _ : state) {
    const Workload w = generate_workload(spec, backend);
    benchmark::DoNotOptimize(w.q_data().data());
  }
  const double elements = double(spec.shape.q_elements() + 2 * spec.shape.kv_elements());
  state.SetItemsProcessed(std::int64_t(double(state.iterations()) * elements));
  state.SetBytesProcessed(std::int64_t(double(state.iterations()) * elements * sizeof(float)));
}

void bench_stats(benchmark::State& state, Backend backend, int n) {
  const Workload w = subevict::generate_workload(spec_from_preset("llama2-7b", n, 1, 1));
  const AttentionStatsOptions options{0.01, n / 10};
  for (auto _ : state) {
    const AttentionStats s = attention_stats(w, options, backend);
    benchmark::DoNotOptimize(s.log_normalizer.data());
  }
  add_kernel_times(state, backend);
  const Shape& s = w.shape();
  const double entries = double(s.layers) * s.q_heads * double(n) * (n + 1) / 2;
  state.SetItemsProcessed(std::int64_t(double(state.iterations()) * entries));
  state.SetBytesProcessed(std::int64_t(double(state.iterations()) * double(s.q_elements() + s.kv_elements()) * sizeof(float)));
  // FLOPs of the score dot products, 2 d per causal entry per pass (three passes on cuda, one
  // scoring pass plus the column pass on portable): the FLOP roofline's numerator.
  state.counters["score_flops"] =
      benchmark::Counter(double(state.iterations()) * entries * 2.0 * s.head_dim, benchmark::Counter::kIsRate);
}

void bench_simulate(benchmark::State& state, Backend backend, int n) {
  const Workload w = subevict::generate_workload(spec_from_preset("llama3-8b", n, 1, 1));
  BatchedOptions options;
  options.policy = BatchedPolicy::kH2o;
  options.budget = n / 5;
  for (auto _ : state) {
    const BatchedSimulation s = simulate_batched(w, options, backend);
    benchmark::DoNotOptimize(s.retained_mass.data());
  }
  add_kernel_times(state, backend);
  const Shape& s = w.shape();
  state.SetItemsProcessed(std::int64_t(state.iterations()) * n * s.layers * s.q_heads);
  state.SetBytesProcessed(std::int64_t(double(state.iterations()) * double(s.q_elements() + 2 * s.kv_elements()) * sizeof(float)));
}

using Body = void (*)(benchmark::State&, Backend, int);

void add(const char* what, Body body, Backend backend, const std::vector<int>& sizes) {
  for (int n : sizes) {
    const std::string name = std::string("BM_") + what + "/" + to_string(backend) + "/" + std::to_string(n);
    benchmark::RegisterBenchmark(name.c_str(), [body, backend, n](benchmark::State& state) { body(state, backend, n); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
}

}  // namespace
}  // namespace subevict::kernels

int main(int argc, char** argv) {
  using namespace subevict::kernels;
  bool large = false;
  std::vector<char*> rest;
  for (int a = 0; a < argc; ++a) {
    if (std::strcmp(argv[a], "--large") == 0) {
      large = true;
    } else {
      rest.push_back(argv[a]);
    }
  }
  for (Backend backend : available_backends()) {
    const bool device = backend == Backend::kCuda;
    add("Generate", bench_generate, backend, device || large ? std::vector<int>{1024, 8192} : std::vector<int>{256, 1024});
    add("Stats", bench_stats, backend,
        device ? std::vector<int>{1024, 2048, 8192} : large ? std::vector<int>{1024, 2048} : std::vector<int>{256, 512});
    add("SimulateH2o", bench_simulate, backend,
        device ? std::vector<int>{1024, 2048, 8192} : large ? std::vector<int>{1024, 2048} : std::vector<int>{256, 512});
  }
  int count = int(rest.size());
  benchmark::Initialize(&count, rest.data());
  if (benchmark::ReportUnrecognizedArguments(count, rest.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
