// The streaming eviction simulator (reference backend, double) on LLM-like heads (llama2-7b
// preset, one layer). items/s counts token·head steps (one query of one query head through the
// process). Three views:
// - BM_Decisions: the streaming steps alone (compute_metrics = false): per step the tracked
//   attention over G_i (a (k+1) x d by d x 1 product, k+1 exps) and the policy. Grid over k, d.
// - BM_WithMetrics: the same plus the exact full-row normalizers and outputs (blocked GEMMs,
//   O(n^2 d) per head) and the per-step retained mass and output error.
// - BM_PeerSetting: 2 KV heads on 2 threads (one head per core, the whole machine), h2o policy,
//   llama2-7b shape, n = 4096; Args {k, metrics}: k = 819 is the H2O peer's setting (20% budget,
//   10% heavy + 10% recent), k = 256 the reference simulator's throughput target.
#include <benchmark/benchmark.h>

#include <string>

#include "core/generator.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"

namespace subevict::greedy {
namespace {

Workload bench_workload(int n, int d, int kv_heads) {
  WorkloadSpec spec = spec_from_preset("llama2-7b", n, 1, 1);
  spec.shape.q_heads = spec.shape.kv_heads = kv_heads;
  spec.shape.head_dim = d;
  return generate_workload(spec);
}

void run_one_head(benchmark::State& state, bool metrics) {
  const int n = int(state.range(0)), k = int(state.range(1)), d = int(state.range(2));
  const Workload w = bench_workload(n, d, 1);
  const HeadGroup group = head_group(w, 0, 0);
  auto policy = make_policy(state.range(3) == 0 ? "h2o" : "tova");
  SimulationOptions options;
  options.budget = k;
  options.compute_metrics = metrics;
  double precompute = 0.0, steps = 0.0;
  for (auto _ : state) {
    const Trace trace = simulate(group, *policy, options);
    precompute += trace.precompute_seconds;
    steps += trace.step_seconds;
    benchmark::DoNotOptimize(trace.steps.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
  // The streaming steps alone (wall clock): token·head steps per second after the precompute.
  state.counters["step_rate"] = double(state.iterations()) * n / steps;
  state.counters["precompute_share"] = precompute / (precompute + steps);
  state.SetLabel(policy->name());
}

void BM_Decisions(benchmark::State& state) { run_one_head(state, false); }
void BM_WithMetrics(benchmark::State& state) { run_one_head(state, true); }

// Args: n, k, d, policy (0 = h2o, 1 = tova).
BENCHMARK(BM_Decisions)
    ->Args({4096, 64, 64, 0})
    ->Args({4096, 64, 128, 0})
    ->Args({4096, 256, 64, 0})
    ->Args({4096, 256, 128, 0})
    ->Args({4096, 256, 128, 1})
    ->Args({4096, 819, 128, 0})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WithMetrics)
    ->Args({1024, 256, 128, 0})
    ->Args({4096, 256, 128, 0})
    ->Args({4096, 819, 128, 0})
    ->Unit(benchmark::kMillisecond);

void BM_PeerSetting(benchmark::State& state) {
  const int n = 4096, d = 128, heads = 2;
  const int k = int(state.range(0));
  const bool metrics = state.range(1) != 0;
  const Workload w = bench_workload(n, d, heads);
  SimulationOptions options;
  options.budget = k;
  options.compute_metrics = metrics;
  const PolicyFactory factory = [] { return make_policy("h2o"); };
  for (auto _ : state) benchmark::DoNotOptimize(simulate_workload(w, factory, options, 2).data());
  state.SetItemsProcessed(state.iterations() * n * heads);
  state.SetLabel("h2o k=" + std::to_string(k) + " 2 threads, " + (metrics ? "metrics" : "decisions"));
}
BENCHMARK(BM_PeerSetting)
    ->Args({819, 0})
    ->Args({819, 1})
    ->Args({256, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace subevict::greedy
BENCHMARK_MAIN();
