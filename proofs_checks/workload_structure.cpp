#include "proofs_checks/workload_structure.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "proofs_checks/format.hpp"

namespace subevict::proofs_checks {
namespace {

/// A per-layer claim: `passes(value)` for the layers in `layers`; held when at most
/// floor(kAlmostAllSlack · layers) fail (when `almost_all`) or none fail.
CheckResult layer_claim(const std::vector<double>& values, const std::vector<int>& layers,
                        const std::function<bool(double)>& passes, bool almost_all, const std::string& name,
                        const std::string& plot, const std::string& description, double threshold) {
  CheckResult result;
  double mean = 0;
  Series series{plot, name, "layer", name, {}, {}};
  for (int l : layers) {
    const double v = values[std::size_t(l)];
    ++result.instances;
    ++result.hypotheses_held;
    mean += v / double(layers.size());
    series.x.push_back(double(l));
    series.y.push_back(v);
    if (!passes(v)) {
      ++result.violations;
      if (!result.counterexample) {
        result.counterexample = Counterexample{"layer " + std::to_string(l) + ": " + name + " = " + format_number(v) +
                                                   " misses the threshold " + format_number(threshold),
                                               {{name, v, description}}};
      }
    }
    result.worst_slack = std::min(result.worst_slack, std::abs(v - threshold) * (passes(v) ? 1.0 : -1.0));
  }
  conclude(result);
  const long long allowed = almost_all ? (long long)std::floor(kAlmostAllSlack * double(layers.size())) : 0;
  if (result.violations > 0 && result.violations <= allowed) {
    result.outcome = Outcome::held;
    result.notes = std::to_string(result.violations) + " layer(s) miss the threshold, within \"almost all\" (" +
                   std::to_string(allowed) + " allowed). ";
  }
  result.measurements = {{"mean_" + name, mean, "mean over the layers checked of " + description},
                         {"threshold", threshold, "per-layer threshold"},
                         {"layers_missing", double(result.violations), "layers that miss the threshold"}};
  result.series.push_back(std::move(series));
  result.key_number = "mean " + name + " " + format_number(mean) + " (threshold " + format_number(threshold) + "), " +
                      std::to_string(result.violations) + " of " + std::to_string(result.instances) + " layers miss";
  return result;
}

std::vector<int> all_layers(const Workload& workload) {
  std::vector<int> layers(std::size_t(workload.shape().layers));
  for (int l = 0; l < workload.shape().layers; ++l) layers[std::size_t(l)] = l;
  return layers;
}

/// Layers 2.. (the papers exclude the first two), or every layer when there are no others; the
/// note says which.
std::vector<int> layers_after_the_first_two(const Workload& workload, std::string& note) {
  std::vector<int> layers;
  for (int l = 2; l < workload.shape().layers; ++l) layers.push_back(l);
  note = "Layers 0 and 1 excluded, as in the paper.";
  if (layers.empty()) {
    layers = all_layers(workload);
    note = "The workload has " + std::to_string(workload.shape().layers) +
           " layer(s), so none remains after excluding the first two: all layers are used.";
  }
  return layers;
}

}  // namespace

InspectedWorkload inspect_for_checks(const Workload& workload, const InspectOptions& options) {
  return {&workload, options, inspect_workload(workload, options)};
}

std::vector<double> layer_means(const InspectedWorkload& inspected, double HeadStatistics::*member) {
  const int layers = inspected.workload->shape().layers;
  std::vector<double> sum(std::size_t(layers), 0.0), count(std::size_t(layers), 0.0);
  for (const HeadStatistics& h : inspected.heads) {
    sum[std::size_t(h.layer)] += h.*member;
    count[std::size_t(h.layer)] += 1.0;
  }
  for (int l = 0; l < layers; ++l) sum[std::size_t(l)] /= std::max(1.0, count[std::size_t(l)]);
  return sum;
}

CheckResult check_sec3_sparsity(const InspectedWorkload& inspected, double threshold) {
  const std::vector<double> values = layer_means(inspected, &HeadStatistics::sparsity);
  CheckResult r = layer_claim(values, all_layers(*inspected.workload), [threshold](double v) { return v > threshold; },
                              true, "sparsity", "sparsity_by_layer",
                              "fraction of causal entries below tau times the row max", threshold);
  r.notes += "tau = " + format_number(inspected.options.tau) + " of the row maximum; mean over the heads of each layer.";
  return r;
}

CheckResult check_sec3_power_law(const InspectedWorkload& inspected, double min_r2) {
  const std::vector<double> values = layer_means(inspected, &HeadStatistics::power_law_r2);
  CheckResult r = layer_claim(values, all_layers(*inspected.workload), [min_r2](double v) { return v >= min_r2; },
                              true, "power_law_r2", "power_law_r2_by_layer",
                              "R^2 of the log-log fit of accumulated attention", min_r2);
  r.measurements.push_back(
      {"mean_exponent", mean_statistics(inspected.heads).power_law_exponent, "mean fitted power-law exponent"});
  r.notes += "Accumulated attention of the non-sink tokens, ranks 1..n/2, least squares in log-log.";
  return r;
}

CheckResult check_l2norm_correlation(const InspectedWorkload& inspected) {
  const Workload& workload = *inspected.workload;
  const Shape& s = workload.shape();
  const std::vector<double> values = layer_means(inspected, &HeadStatistics::norm_attention_spearman);
  std::string note;
  const std::vector<int> layers = layers_after_the_first_two(workload, note);
  const int middle = s.tokens - inspected.options.sinks - inspected.options.recent_window;
  const double threshold = -2.0 / std::sqrt(double(s.q_heads) * double(std::max(1, middle - 1)));
  CheckResult r = layer_claim(values, layers, [threshold](double v) { return v < threshold; }, false, "spearman",
                              "l2norm_correlation_by_layer", "Spearman rho of key norm and mean received attention",
                              threshold);
  for (int l : layers) {
    r.measurements.push_back({"spearman_layer_" + std::to_string(l), values[std::size_t(l)],
                              "mean over heads of layer " + std::to_string(l) + " of Spearman rho"});
  }
  r.notes += note + " The threshold is two standard errors of rho under independence, -2/sqrt(heads (m-1)).";
  return r;
}

CheckResult check_attention_sinks(const InspectedWorkload& inspected, double threshold) {
  const std::vector<double> values = layer_means(inspected, &HeadStatistics::first_token_mass);
  std::string note;
  const std::vector<int> layers = layers_after_the_first_two(*inspected.workload, note);
  CheckResult r = layer_claim(values, layers, [threshold](double v) { return v > threshold; }, true,
                              "first_token_mass", "first_token_mass_by_layer",
                              "mean attention on token 0 over queries i >= 64", threshold);
  for (int l : layers) {
    r.measurements.push_back({"first_token_mass_layer_" + std::to_string(l), values[std::size_t(l)],
                              "mean over heads of layer " + std::to_string(l) + " of the attention on token 0"});
  }
  r.measurements.push_back({"sink_head_rate", sink_head_rate(inspected.heads, inspected.options.sink_head_threshold),
                            "share of all heads whose attention on token 0 over the last 64 queries exceeds " +
                                format_number(inspected.options.sink_head_threshold)});
  r.notes += note + " Queries from row min(64, n/2) on, so that early rows, which see few tokens, do not count.";
  return r;
}

}  // namespace subevict::proofs_checks
