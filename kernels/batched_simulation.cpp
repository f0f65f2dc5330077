#include "kernels/batched_simulation.hpp"

#include <algorithm>

#include "core/input_error.hpp"
#include "greedy/eviction/policies/policy_support.hpp"
#include "kernels/detail/kernel_runner.hpp"

namespace subevict::kernels {
namespace {

constexpr BatchedPolicy kPolicies[] = {BatchedPolicy::kH2o, BatchedPolicy::kLocal, BatchedPolicy::kStreamingLlm,
                                       BatchedPolicy::kL2Norm, BatchedPolicy::kTova};

bool skipped(const greedy::PolicyParams& params, int layer) {
  return std::find(params.skipped_layers.begin(), params.skipped_layers.end(), layer) != params.skipped_layers.end();
}

/// The reference: greedy::simulate_workload with the registry's policy, copied into the layouts.
void reference_simulation(const Workload& w, const BatchedOptions& opt, int budget, BatchedSimulation& out) {
  greedy::SimulationOptions sim;
  sim.budget = budget;
  sim.aggregation = opt.aggregation;
  const std::string name = to_string(opt.policy);
  const std::vector<greedy::Trace> traces =
      greedy::simulate_workload(w, [&] { return greedy::make_policy(name, opt.params); }, sim, 0);
  const int n = w.shape().tokens;
  for (std::size_t group = 0; group < traces.size(); ++group) {
    const greedy::Trace& t = traces[group];
    out.budget[group] = t.budget;
    std::copy(t.head_retained_mass.begin(), t.head_retained_mass.end(),
              out.retained_mass.begin() + std::ptrdiff_t(group * t.head_retained_mass.size()));
    std::copy(t.head_output_error.begin(), t.head_output_error.end(),
              out.output_error.begin() + std::ptrdiff_t(group * t.head_output_error.size()));
    for (int i = 0; i < n; ++i) out.evicted[group * n + i] = t.steps[std::size_t(i)].evicted;
  }
}

}  // namespace

std::string to_string(BatchedPolicy policy) {
  switch (policy) {
    case BatchedPolicy::kLocal: return "local";
    case BatchedPolicy::kStreamingLlm: return "streamingllm";
    case BatchedPolicy::kL2Norm: return "l2norm";
    case BatchedPolicy::kTova: return "tova";
    case BatchedPolicy::kH2o: break;
  }
  return "h2o";
}

bool is_batched_policy(const std::string& name) {
  return std::any_of(std::begin(kPolicies), std::end(kPolicies), [&](BatchedPolicy p) { return to_string(p) == name; });
}

BatchedPolicy parse_batched_policy(const std::string& name) {
  for (BatchedPolicy p : kPolicies) {
    if (to_string(p) == name) return p;
  }
  throw InputError("policy", "batched policy", "h2o, local, streamingllm, l2norm or tova", "'" + name + "'");
}

greedy::Trace BatchedSimulation::trace(int layer, int kv_head) const {
  if (layer < 0 || layer >= shape.layers || kv_head < 0 || kv_head >= shape.kv_heads) {
    throw std::out_of_range("BatchedSimulation::trace: no (layer, KV head) (" + std::to_string(layer) + ", " +
                            std::to_string(kv_head) + ")");
  }
  const int n = shape.tokens, g = shape.group_size();
  const std::size_t group = std::size_t(layer) * shape.kv_heads + kv_head;
  greedy::Trace t;
  t.policy = to_string(policy);
  t.layer = layer;
  t.kv_head = kv_head;
  t.tokens = n;
  t.heads = g;
  t.budget = budget[group];
  const auto first = std::ptrdiff_t(group * n * g), last = first + std::ptrdiff_t(n) * g;
  t.head_retained_mass.assign(retained_mass.begin() + first, retained_mass.begin() + last);
  t.head_output_error.assign(output_error.begin() + first, output_error.begin() + last);
  t.steps.resize(std::size_t(n));
  for (int i = 0; i < n; ++i) {
    greedy::StepRecord& r = t.steps[std::size_t(i)];
    r.step = i;
    double mass = 0.0, error = 0.0;
    for (int h = 0; h < g; ++h) {
      mass += t.head_retained_mass[std::size_t(i) * g + h];
      error += t.head_output_error[std::size_t(i) * g + h];
    }
    r.retained_mass = mass / g;
    r.total_variation = 1.0 - r.retained_mass;
    r.output_error = error / g;
    r.evicted = evicted[group * n + i];
  }
  return t;
}

namespace {

/// The checks of simulate_batched's options (as the policies' reset() would throw them) and the
/// result with its per-group budgets resolved; *recent receives h2o's recent window.
BatchedSimulation prepare(const Workload& workload, const BatchedOptions& options, int* recent) {
  require_global_attention(workload, "batched simulation");
  const Shape& s = workload.shape();
  if (options.budget < 1) {
    throw InputError("batched simulation", "budget", "an absolute size >= 1", std::to_string(options.budget));
  }
  const int n = s.tokens, groups = s.layers * s.kv_heads;
  const int budget = std::min(options.budget, n);
  *recent = 0;
  if (options.policy == BatchedPolicy::kH2o) {
    *recent = greedy::policies::split_budget(budget, options.params.heavy_ratio, options.params.heavy,
                                             options.params.recent, "h2o")
                  .recent;
  }
  if (options.policy == BatchedPolicy::kStreamingLlm && (options.params.sinks < 0 || options.params.sinks >= budget)) {
    throw InputError("policy", "streamingllm: sinks", "0 <= sinks < budget " + std::to_string(budget),
                     std::to_string(options.params.sinks));
  }
  BatchedSimulation out;
  out.shape = s;
  out.policy = options.policy;
  out.budget.resize(std::size_t(groups));
  for (int group = 0; group < groups; ++group) {
    const bool compresses = options.policy != BatchedPolicy::kL2Norm || !skipped(options.params, group / s.kv_heads);
    out.budget[std::size_t(group)] = compresses ? budget : n;
  }
  return out;
}

/// Runs a prepared simulation through `runner` (the portable / cuda layouts).
void run_simulation(const Workload& workload, const BatchedOptions& options, int recent,
                    const detail::SimulationRunner& runner, BatchedSimulation& out) {
  detail::SimInput in;
  in.shape = detail::to_dims(workload.shape());
  in.scale = workload.score_scale();
  in.q = workload.q_data().data();
  in.k = workload.k_data().data();
  in.v = workload.v_data().data();
  in.policy = int(options.policy);
  in.aggregation = int(options.aggregation);
  in.recent = recent;
  in.sinks = options.params.sinks;
  in.budget = out.budget;
  detail::SimOutput result;
  runner(in, result);
  out.retained_mass = std::move(result.retained_mass);
  out.output_error = std::move(result.output_error);
  out.evicted = std::move(result.evicted);
}

}  // namespace

BatchedSimulation simulate_batched(const Workload& workload, const BatchedOptions& options, Backend backend) {
  int recent = 0;
  BatchedSimulation out = prepare(workload, options, &recent);
  require_available(backend);
  if (backend == Backend::kReference) {
    const Shape& s = workload.shape();
    const std::size_t groups = std::size_t(s.layers) * s.kv_heads;
    out.retained_mass.resize(groups * s.tokens * s.group_size());
    out.output_error.resize(groups * s.tokens * s.group_size());
    out.evicted.resize(groups * s.tokens);
    reference_simulation(workload, options, std::min(options.budget, s.tokens), out);
    return out;
  }
#ifdef SUBEVICT_KERNELS_CUDA
  if (backend == Backend::kCuda) {
    run_simulation(workload, options, recent, detail::cuda::simulate, out);
    return out;
  }
#endif
  run_simulation(workload, options, recent, detail::portable::simulate, out);
  return out;
}

BatchedSimulation detail::simulate_batched_with(const Workload& workload, const BatchedOptions& options,
                                                const SimulationRunner& runner) {
  int recent = 0;
  BatchedSimulation out = prepare(workload, options, &recent);
  run_simulation(workload, options, recent, runner, out);
  return out;
}

}  // namespace subevict::kernels
