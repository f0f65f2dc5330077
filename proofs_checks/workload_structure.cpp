#include "proofs_checks/workload_structure.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "proofs_checks/format.hpp"

namespace subevict::proofs_checks {
namespace {

/// A per-layer claim: `passes(value)` for the layers in `layers`.
/// - Every layer (!almost_all): each layer is an instance, each layer that misses a violation.
/// - Almost all layers: the claim is about the layer set, one instance, violated exactly when
///   more than floor(kAlmostAllSlack · layers) layers miss. The layers that miss are the
///   measurement layers_missing (and the notes), never violations of a claim that held, so
///   outcome, violations, violation rate and counterexample always say the same thing.
CheckResult layer_claim(const std::vector<double>& values, const std::vector<int>& layers,
                        const std::function<bool(double)>& passes, bool almost_all, const std::string& name,
                        const std::string& plot, const std::string& description, double threshold) {
  CheckResult result;
  double mean = 0;
  long long missing = 0;
  std::optional<Counterexample> first_miss;
  Series series{plot, "mean over the layer's heads", "layer", description, {}, {}, SeriesStyle::categorical, {},
                "Per layer: " + description};
  for (int l : layers) {
    const double v = values[std::size_t(l)];
    mean += v / double(layers.size());
    series.x.push_back(double(l));
    series.y.push_back(v);
    if (!passes(v)) {
      ++missing;
      if (!first_miss) {
        first_miss = Counterexample{"layer " + std::to_string(l) + ": " + name + " = " + format_number(v) +
                                        " misses the threshold " + format_number(threshold),
                                    {{name, v, description}}};
      }
    }
    if (!almost_all) result.worst_slack = std::min(result.worst_slack, std::abs(v - threshold) * (passes(v) ? 1.0 : -1.0));
  }
  const long long layer_count = (long long)layers.size();
  const long long allowed = almost_all ? (long long)std::floor(kAlmostAllSlack * double(layer_count)) : 0;
  if (!almost_all) {
    result.instances = result.hypotheses_held = layer_count;
    result.violations = missing;
    result.counterexample = first_miss;
  } else if (layer_count > 0) {
    result.instances = result.hypotheses_held = 1;
    result.violations = missing > allowed ? 1 : 0;
    result.worst_slack = double(allowed - missing);  // layers to spare (negative: too many miss)
    if (result.violations > 0) {
      first_miss->description = std::to_string(missing) + " of " + std::to_string(layer_count) +
                                " layers miss the threshold, more than the " + std::to_string(allowed) +
                                " that \"almost all\" allows; the first, " + first_miss->description;
      result.counterexample = first_miss;
    } else if (missing > 0) {
      result.notes = std::to_string(missing) + " layer(s) miss the threshold, within \"almost all\" (" +
                     std::to_string(allowed) + " allowed). ";
    }
  }
  conclude(result);
  result.measurements = {{"mean_" + name, mean, "mean over the layers checked of " + description},
                         {"threshold", threshold, "per-layer threshold"},
                         {"layers_missing", double(missing), "layers that miss the threshold"},
                         {"layers_checked", double(layer_count), "layers the claim reads"}};
  if (almost_all) {
    result.measurements.push_back({"layers_allowed_to_miss", double(allowed), "floor(0.1 x layers checked)"});
  }
  result.series.push_back(std::move(series));
  result.series.push_back({plot, "threshold " + format_number(threshold), "layer", description, {}, {threshold},
                           SeriesStyle::threshold});
  result.key_number = "mean " + name + " " + format_number(mean) + " (threshold " + format_number(threshold) + "), " +
                      std::to_string(missing) + " of " + std::to_string(layer_count) + " layers miss" +
                      (almost_all ? " (" + std::to_string(allowed) + " allowed)" : "");
  return result;
}

/// The layers measured (those that occur in inspected.heads), ascending.
std::vector<int> all_layers(const InspectedWorkload& inspected) {
  std::vector<int> layers;
  for (const HeadStatistics& h : inspected.heads) layers.push_back(h.layer);
  std::sort(layers.begin(), layers.end());
  layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
  return layers;
}

/// The measured layers from 2 on (the papers exclude the first two), or every measured layer
/// when there are no others; the note says which.
std::vector<int> layers_after_the_first_two(const InspectedWorkload& inspected, std::string& note) {
  const std::vector<int> measured = all_layers(inspected);
  std::vector<int> layers;
  for (int l : measured)
    if (l >= 2) layers.push_back(l);
  note = "Layers 0 and 1 excluded, as in the paper.";
  if (layers.empty()) {
    layers = measured;
    note = "The " + std::to_string(measured.size()) +
           " layer(s) checked are all below 2, so none remains after excluding the first two: all are used.";
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
  CheckResult r = layer_claim(values, all_layers(inspected), [threshold](double v) { return v > threshold; },
                              true, "sparsity", "sparsity_by_layer",
                              "fraction of causal entries below tau times the row max", threshold);
  r.notes += "tau = " + format_number(inspected.options.tau) + " of the row maximum; mean over the heads of each layer.";
  return r;
}

CheckResult check_sec3_power_law(const InspectedWorkload& inspected, double min_r2) {
  const std::vector<double> values = layer_means(inspected, &HeadStatistics::power_law_r2);
  CheckResult r = layer_claim(values, all_layers(inspected), [min_r2](double v) { return v >= min_r2; },
                              true, "power_law_r2", "power_law_r2_by_layer",
                              "R^2 of the log-log fit of accumulated attention", min_r2);
  r.measurements.push_back(
      {"mean_exponent", mean_statistics(inspected.heads).power_law_exponent, "mean fitted power-law exponent"});
  r.notes += "Accumulated attention of the non-sink tokens, ranks 1..n/2, least squares in log-log.";
  return r;
}

CheckResult check_l2norm_correlation(const InspectedWorkload& inspected, double standard_errors) {
  const Workload& workload = *inspected.workload;
  const Shape& s = workload.shape();
  const std::vector<double> values = layer_means(inspected, &HeadStatistics::norm_attention_spearman);
  std::string note;
  const std::vector<int> layers = layers_after_the_first_two(inspected, note);
  const int middle = s.tokens - inspected.options.sinks - inspected.options.recent_window;
  const double threshold = -standard_errors / std::sqrt(double(s.q_heads) * double(std::max(1, middle - 1)));
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
  const std::vector<int> layers = layers_after_the_first_two(inspected, note);
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
