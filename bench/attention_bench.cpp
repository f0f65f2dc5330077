// Exact causal attention (double, blocked GEMM + log-sum-exp softmax + A V) for one head at
// d = 128 over n in {256, 1024, 4096}, reported as FLOP/s and as a fraction of this machine's
// measured double-precision peak (the best of Eigen's GEMM on 1024^3, measured once per run).
// Also the workload generator's throughput.
#include <benchmark/benchmark.h>

#include <chrono>

#include "core/attention.hpp"
#include "core/generator.hpp"

namespace subevict {
namespace {

constexpr int kHeadDim = 128;

/// Double-precision FLOP/s of Eigen's GEMM on 1024 x 1024 x 1024, best of 5.
double measured_peak_flops() {
  static const double peak = [] {
    const int n = 1024;
    const Eigen::MatrixXd a = Eigen::MatrixXd::Random(n, n), b = Eigen::MatrixXd::Random(n, n);
    Eigen::MatrixXd c(n, n);
    double best = 1e300;
    for (int rep = 0; rep < 5; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      c.noalias() = a * b;
      benchmark::DoNotOptimize(c.data());
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return 2.0 * n * double(n) * n / best;
  }();
  return peak;
}

void BM_PeakGemm(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(measured_peak_flops());
  state.counters["peak_FLOPs"] = measured_peak_flops();
}
BENCHMARK(BM_PeakGemm)->Iterations(1);

Workload bench_workload(int n) {
  WorkloadSpec spec = spec_from_preset("llama2-7b", n, 1, 1);
  spec.shape.q_heads = spec.shape.kv_heads = 1;
  return generate_workload(spec);
}

void BM_ExactAttention(benchmark::State& state) {
  const int n = int(state.range(0));
  const Workload w = bench_workload(n);
  const ConstHeadMap q = w.q(0, 0), k = w.k(0, 0), v = w.v(0, 0);
  const Eigen::MatrixXd vd = v.cast<double>();
  Eigen::MatrixXd out(n, kHeadDim);
  for (auto _ : state) {
    for_each_attention_block(q, k, w.score_scale(), 256, [&](int first, const Eigen::MatrixXd& a) {
      out.middleRows(first, a.rows()).noalias() = a * vd;
    });
    benchmark::DoNotOptimize(out.data());
  }
  // Useful causal work: n(n+1)/2 scores and as many weighted value rows, 2d FLOPs each.
  const double flops = 2.0 * double(n) * double(n + 1) * kHeadDim;
  state.counters["FLOPs"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_fraction"] =
      benchmark::Counter(flops / measured_peak_flops(), benchmark::Counter::kIsIterationInvariantRate);
  state.SetItemsProcessed(state.iterations() * n);  // query rows
  state.SetBytesProcessed(state.iterations() * 3LL * n * kHeadDim * sizeof(float));
}
BENCHMARK(BM_ExactAttention)->Arg(256)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);

void BM_GenerateLlmLike(benchmark::State& state) {
  WorkloadSpec spec = spec_from_preset("llama2-7b", int(state.range(0)), 1, 1);
  for (auto _ : state) benchmark::DoNotOptimize(generate_workload(spec).k_data().data());
  const double elements = double(spec.shape.q_elements() + 2 * spec.shape.kv_elements());
  state.SetItemsProcessed(int64_t(state.iterations() * elements));
  state.SetBytesProcessed(int64_t(state.iterations() * elements * sizeof(float)));
}
BENCHMARK(BM_GenerateLlmLike)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace subevict

BENCHMARK_MAIN();
