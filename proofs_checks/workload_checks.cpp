#include "proofs_checks/workload_checks.hpp"

#include "proofs_checks/dynamic_family.hpp"
#include "proofs_checks/function_check.hpp"
#include "proofs_checks/workload_structure.hpp"

namespace subevict::proofs_checks {
namespace {

/// The context's workload with its statistics: measured once by the caller, or here.
InspectedWorkload inspected_of(const CheckContext& context) {
  const Workload& workload = context_workload(context, "workload checks");
  InspectOptions options;
  options.layers = context.layers;
  if (context.head_statistics != nullptr) return {&workload, options, *context.head_statistics};
  return inspect_for_checks(workload, options);
}

/// The instance family of every structure claim.
constexpr const char* kRealAttention =
    "imported tensors of a real model (on a generated workload the hypotheses are not met: the generator "
    "plants the structure)";

/// A structure claim is about a real model's attention: on a generated workload (metadata
/// "generator") the generator planted the structure, so the claim's hypotheses are not met there;
/// its numbers stay as measurements of the generator.
CheckResult on_real_attention(const CheckContext& context, CheckResult result) {
  const Workload& workload = context_workload(context, "workload checks");
  const auto generator = workload.metadata.find("generator");
  if (generator == workload.metadata.end()) return result;
  result.notes = "Not tested: the workload is generated (" + generator->second +
                 "), whose parameters plant this structure; the numbers below measure the generator. " +
                 (result.counterexample ? "On it: " + result.counterexample->description + ". " : std::string()) +
                 result.notes;
  clear_verdict(result);
  conclude(result);
  return result;
}

}  // namespace

std::vector<std::unique_ptr<Check>> workload_checks() {
  std::vector<std::unique_ptr<Check>> checks;
  checks.push_back(make_check(
      {"h2o.sec3_sparsity", "H2O, Section 3 (Figure 2)",
       "Attention matrices are over 95% sparse in almost all layers.",
       "exact causal attention of every head; an entry is sparse when below 1% of its row maximum",
       "per-layer mean sparsity > 0.95 in all but at most 10% of the layers", {kRealAttention},
       "proofs_checks/workload_structure.cpp"},
      [](const CheckContext& c) { return on_real_attention(c, check_sec3_sparsity(inspected_of(c))); }));
  checks.push_back(make_check(
      {"h2o.sec3_power_law", "H2O, Section 3 (Figure 2)",
       "Accumulated attention scores follow a power law.",
       "accumulated exact attention of the non-sink tokens, ranks 1..n/2",
       "per-layer mean R^2 of the log-log fit >= 0.95 in all but at most 10% of the layers (uniform causal "
       "attention, which has no heavy hitters, already fits at R^2 = 0.89, so 0.9 would not separate them)",
       {kRealAttention}, "proofs_checks/workload_structure.cpp"},
      [](const CheckContext& c) { return on_real_attention(c, check_sec3_power_law(inspected_of(c))); }));
  checks.push_back(make_check(
      {"l2norm.attention_correlation", "Devoto et al. 2024 (arXiv 2406.11430), Section 3",
       "Keys with a low L2 norm receive high attention: key norm and attention are negatively correlated, except "
       "in the first two layers.",
       "layers >= 2 (all layers when the workload has no others); mean attention received per observing query, "
       "middle tokens (no sinks, no recent window)",
       "per-layer mean Spearman rho < -2 / sqrt(heads (m-1)) in every layer checked",
       {kRealAttention}, "proofs_checks/workload_structure.cpp"},
      [](const CheckContext& c) { return on_real_attention(c, check_l2norm_correlation(inspected_of(c))); }));
  checks.push_back(make_check(
      {"streamingllm.attention_sinks", "StreamingLLM (Xiao et al. 2024), Section 3.1 and Figure 2",
       "Attention sinks: beyond the first two layers, most of the attention goes to the first token.",
       "layers >= 2 (all layers when the workload has no others); exact causal attention of every head, query rows "
       "i >= 64",
       "per-layer mean attention on token 0 > 0.5 in all but at most 10% of the layers checked",
       {kRealAttention}, "proofs_checks/workload_structure.cpp"},
      [](const CheckContext& c) { return on_real_attention(c, check_attention_sinks(inspected_of(c))); }));
  return checks;
}

}  // namespace subevict::proofs_checks
