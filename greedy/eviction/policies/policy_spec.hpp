#pragma once
/// \file
/// A policy as a user writes it: a name and optional parameters, e.g. "h2o:heavy=0.25,recent=0.75"
/// or "streamingllm:sinks=2". One grammar for `simulate --policies`, `verify --policies` and the
/// `[policy] names` of sweep grids (docs/eviction.md lists every key):
///
///   SPEC  = NAME [":" KEY "=" VALUE ("," KEY "=" VALUE)*]
///   LIST  = SPEC ("," SPEC)*      an item with "=" and no ":" continues the previous SPEC
///
/// NAME is a registry name (policy_registry.hpp), "lookahead" or "learned". Keys per policy:
///   h2o, h2o-oracle  heavy, recent   shares of the budget k in [0, 1) or counts (integers >= 0),
///                                    both of one kind; shares given together sum to 1, counts to
///                                    k (they split the cache); one given, the other is the rest
///   streamingllm     sinks           count, 0 <= sinks < k
///   sparse-strided   stride, window  stride >= 1; window >= 0 (0: the stride)
///   sparse-fixed     stride, summary stride >= 1; 1 <= summary <= stride
///   snapkv           window, pooling, kernel   window >= 1; none|max|avg (default none); odd kernel
///                                    >= 1, given only with max or avg
///   h2o-noisy        epsilon         noise bound >= 0
///   l2norm           skip_first      layers 0..N-1 not compressed (N >= 0)
///   lookahead        horizon         window L >= 1
///   streaming_llm    n_sink          count, 0 <= n_sink < k (kvpress's key)
///   leverage         ridge           lambda > 0
///   expected_attention n_sink, epsilon, use_covariance, use_vnorm, n_future_positions
///                                    0 <= n_sink < k; epsilon >= 0 (default 0); 0 or 1; 0 or 1; F >= 0
///   lagkv            n_sink, lag_size, cross_scoring   0 <= n_sink < k; L >= 2; 0 or 1
///   cur              n_sink, leverage_type, use_local_approximation, local_window_size
///                                    0 <= n_sink < k; key|value|kv_avg|kv_product; 0 or 1; w >= 1
///   cap              n_sink, tau, epsilon, n_future_positions
///                                    0 <= n_sink < k; tau >= 0; epsilon >= 0; F >= 0
///   compactor        sink_size_start, sink_size_end, chunk_size, blending, ridge
///                                    counts >= 0 with sum <= k; C >= 1; weight (< 0: the
///                                    compression ratio); lambda > 0
///   non_causal_attention chunk_size  C >= 1
///   learned          model           the model file (required; read and checked when parsed)
/// Other policies take no parameters.

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "greedy/eviction/policies/eviction_policy.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"

namespace subevict::greedy::policies {
class LearnedModel;
}

namespace subevict::greedy {

/// One parsed policy: its name, the registry parameters with the given keys applied, the
/// lookahead window, and the keys as given (for the label).
struct PolicySpec {
  std::string name;
  PolicyParams params;
  int horizon = 16;
  /// learned: the model file as given and the model read from it (shared by every policy made).
  std::string model_path;
  std::shared_ptr<const policies::LearnedModel> learned_model;
  /// (key, value) of every key given, in the policy's key order, values normalized (numbers in
  /// their shortest round-trip form).
  std::vector<std::pair<std::string, std::string>> given;

  /// NAME when no key was given, else "NAME:key=value,..." in the policy's key order: the text
  /// that parses back to this spec, and the policy's name in results (traces, CSV, JSON, ids).
  [[nodiscard]] std::string label() const;
};

/// One documented parameter of a policy: its key, its meaning and range, its default.
struct PolicyParameter {
  std::string key, meaning, default_value;
};

/// The parameters `name` takes (empty for a policy without parameters). Throws InputError for a
/// name that is neither a registry name nor "lookahead".
[[nodiscard]] std::vector<PolicyParameter> policy_parameters(std::string_view name);

/// Every accepted name (the registry's, then "lookahead" and "learned").
[[nodiscard]] std::vector<std::string> spec_policy_names();

/// One SPEC of a LIST as typed: its NAME, whether a ':' followed it, and its KEY=VALUE pairs in
/// order (trimmed text, no rule of any name applied yet).
struct ListItem {
  std::string name;
  bool has_colon = false;
  std::vector<std::pair<std::string, std::string>> keys;
};

/// How errors name a LIST's items: "policy", "policies" and an example SPEC.
struct ListWords {
  const char* noun;
  const char* plural;
  const char* example;
};

/// Splits a LIST (the grammar above; spaces around items, keys and values trimmed) into its
/// items: the part every NAME:KEY=VALUE list shares (parse_policy_list, simulate's
/// --share-rules). Throws InputError(source, field, ...) naming the item for an empty item, a
/// "KEY=VALUE" item with no "NAME:" before it, nothing after ':', a pair without '=' or key, and a
/// key given twice.
[[nodiscard]] std::vector<ListItem> split_spec_list(std::string_view text, const std::string& source,
                                                    const std::string& field, const ListWords& words);

/// Parses a LIST. `source` and `field` name the input in errors (e.g. "simulate", "--policies");
/// `default_horizon` is lookahead's window unless the spec gives one. Throws InputError naming the
/// item for: an unknown name (listing the names), an unknown key (naming it and listing the valid
/// keys of that policy), a key given twice, a value that is not of the key's kind or outside the
/// budget-independent range, shares and counts mixed, shares not summing to 1, a "KEY=VALUE" item
/// with no policy before it, and a label listed twice.
[[nodiscard]] std::vector<PolicySpec> parse_policy_list(std::string_view text, const std::string& source,
                                                        const std::string& field, int default_horizon);

/// Parses exactly one SPEC (commas separate its keys); throws as parse_policy_list, and for a
/// text that holds several policies.
[[nodiscard]] PolicySpec parse_policy_spec(std::string_view text, const std::string& source,
                                           const std::string& field, int default_horizon);

/// Every parameter of `spec`'s policy with its effective value (defaults included), in key order;
/// for h2o's split, a count not given reads "rest" (k minus the other).
[[nodiscard]] std::vector<std::pair<std::string, std::string>> effective_parameters(const PolicySpec& spec);

/// A new policy of the spec.
[[nodiscard]] std::unique_ptr<EvictionPolicy> make_policy(const PolicySpec& spec);

/// Throws InputError(source, field, ...) naming the spec's label, k and n when the policy rejects
/// budget k on a sequence of n tokens (sinks >= k, heavy + recent != k, ...): reset() on a
/// stand-in input of n tokens. Cost: generating one n x 8 head.
void check_policy_budget(const PolicySpec& spec, int tokens, int budget, const std::string& source,
                         const std::string& field);

}  // namespace subevict::greedy
