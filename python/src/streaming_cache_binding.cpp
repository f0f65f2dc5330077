// subevict._subevict.StreamingCache: one (layer, KV head) whose Q, K, V rows arrive over time
// (greedy/eviction/evaluation/resumable_simulation.hpp), for generation with an evicting cache.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "bindings.hpp"
#include "core/input_error.hpp"
#include "greedy/eviction/evaluation/resumable_simulation.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"

namespace subevict::python {

namespace {

using namespace nb::literals;
using IntArray = nb::ndarray<nb::numpy, int>;

constexpr const char* kSource = "StreamingCache";

/// The checked arguments of a StreamingCache.
struct Arguments {
  std::unique_ptr<greedy::EvictionPolicy> policy;
  greedy::ResumableShape shape;
  greedy::SimulationOptions options;
};

Arguments streaming_cache_arguments(
    const std::string& policy, int budget, int group_size, int head_dim, double scale, int window,
    std::uint64_t seed, int capacity, const std::string& aggregation, int model_layer, int kv_head, int prefill) {
  if (group_size < 1) throw InputError(kSource, "group_size", "an integer >= 1", std::to_string(group_size));
  if (head_dim < 1) throw InputError(kSource, "head_dim", "an integer >= 1", std::to_string(head_dim));
  if (capacity < 1) throw InputError(kSource, "capacity", "an integer >= 1", std::to_string(capacity));
  if (budget < 1) throw InputError(kSource, "budget", "an integer >= 1", std::to_string(budget));
  if (!(std::isfinite(scale) && scale > 0.0)) throw InputError(kSource, "scale", "a finite scale > 0", std::to_string(scale));
  if (window < 0) throw InputError(kSource, "window", "an integer >= 0 (0: global)", std::to_string(window));
  if (model_layer < 0 || kv_head < 0) {
    throw InputError(kSource, "model_layer and kv_head", "indices >= 0",
                     std::to_string(model_layer) + " and " + std::to_string(kv_head));
  }
  if (prefill < 0 || prefill > capacity) {
    throw InputError(kSource, "prefill", "an integer in [0, capacity " + std::to_string(capacity) + "]",
                     std::to_string(prefill));
  }
  const greedy::PolicySpec spec = greedy::parse_policy_spec(policy, kSource, "policy", 16);
  greedy::check_policy_budget(spec, capacity, budget, kSource, "policy");
  std::unique_ptr<greedy::EvictionPolicy> made = greedy::make_policy(spec);
  if (made->is_oracle()) {
    throw InputError(kSource, "policy", "a causal policy (an oracle reads rows that have not arrived)", policy);
  }
  greedy::SimulationOptions options;
  options.budget = budget;
  options.seed = seed;
  options.prefill = prefill;
  options.aggregation = greedy::parse_group_aggregation(aggregation);
  return {std::move(made), greedy::ResumableShape{group_size, head_dim, scale, window, capacity, model_layer, kv_head},
          options};
}

/// The rows of `array` (float32, C order) checked to be `rows` x `cols` (x `heads` in front when
/// heads > 0); its data.
const float* rows_of(const AnyArray& array, int heads, int rows, int cols, const std::string& field) {
  const int ndim = heads > 0 ? 3 : 2;
  const float* data = checked_data<float>(array, ndim, kSource, field);
  const bool fits = heads > 0 ? (int(array.shape(0)) == heads && int(array.shape(1)) == rows && int(array.shape(2)) == cols)
                              : (int(array.shape(0)) == rows && int(array.shape(1)) == cols);
  if (!fits) {
    const std::string want = heads > 0 ? "(" + std::to_string(heads) + ", m, " + std::to_string(cols) + ")"
                                       : "(m, " + std::to_string(cols) + ") with q's m";
    throw InputError(kSource, field, "shape " + want, shape_text(array));
  }
  for (std::size_t e = 0, size = array.size(); e < size; ++e) {
    if (!std::isfinite(data[e])) throw InputError(kSource, field, "finite values", "a NaN or infinity");
  }
  return data;
}

std::tuple<IntArray, IntArray> extend(greedy::ResumableSimulation& run, const AnyArray& q, const AnyArray& k,
                                      const AnyArray& v) {
  const int g = run.shape().group_size, d = run.shape().head_dim;
  if (q.ndim() != 3) throw InputError(kSource, "q", "a 3-D array (g, m, d)", shape_text(q));
  const int m = int(q.shape(1));
  const float* qd = rows_of(q, g, m, d, "q");
  const float* kd = rows_of(k, 0, m, d, "k");
  const float* vd = rows_of(v, 0, m, d, "v");
  if (m < 1) throw InputError(kSource, "q", "at least one row (m >= 1)", shape_text(q));
  if (m > run.capacity() - run.tokens()) {
    throw InputError(kSource, "rows", "at most the capacity left, " + std::to_string(run.capacity() - run.tokens()),
                     std::to_string(m));
  }
  std::vector<ConstHeadMap> heads;
  for (int h = 0; h < g; ++h) heads.emplace_back(qd + std::size_t(h) * std::size_t(m) * std::size_t(d), m, d);
  greedy::ResumedSteps steps;
  std::vector<int> cache;
  {
    nb::gil_scoped_release release;
    steps = run.extend(heads, ConstHeadMap(kd, m, d), ConstHeadMap(vd, m, d));
    cache = run.cache();
  }
  return {owned_array(std::move(steps.evicted)), owned_array(std::move(cache))};
}

}  // namespace

void bind_streaming_cache(nb::module_& m) {
  nb::class_<greedy::ResumableSimulation>(
      m, "StreamingCache",
      "One (layer, KV head) whose Q, K and V rows arrive over time (a prompt, then generated tokens): "
      "extend() runs the new rows' eviction steps exactly as _simulate over all rows would (same policy "
      "state, budget, seed, window, prefill at the start only) and returns (evicted, cache): per new step the "
      "evicted token or -1, and the cache S after the last step, ascending (what the next token attends "
      "over, with itself). Oracle policies are refused; no metrics.")
      .def("__init__",
           [](greedy::ResumableSimulation* self, const std::string& policy, int budget, int group_size, int head_dim,
              double scale, int window, std::uint64_t seed, int capacity, const std::string& aggregation,
              int model_layer, int kv_head, int prefill) {
             Arguments a = streaming_cache_arguments(policy, budget, group_size, head_dim, scale, window, seed,
                                                     capacity, aggregation, model_layer, kv_head, prefill);
             new (self) greedy::ResumableSimulation(std::move(a.policy), a.shape, a.options);
           },
           "policy"_a, "budget"_a, "group_size"_a, "head_dim"_a, "scale"_a, "window"_a = 0, "seed"_a = 0,
           "capacity"_a, "aggregation"_a = "sum", "model_layer"_a = 0, "kv_head"_a = 0, "prefill"_a = 0)
      .def("extend", &extend, "q"_a, "k"_a, "v"_a,
           "Appends q (g, m, d), k (m, d), v (m, d) float32 rows; returns (evicted int32 [m], cache int32 ascending).")
      .def(
          "fork",
          [](const greedy::ResumableSimulation& run) {
            nb::gil_scoped_release release;
            return run.fork();
          },
          "A second StreamingCache in this one's present state (rows, policy state, cache): extending either "
          "leaves the other as it was; the fork extended with rows R decides as one run fed this run's rows "
          "and then R.")
      .def_prop_ro("tokens", &greedy::ResumableSimulation::tokens)
      .def_prop_ro("capacity", &greedy::ResumableSimulation::capacity)
      .def_prop_ro("budget", &greedy::ResumableSimulation::budget)
      .def("cache", [](const greedy::ResumableSimulation& run) { return owned_array(run.cache()); })
      .def("prefill_evicted",
           [](const greedy::ResumableSimulation& run) { return owned_array(std::vector<int>(run.prefill_evicted())); });
}

}  // namespace subevict::python
