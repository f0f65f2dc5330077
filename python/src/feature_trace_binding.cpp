// `_feature_trace`: the online features of the members of G_i at the full steps of one policy's run
// on one (layer, KV head) (greedy/eviction/evaluation/feature_trace.hpp): the learned policy's
// training data when the policy replays the optimum's schedule, and its decisions otherwise.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>

#include "bindings.hpp"
#include "core/input_error.hpp"
#include "core/workload.hpp"
#include "greedy/eviction/evaluation/feature_trace.hpp"
#include "greedy/eviction/policies/learned_model.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"
#include "greedy/eviction/policies/recorded_policy.hpp"

namespace subevict::python {

using namespace nb::literals;

namespace {

nb::dict run_feature_trace(const Workload& w, int layer, int kv_head, const std::string& policy,
                           std::optional<std::vector<int>> last_step, int budget, int prefill, int every, int window,
                           int sinks, double trend_rate, std::optional<int> model_layer) {
  const Shape& shape = w.shape();
  if (layer < 0 || layer >= shape.layers) {
    throw InputError("feature_trace", "layer", "a layer in [0, " + std::to_string(shape.layers) + ")", std::to_string(layer));
  }
  if (kv_head < 0 || kv_head >= shape.kv_heads) {
    throw InputError("feature_trace", "kv_head", "a KV head in [0, " + std::to_string(shape.kv_heads) + ")",
                     std::to_string(kv_head));
  }
  if (budget < 1 || budget > shape.tokens) {
    throw InputError("feature_trace", "budget", "a cache size in [1, " + std::to_string(shape.tokens) + "]",
                     std::to_string(budget));
  }
  std::unique_ptr<greedy::EvictionPolicy> made;
  if (last_step) {
    if (!policy.empty()) throw InputError("feature_trace", "policy", "a policy or a schedule, not both", policy);
    made = std::make_unique<greedy::RecordedPolicy>("recorded:schedule", *last_step, "feature_trace schedule");
  } else {
    made = greedy::make_policy(greedy::parse_policy_spec(policy, "feature_trace", "policy", 16));
  }
  greedy::HeadGroup group = greedy::head_group(w, layer, kv_head);
  if (model_layer) group.layer = *model_layer;
  greedy::SimulationOptions options;
  options.budget = budget;
  options.prefill = prefill;
  options.compute_metrics = false;
  greedy::FeatureTraceOptions trace_options;
  trace_options.every = every;
  trace_options.features = {window, sinks, trend_rate};
  greedy::FeatureTrace t;
  {
    nb::gil_scoped_release release;
    t = greedy::record_features(group, *made, options, trace_options);
  }
  std::vector<int> evicted(t.trace.steps.size());
  for (std::size_t i = 0; i < evicted.size(); ++i) evicted[i] = t.trace.steps[i].evicted;
  nb::dict d;
  d["features"] = matrix_array(t.features);
  d["steps"] = owned_array<int>(std::move(t.steps));
  d["offsets"] = owned_array<int>(std::move(t.offsets));
  d["tokens"] = owned_array<int>(std::move(t.tokens));
  d["evicted_row"] = owned_array<int>(std::move(t.evicted_row));
  d["evicted"] = owned_array<int>(std::move(evicted));
  d["last_step"] = owned_array<int>(t.trace.last_step());
  d["budget"] = t.trace.budget;
  return d;
}

}  // namespace

void bind_feature_trace(nb::module_& m) {
  m.def("_feature_trace", &run_feature_trace, "workload"_a, "layer"_a, "kv_head"_a, "policy"_a, "last_step"_a,
        "budget"_a, "prefill"_a, "every"_a, "window"_a, "sinks"_a, "trend_rate"_a, "model_layer"_a,
        "The online features at the full steps of one policy's run (subevict.feature_trace).");
  nb::list names;
  for (std::string_view name : greedy::policies::online_feature_names()) names.append(nb::str(name.data(), name.size()));
  m.attr("online_feature_names") = names;
  m.attr("online_features_version") = greedy::policies::kOnlineFeaturesVersion;
  m.attr("learned_model_format") = std::string(greedy::policies::kLearnedModelFormat);
  m.attr("learned_model_version") = greedy::policies::kLearnedModelVersion;
}

}  // namespace subevict::python
