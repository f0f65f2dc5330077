// The exact offline optimum of the irreversible eviction process (greedy/eviction/optimum/offline_optimum.hpp):
// LEMON network simplex on one LLM-like head (llama2-7b shape, layer 0, head 0, seed 1) at budget
// k = n / 5, over n = 128 .. 4096. Counters: arcs of the network, the optimum, the certified gap
// (upper bound - value), and the per-step reversible bound sum U_i.
//
// `offline_optimum_bench --export=DIR [--sizes=128,256,...]` instead writes, for each n,
// DIR/attention_N.npy (the n x n causal attention matrix, float64, row-major) and DIR/flow_N.json
// ({"n", "budget", "value", "upper_bound", "seconds"}): the inputs and reference answers of the
// side-by-side LP peer bench/peers/offline_optimum_highs.py.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/attention.hpp"
#include "core/generator.hpp"
#include "core/npy.hpp"
#include "greedy/eviction/optimum/offline_optimum.hpp"
#include "greedy/eviction/optimum/step_oracle.hpp"

namespace subevict {
namespace {

Eigen::MatrixXd llm_like_attention(int n) {
  WorkloadSpec spec = spec_from_preset("llama2-7b", n, 1, 1);
  spec.shape.q_heads = spec.shape.kv_heads = 1;
  const Workload w = generate_workload(spec);
  return causal_attention(w.q(0, 0), w.k(0, 0), w.score_scale());
}

void BM_OfflineOptimumFlow(benchmark::State& state) {
  const int n = int(state.range(0));
  const int k = n / 5;
  const Eigen::MatrixXd a = llm_like_attention(n);
  greedy::ScheduleSummary result;
  for (auto _ : state) {
    result = greedy::offline_optimum(a, k);
    benchmark::ClobberMemory();
  }
  state.counters["arcs"] = double(result.model_size);
  state.counters["optimum"] = result.value;
  state.counters["certified_gap_x1e9"] = 1e9 * (result.upper_bound - result.value);
  state.counters["sum_U"] = greedy::step_oracle(a, k).total;
  state.counters["tokens"] = n;
}
BENCHMARK(BM_OfflineOptimumFlow)
    ->RangeMultiplier(2)
    ->Range(128, 4096)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(3)
    ->ReportAggregatesOnly(false);

int export_instances(const std::string& dir, const std::vector<int>& sizes) {
  std::filesystem::create_directories(dir);
  for (int n : sizes) {
    const Eigen::MatrixXd a = llm_like_attention(n);
    const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rows = a;
    write_npy(dir + "/attention_" + std::to_string(n) + ".npy",
              TensorView<double>{{std::size_t(n), std::size_t(n)},
                                 std::span<const double>(rows.data(), std::size_t(rows.size()))});
    const greedy::ScheduleSummary r = greedy::offline_optimum(a, n / 5);
    std::ofstream json(dir + "/flow_" + std::to_string(n) + ".json");
    char line[256];
    std::snprintf(line, sizeof line,
                  "{\"n\": %d, \"budget\": %d, \"value\": %.17g, \"upper_bound\": %.17g, "
                  "\"seconds\": %.6f}\n",
                  n, n / 5, r.value, r.upper_bound, r.seconds);
    json << line;
    std::printf("n=%d k=%d value=%.12f seconds=%.3f\n", n, n / 5, r.value, r.seconds);
  }
  return 0;
}

}  // namespace
}  // namespace subevict

int main(int argc, char** argv) {
  std::string export_dir;
  std::vector<int> sizes{128, 256, 512, 1024};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--export=", 0) == 0) export_dir = arg.substr(9);
    if (arg.rfind("--sizes=", 0) == 0) {
      sizes.clear();
      std::stringstream list(arg.substr(8));
      for (std::string item; std::getline(list, item, ',');) sizes.push_back(std::stoi(item));
    }
  }
  if (!export_dir.empty()) return subevict::export_instances(export_dir, sizes);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
