// Exact causal attention (double, blocked GEMM + log-sum-exp softmax + A V) for one head at
// d = 128 over n in {256, 1024, 4096}, reported as FLOP/s and as a fraction of this machine's
// measured double-precision peak (the best of Eigen's GEMM on 1024^3, measured once per run).
// Also the workload generator's throughput, the exact rows of one head (L_i and o_i,
// core/exact_attention_rows.hpp) on each CPU path, and the cores' FP64 FMA peak (a register-only
// chain of independent FMAs, AVX2 and AVX-512) that the kernels are measured against.
#include <benchmark/benchmark.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SUBEVICT_BENCH_X86 1
#endif

#include <chrono>

#include "core/attention.hpp"
#include "core/exact_attention_rows.hpp"
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

namespace subevict {
namespace {

#if defined(SUBEVICT_BENCH_X86)
/// `iterations` rounds of 12 independent 4-wide FMA chains (latency 4 x 2 pipes needs >= 8).
__attribute__((target("avx2,fma"), noinline)) double fma_chains_avx2(long iterations) {
  __m256d acc[12];
  const __m256d m = _mm256_set1_pd(0.9999999), c = _mm256_set1_pd(1e-9);
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_pd(double(i));
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_pd(acc[i], m, c);
  }
  __m256d sum = acc[0];
  for (int i = 1; i < 12; ++i) sum = _mm256_add_pd(sum, acc[i]);
  alignas(32) double out[4];
  _mm256_store_pd(out, sum);
  return out[0];
}

/// The same with 16 chains of 8-wide AVX-512 FMAs.
__attribute__((target("avx512f"), noinline)) double fma_chains_avx512(long iterations) {
  __m512d acc[16];
  const __m512d m = _mm512_set1_pd(0.9999999), c = _mm512_set1_pd(1e-9);
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_pd(double(i));
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_pd(acc[i], m, c);
  }
  __m512d sum = acc[0];
  for (int i = 1; i < 16; ++i) sum = _mm512_add_pd(sum, acc[i]);
  alignas(64) double out[8];
  _mm512_store_pd(out, sum);
  return out[0];
}

/// FP64 FMA peak of one core: FLOP/s of fma_chains (arg 0: AVX2, 1: AVX-512) per CPU second
/// (CPU time, so load from other processes does not lower it). threads:2 runs one copy per core;
/// Google Benchmark then sums the threads' FLOPs over their mean CPU time, i.e. the machine's peak.
void BM_FmaPeak(benchmark::State& state) {
  const bool wide = state.range(0) == 1;
  const bool supported = wide ? __builtin_cpu_supports("avx512f") != 0
                              : __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0;
  if (!supported) {
    state.SkipWithError("CPU lacks the instructions");
    return;
  }
  constexpr long kIterations = 20'000'000;
  for (auto _ : state) {
    long iterations = kIterations;
    benchmark::DoNotOptimize(iterations);  // an opaque count: the call cannot be hoisted
    benchmark::DoNotOptimize(wide ? fma_chains_avx512(iterations) : fma_chains_avx2(iterations));
  }
  const double flops = double(kIterations) * (wide ? 16 * 8 : 12 * 4) * 2.0;
  state.counters["FLOPs"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(wide ? "avx512" : "avx2");
}
BENCHMARK(BM_FmaPeak)->Arg(0)->Arg(1)->Threads(1)->Threads(2)->Unit(benchmark::kMillisecond);
#endif

/// exact_attention_rows of one llama2-7b head (d = 128) on path arg 0 (0 portable, 1 avx2) for
/// n = arg 1. FLOPs: the useful causal work 2 n (n + 1) d (scores and outputs) per CPU second;
/// compare with BM_FmaPeak.
void BM_ExactRows(benchmark::State& state) {
  const CpuPath path = state.range(0) == 0 ? CpuPath::kPortable : CpuPath::kAvx2Fma;
  if (path == CpuPath::kAvx2Fma && !cpu_supports_avx2_fma()) {
    state.SkipWithError("no AVX2 + FMA");
    return;
  }
  const int n = int(state.range(1));
  const Workload w = bench_workload(n);
  for (auto _ : state) {
    const ExactRows rows = exact_attention_rows(w.q(0, 0), w.k(0, 0), w.v(0, 0), w.score_scale(), path);
    benchmark::DoNotOptimize(rows.output.data());
  }
  const double flops = 2.0 * double(n) * double(n + 1) * kHeadDim;
  state.counters["FLOPs"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(to_string(path));
}
BENCHMARK(BM_ExactRows)->ArgsProduct({{0, 1}, {256, 1024, 2048, 4096}})->Unit(benchmark::kMillisecond);
// Long rows on the AVX2 path: beyond 1536 keys the kernel normalizes online over key chunks.
BENCHMARK(BM_ExactRows)->Args({1, 16384})->Unit(benchmark::kMillisecond);
// Both cores, one head each (as simulate --threads 2 runs them): FLOPs sums the two threads.
// Run with OMP_NUM_THREADS=1 so that the portable path's Eigen GEMMs stay on their own thread.
BENCHMARK(BM_ExactRows)->Args({0, 2048})->Args({1, 2048})->Threads(2)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace subevict

BENCHMARK_MAIN();
