// The learned policy's per-step cost beside h2o's, in one run (docs/learned_policy.md): one
// (layer, KV head) of a SmolLM2-135M shape (3 query heads per KV head, head_dim 64), n = 2048,
// the streaming steps alone (compute_metrics = false: per step the tracked attention over G_i and
// the policy). The learned policy runs a net of the trained default's size (every feature, one relu
// layer of 16 units; the cost does not depend on the weights) written to a temporary file.
// Args: k, policy (0 = h2o, 1 = learned). items/s counts streaming steps.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/generator.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/policies/online_features.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"

namespace subevict::greedy {
namespace {

/// A model file with every feature and one relu layer of `hidden` units (small fixed weights).
std::string model_file(int hidden) {
  const int f = policies::kOnlineFeatureCount;
  std::string names, inputs, rows, bias, out;
  for (int i = 0; i < f; ++i) {
    const std::string name(policies::online_feature_names()[std::size_t(i)]);
    names += (i ? ",\"" : "\"") + name + "\"";
    inputs += std::string(i ? "," : "") + "{\"feature\":\"" + name + "\",\"transform\":\"" +
              (i < 3 ? "log" : "identity") + "\",\"members_scaled\":" + (i < 3 ? "true" : "false") +
              ",\"offset\":" + (i < 3 ? "0.001" : "0") + ",\"mean\":0,\"scale\":1}";
  }
  for (int h = 0; h < hidden; ++h) {
    rows += h ? ",[" : "[";
    for (int i = 0; i < f; ++i)
      rows.append(i ? "," : "").append(std::to_string(0.01 * ((h * 7 + i * 3) % 11 - 5)));
    rows += "]";
    bias.append(h ? "," : "").append("0.1");
    out.append(h ? "," : "").append(std::to_string(0.1 * (h % 5 - 2)));
  }
  const std::string text =
      "{\"format\":\"subevict-learned-policy\",\"version\":1,\"features_version\":1,\"features\":"
      "[" +
      names +
      "],\"feature_options\":{\"window\":32,\"sinks\":4,\"trend_rate\":0.125},\"nets\":[{"
      "\"layers\":null,\"inputs\":[" +
      inputs + "],\"dense\":[{\"activation\":\"relu\",\"weights\":[" + rows + "],\"bias\":[" +
      bias + "]},{\"activation\":\"identity\",\"weights\":[[" + out + "]],\"bias\":[0]}]}]}";
  const std::string path =
      (std::filesystem::temp_directory_path() / "subevict_learned_bench.json").string();
  std::ofstream(path) << text;
  return path;
}

void BM_PerStep(benchmark::State& state) {
  const int n = 2048, k = int(state.range(0));
  WorkloadSpec spec = spec_from_preset("llama2-7b", n, 1, 1);
  spec.shape.q_heads = 3;
  spec.shape.kv_heads = 1;
  spec.shape.head_dim = 64;
  const Workload w = generate_workload(spec);
  const HeadGroup group = head_group(w, 0, 0);
  static const std::string path = model_file(16);
  const PolicySpec policy_spec = parse_policy_spec(
      state.range(1) == 0 ? std::string("h2o") : "learned:model=" + path, "bench", "policy", 16);
  auto policy = make_policy(policy_spec);
  SimulationOptions options;
  options.budget = k;
  options.compute_metrics = false;
  for (auto _ : state) benchmark::DoNotOptimize(simulate(group, *policy, options).steps.data());
  state.SetItemsProcessed(state.iterations() * n);
  state.SetLabel(policy->name() + " k=" + std::to_string(k));
}
BENCHMARK(BM_PerStep)->ArgsProduct({{102, 205, 410, 1024}, {0, 1}})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace subevict::greedy
BENCHMARK_MAIN();
