// The kernels against independent computations: one test body per backend (TEST_P). This file
// builds twice: kernels_test instantiates reference, portable and the CUDA backend's block kernels
// on the CPU block emulator (block_emulator.hpp, forward and reverse thread order); with
// SUBEVICT_TEST_CUDA_BACKEND (kernels_gpu_test, label gpu) it instantiates cuda, which skips where
// no device is visible.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <vector>

#include "block_emulator.hpp"

#include "core/attention.hpp"
#include "core/generator.hpp"
#include "core/input_error.hpp"
#include "core/metrics.hpp"
#include "core/tolerance.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "kernels/attention_stats.hpp"
#include "kernels/batched_simulation.hpp"
#include "kernels/detail/block_kernels.hpp"
#include "kernels/detail/kernel_runner.hpp"
#include "kernels/generate.hpp"
#include "kernels/kernel_tolerance.hpp"

namespace subevict::kernels {
namespace {

std::string backend_name(const ::testing::TestParamInfo<Backend>& param) { return to_string(param.param); }

/// Skips the cuda backend where no device is visible.
void skip_without_device(Backend backend) {
  if (backend == Backend::kCuda && !cuda_device_available()) {
    GTEST_SKIP() << (cuda_compiled() ? "no CUDA device visible" : "built without CUDA");
  }
}

/// Generation and input checks, per backend.
class BackendTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override { skip_without_device(GetParam()); }
  Backend backend() const { return GetParam(); }
};

/// One implementation of the statistics and the simulation: a backend, or the cuda backend's
/// block kernels and launches (kernels/detail/block_pipeline.hpp) on the CPU block emulator.
struct Implementation {
  std::string name;
  Backend backend;
  std::optional<emulation::EmulatorOptions> emulated;
};
void PrintTo(const Implementation& implementation, std::ostream* out) { *out << implementation.name; }

/// A stats runner on the emulator that fails instead of falling back to the portable source.
detail::StatsRunner emulated_stats(emulation::BlockEmulator& exec) {
  return [&exec](const detail::StatsInput& in, detail::StatsOutput& out) {
    if (!detail::run_block_stats(exec, in, out)) throw std::logic_error("shape outside the block kernels' limits");
  };
}
detail::SimulationRunner emulated_simulation(emulation::BlockEmulator& exec) {
  return [&exec](const detail::SimInput& in, detail::SimOutput& out) { detail::run_block_simulation(exec, in, out); };
}

using SimulateFn = std::function<BatchedSimulation(const Workload&, const BatchedOptions&)>;

class KernelsTest : public ::testing::TestWithParam<Implementation> {
 protected:
  void SetUp() override {
    if (!GetParam().emulated) skip_without_device(GetParam().backend);
  }
  Backend backend() const { return GetParam().backend; }
  AttentionStats stats(const Workload& w, const AttentionStatsOptions& options) const {
    if (!GetParam().emulated) return attention_stats(w, options, backend());
    emulation::BlockEmulator exec(*GetParam().emulated);
    AttentionStats out = detail::attention_stats_with(w, options, emulated_stats(exec));
    EXPECT_EQ(exec.launches(), 3);  // row, column and oracle passes ran
    return out;
  }
  SimulateFn simulate() const {
    const Implementation impl = GetParam();
    return [impl](const Workload& w, const BatchedOptions& options) {
      if (!impl.emulated) return simulate_batched(w, options, impl.backend);
      emulation::BlockEmulator exec(*impl.emulated);
      BatchedSimulation out = detail::simulate_batched_with(w, options, emulated_simulation(exec));
      EXPECT_EQ(exec.launches(), 1);
      return out;
    };
  }
};

WorkloadSpec small_spec(const char* preset, int tokens, int layers, std::uint64_t seed) {
  return spec_from_preset(preset, tokens, layers, seed);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_P(BackendTest, GeneratesTheCoreTensorsBitForBit) {
  std::vector<WorkloadSpec> specs = {small_spec("tiny", 40, 2, 7), small_spec("tiny-gqa", 33, 2, 11),
                                     small_spec("llama3-8b", 12, 1, 3), small_spec("opt-30b", 5, 1, 5)};
  WorkloadSpec gaussian = small_spec("tiny-mqa", 17, 2, 9);
  gaussian.kind = GeneratorKind::kGaussian;
  gaussian.shape.head_dim = 5;  // odd: a pair straddles two rows
  specs.push_back(gaussian);
  // Per-layer parameters: a preset profile (layer 0 of mistral-7b has 20% sink heads), and every
  // per-layer coefficient varied with fractional sink heads and a declared score scale.
  specs.push_back(spec_from_preset("mistral-7b", 9, 2, 4, PresetParams::kProfile));
  WorkloadSpec varied = small_spec("tiny-gqa", 21, 3, 13);
  varied.shape.head_dim = 16;
  varied.score_scale = 0.2;
  varied.layer_params.assign(3, varied.llm);
  for (int l = 0; l < 3; ++l) {
    LlmLikeParams& p = varied.layer_params[std::size_t(l)];
    p.content_logit_std = 0.5 + l;
    p.sinks = l + 1;
    p.sink_logit = 3.0 * l;
    p.sink_head_fraction = 0.5;
    p.heavy_logit = 0.4 * l;
    p.norm_logit_range = 1.0 + l;
    p.norm_spread = 10.0 + l;
    p.recency_logit = 2.0 - l / 2.0;
    p.temperature = 1.0 + l / 4.0;
    p.value_std = 0.5 * (l + 1);
    p.sink_heads = l == 2 ? -1 : 2 * l;  // an exact count of sink heads in layers 0 and 1
    p.low_norm_sinks = l % 2;            // layer 1: low-norm sink keys, query-side sink amplitude
    p.exact_recency = l == 0 ? 1 : 0;
    p.fixed_structure = l == 1 ? 1 : 0;
    p.rope_base = l == 1 ? 500.0 : 10000.0;  // two RoPE tables, layer 2 back on the first
    p.exact_sinks = l == 2 ? 1 : 0;          // layer 2: bare sink keys at the full amplitude
    p.norm_logit_range = l == 2 ? -1.5 : p.norm_logit_range;  // high-norm keys attract
    p.recency_reach = l == 0 ? 0.0 : 12.0 * l;  // layers 1 and 2: the recency cut at 12 and 24 keys
    p.salient_low_norm = 0.4 * l;  // layers 1 and 2: heavy-hitter keys at lowered norms
    p.sink_token_rate = l == 0 ? 0.0 : 0.05 * l;  // layers 1 and 2: later sink tokens (bare in layer 2)
    // Layers 1 and 2: sink keys raised to a norm quantile (a + g m along u and m along c; g < 0 in
    // layer 2, whose norm range is negative).
    p.sink_norm_quantile = l == 0 ? -1.0 : 0.4 * l;
  }
  specs.push_back(varied);
  for (const WorkloadSpec& spec : specs) {
    SCOPED_TRACE(to_string(spec.shape));
    const Workload expected = subevict::generate_workload(spec, 1);
    const Workload got = generate_workload(spec, backend());
    EXPECT_TRUE(same_bits(got.q_data(), expected.q_data()));
    EXPECT_TRUE(same_bits(got.k_data(), expected.k_data()));
    EXPECT_TRUE(same_bits(got.v_data(), expected.v_data()));
    EXPECT_EQ(got.metadata, expected.metadata);
  }
}

/// U_i by sorting the row (independent of greedy::step_oracle and of the bisection).
double sorted_oracle(const Eigen::VectorXd& row, int i, int budget) {
  std::vector<double> past(row.data(), row.data() + i);
  std::sort(past.begin(), past.end(), std::greater<>());
  const int take = std::min(budget, i);
  return row[i] + std::accumulate(past.begin(), past.begin() + take, 0.0);
}

/// The statistics of `got` for workload `w` against core's exact attention, with a sort for U_i.
void expect_stats_match(const AttentionStats& got, const Workload& w, const AttentionStatsOptions& options,
                        bool double_scores) {
  const Shape& s = w.shape();
  const int n = s.tokens;
  ASSERT_EQ(got.log_normalizer.size(), std::size_t(s.layers) * s.q_heads * n);
  for (int layer = 0; layer < s.layers; ++layer) {
    for (int h = 0; h < s.q_heads; ++h) {
      SCOPED_TRACE("layer " + std::to_string(layer) + " head " + std::to_string(h));
      const ConstHeadMap q = w.q(layer, h), k = w.k(layer, s.kv_head_of(h));
      const double scale = w.score_scale();
      const double magnitude = scale * q.rowwise().norm().maxCoeff() * k.rowwise().norm().maxCoeff();
      const double delta = double_scores ? Tol<double>::sum(std::size_t(s.head_dim)) * magnitude
                                         : score_tolerance(s.head_dim, magnitude);
      const double mass_tol = mass_tolerance(delta, n);
      const Eigen::MatrixXd a = causal_attention(q, k, scale);
      const Eigen::VectorXd columns = accumulated_attention(a);
      const std::size_t at = (std::size_t(layer) * s.q_heads + h) * n;
      std::int64_t below = 0, borderline = 0;
      for (int i = 0; i < n; ++i) {
        const Eigen::VectorXd row = a.row(i).head(i + 1).transpose();
        EXPECT_TRUE(near(got.log_normalizer[at + i], log_sum_exp(causal_logits(q, k, i, scale)), delta)) << i;
        EXPECT_TRUE(near(got.oracle_mass[at + i], sorted_oracle(row, i, options.budget), mass_tol)) << i;
        EXPECT_TRUE(near(got.column_sum[at + i], columns[i], mass_tol)) << i;
        below += count_below(row, options.tau);
        const double top = row.maxCoeff();
        for (int j = 0; j <= i; ++j) {
          borderline += std::abs(std::log(row[j] / top) - std::log(options.tau)) <= 2.0 * delta;
        }
      }
      EXPECT_LE(std::abs(got.below_tau[std::size_t(layer) * s.q_heads + h] - below), borderline);
    }
  }
}

TEST_P(KernelsTest, StatisticsMatchExactAttention) {
  // Tile edges: n a multiple of the emulated block size, one past it, a single row; budgets 0,
  // inside the row and beyond it.
  struct Case {
    int tokens, budget;
  };
  for (const Case c : {Case{70, 9}, Case{8, 0}, Case{9, 20}, Case{1, 3}}) {
    SCOPED_TRACE("n " + std::to_string(c.tokens) + " budget " + std::to_string(c.budget));
    const Workload w = subevict::generate_workload(small_spec("tiny-gqa", c.tokens, 2, 21), 1);
    const AttentionStatsOptions options{0.01, c.budget};
    expect_stats_match(stats(w, options), w, options, backend() == Backend::kReference);
  }
}

/// Every (layer, KV head) of `w` under every batched policy and aggregation against
/// greedy::simulate: identical evictions, masses and errors within simulation_tolerance.
void expect_simulation_matches(const SimulateFn& simulate, const Workload& w,
                               const std::vector<greedy::GroupAggregation>& aggregations) {
  const Shape& s = w.shape();
  const int n = s.tokens, g = s.group_size();
  const double tol = simulation_tolerance(n, s.head_dim);
  for (BatchedPolicy policy : {BatchedPolicy::kH2o, BatchedPolicy::kLocal, BatchedPolicy::kStreamingLlm,
                               BatchedPolicy::kL2Norm, BatchedPolicy::kTova}) {
    for (greedy::GroupAggregation aggregation : aggregations) {
      BatchedOptions options;
      options.policy = policy;
      options.budget = 9;
      options.aggregation = aggregation;
      options.params.skipped_layers = {1};
      SCOPED_TRACE(to_string(policy) + " " + greedy::to_string(aggregation));
      const BatchedSimulation got = simulate(w, options);
      for (int layer = 0; layer < s.layers; ++layer) {
        for (int kv = 0; kv < s.kv_heads; ++kv) {
          const greedy::HeadGroup group = greedy::head_group(w, layer, kv);
          auto reference = greedy::make_policy(to_string(policy), options.params);
          greedy::SimulationOptions sim;
          sim.budget = options.budget;
          sim.aggregation = aggregation;
          const greedy::Trace expected = greedy::simulate(group, *reference, sim);
          const greedy::Trace trace = got.trace(layer, kv);
          EXPECT_EQ(trace.budget, expected.budget);
          ASSERT_EQ(trace.head_retained_mass.size(), std::size_t(n) * g);
          for (int i = 0; i < n; ++i) {
            EXPECT_EQ(trace.steps[std::size_t(i)].evicted, expected.steps[std::size_t(i)].evicted) << i;
            EXPECT_TRUE(near(trace.steps[std::size_t(i)].retained_mass, expected.steps[std::size_t(i)].retained_mass, tol));
            for (int h = 0; h < g; ++h) {
              const std::size_t e = std::size_t(i) * g + h;
              EXPECT_TRUE(near(trace.head_retained_mass[e], expected.head_retained_mass[e], tol)) << i;
              EXPECT_TRUE(near(trace.head_output_error[e], expected.head_output_error[e], tol)) << i;
            }
          }
        }
      }
    }
  }
}

/// Every batched policy on GQA (g = 2, sum and max) and MQA (g = 4, mean) shapes, each layer
/// against greedy::simulate with the registry's policy.
TEST_P(KernelsTest, SimulationMatchesTheStreamingSimulator) {
  for (const char* preset : {"tiny-gqa", "tiny-mqa"}) {
    expect_simulation_matches(simulate(), subevict::generate_workload(small_spec(preset, 48, 2, 5), 1),
                              preset == std::string("tiny-gqa")
                                  ? std::vector{greedy::GroupAggregation::kSum, greedy::GroupAggregation::kMax}
                                  : std::vector{greedy::GroupAggregation::kMean});
  }
}

TEST_P(BackendTest, RejectsBadInputNamingIt) {
  const Workload w = subevict::generate_workload(small_spec("tiny", 16, 1, 1), 1);
  BatchedOptions zero;
  zero.budget = 0;
  EXPECT_THROW((void)simulate_batched(w, zero, backend()), InputError);
  BatchedOptions sinks;
  sinks.policy = BatchedPolicy::kStreamingLlm;
  sinks.budget = 4;  // sinks 4 is not < 4
  EXPECT_THROW((void)simulate_batched(w, sinks, backend()), InputError);
  EXPECT_THROW((void)attention_stats(w, {0.0, 1}, backend()), InputError);
  EXPECT_THROW((void)attention_stats(w, {0.01, -1}, backend()), InputError);
  WorkloadSpec odd = small_spec("tiny", 16, 1, 1);
  odd.shape.head_dim = 7;  // the LLM-like generator needs an even head_dim
  EXPECT_THROW((void)generate_workload(odd, backend()), InputError);
}

std::string implementation_name(const ::testing::TestParamInfo<Implementation>& param) { return param.param.name; }

#ifdef SUBEVICT_TEST_CUDA_BACKEND
INSTANTIATE_TEST_SUITE_P(Cuda, BackendTest, ::testing::Values(Backend::kCuda), backend_name);
INSTANTIATE_TEST_SUITE_P(Cuda, KernelsTest, ::testing::Values(Implementation{"cuda", Backend::kCuda, std::nullopt}),
                         implementation_name);
#else
INSTANTIATE_TEST_SUITE_P(Cpu, BackendTest, ::testing::Values(Backend::kReference, Backend::kPortable), backend_name);
// The emulated blocks are smaller than the device's (4 and 8 threads instead of 32 and 128), so
// the tiles, strided loops and reduction trees run several rounds at these test sizes.
INSTANTIATE_TEST_SUITE_P(
    Cpu, KernelsTest,
    ::testing::Values(Implementation{"reference", Backend::kReference, std::nullopt},
                      Implementation{"portable", Backend::kPortable, std::nullopt},
                      Implementation{"cuda_kernels_emulated", Backend::kCuda, emulation::EmulatorOptions{4, false}},
                      Implementation{"cuda_kernels_emulated_reverse", Backend::kCuda, emulation::EmulatorOptions{8, true}}),
    implementation_name);

TEST(Backend, NamesRoundTripAndUnknownNamesAreRejected) {
  for (Backend b : {Backend::kReference, Backend::kPortable, Backend::kCuda}) EXPECT_EQ(parse_backend(to_string(b)), b);
  EXPECT_THROW((void)parse_backend("gpu"), InputError);
  const std::vector<Backend> available = available_backends();
  ASSERT_GE(available.size(), 2u);
  EXPECT_EQ(available[0], Backend::kReference);
  EXPECT_EQ(available[1], Backend::kPortable);
  EXPECT_EQ(available.size() == 3, cuda_device_available());
  EXPECT_EQ(fastest_backend(), cuda_device_available() ? Backend::kCuda : Backend::kReference);
}

// The bisection selection equals a sort on small random rows with ties.
RC_GTEST_PROP(RowKernels, TopKMassEqualsTheSortedSum, ()) {
  const int count = *rc::gen::inRange(1, 40);
  const auto levels = *rc::gen::container<std::vector<int>>(std::size_t(count), rc::gen::inRange(-6, 7));
  const int k = *rc::gen::inRange(0, count + 2);
  std::vector<float> s(levels.begin(), levels.end());
  for (float& x : s) x *= 0.75f;  // exact in float; repeated values make ties
  const double log_normalizer = 2.5;
  std::vector<double> p;
  for (float x : s) p.push_back(std::exp(double(x) - log_normalizer));
  std::sort(p.begin(), p.end(), std::greater<>());
  const double expected = std::accumulate(p.begin(), p.begin() + std::min(k, count), 0.0);
  RC_ASSERT(near(detail::top_k_mass(s.data(), count, k, log_normalizer), expected, Tol<double>::sum(std::size_t(count))));
}
#endif

}  // namespace
}  // namespace subevict::kernels
