// Generation with an evicting cache (greedy/eviction/evaluation/resumable_simulation.hpp): one
// SmolLM2-shaped KV head (g = 3 query heads, d = 64; llama2-7b's LLM-like generator), a prompt of
// n = 4096 rows run at once, then 16 rows appended one at a time, as greedy decoding feeds them.
// Per policy it prints the prompt run's seconds, the median and largest seconds per appended
// token, and what re-running simulate over all n + t rows costs per generated token (the way
// without the object), with budget k = 10% of n. Usage: resumable_simulation_bench [POLICIES]
// (comma-separated; default h2o,tova,snapkv,expected_attention,keydiff).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "core/generator.hpp"
#include "greedy/eviction/evaluation/resumable_simulation.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"

namespace {

using namespace subevict;
using namespace subevict::greedy;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int prompt = 4096, appended = 16, n = prompt + appended, g = 3, d = 64, k = prompt / 10;
  std::string list = argc > 1 ? argv[1] : "h2o,tova,snapkv,expected_attention,keydiff";
  WorkloadSpec spec = spec_from_preset("llama2-7b", n, 1, 1);
  spec.shape.q_heads = g;
  spec.shape.kv_heads = 1;
  spec.shape.head_dim = d;
  const Workload w = generate_workload(spec);
  const HeadGroup all = head_group(w, 0, 0);
  SimulationOptions options;
  options.budget = k;
  options.compute_metrics = false;
  std::printf("n = %d prompt rows + %d appended one at a time, g = %d, d = %d, k = %d, 1 thread\n", prompt, appended,
              g, d, k);
  std::printf("%-20s %12s %18s %18s %22s\n", "policy", "prompt s", "median s/token", "max s/token",
              "simulate n+t s/token");
  std::stringstream names(list);
  for (std::string name; std::getline(names, name, ',');) {
    ResumableSimulation run(make_policy(name), ResumableShape{g, d, all.scale, 0, n, 0, 0}, options);
    const auto rows = [&](int from, int m) {
      std::vector<ConstHeadMap> q;
      for (const ConstHeadMap& head : all.q) q.emplace_back(head.data() + std::ptrdiff_t(from) * d, m, d);
      return run.extend(q, ConstHeadMap(all.k.data() + std::ptrdiff_t(from) * d, m, d),
                        ConstHeadMap(all.v.data() + std::ptrdiff_t(from) * d, m, d));
    };
    auto start = Clock::now();
    (void)rows(0, prompt);
    const double prompt_seconds = seconds_since(start);
    std::vector<double> per_token;
    for (int t = 0; t < appended; ++t) {
      start = Clock::now();
      (void)rows(prompt + t, 1);
      per_token.push_back(seconds_since(start));
    }
    std::sort(per_token.begin(), per_token.end());
    // Without the object: one simulate over all rows so far per generated token (timed once, at n).
    auto policy = make_policy(name);
    start = Clock::now();
    (void)simulate(all, *policy, options);
    const double rerun = seconds_since(start);
    std::printf("%-20s %12.4f %18.2e %18.2e %22.4f\n", name.c_str(), prompt_seconds, per_token[appended / 2],
                per_token.back(), rerun);
  }
  return 0;
}
