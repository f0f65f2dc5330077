#pragma once
/// \file
/// How a cache budget is spread over heads by the adaptive methods, as `simulate --share` names
/// them (kvpress's names and parameters where kvpress has them):
///
///   uniform                   every head keeps k (the baseline)
///   adakv      alpha_safeguard   one cache of the scope's total shared at every step, evicting the
///                                smallest scores over its heads; each head keeps ⌊α k⌋ (default 0.2)
///   pyramidkv  window_size, beta  every head of layer l keeps pyramid_layer_budget(l) (defaults
///                                64 and 20; the whole model only)
///   duo        head_compression_ratio, sink_size, recent_size, calibration
///                                a share of the heads (default 0.5) stream (sinks + recent keys,
///                                defaults 4 and 60), chosen by their loss on the first calibration
///                                queries (default 256); the other heads split the rest
///
/// LIST = RULE ("," RULE)*, RULE = NAME [":" KEY "=" VALUE ("," KEY "=" VALUE)*], an item with "="
/// and no ":" continuing the previous rule: the grammar of policy_spec.hpp, split by its
/// split_spec_list.

#include <string>
#include <string_view>
#include <vector>

namespace subevict::greedy {

struct ShareRule {
  enum class Kind { kUniform, kAdaKv, kPyramidKv, kDuo };
  Kind kind = Kind::kUniform;
  double alpha_safeguard = 0.2;
  int window_size = 64;
  double beta = 20.0;
  double head_compression_ratio = 0.5;
  int sink_size = 4;
  int recent_size = 60;
  int calibration = 256;
  /// The keys given, "key=value" in the order given (for the label).
  std::vector<std::string> given;

  /// NAME, or NAME:key=value,... for the keys given: the text that parses back to this rule.
  [[nodiscard]] std::string label() const;
};

/// Parses a LIST. Throws InputError(source, field, ...) naming the item for what split_spec_list
/// refuses (an empty item, a key given twice, ...), an unknown rule (listing the names), an
/// unknown key (listing the rule's keys), a value that is not one finite number or out of range
/// (α and the ratio in [0, 1], window ≥ 0, β ≥ 1, sinks ≥ 0, recent ≥ 1, calibration ≥ 1; counts
/// integers), and a label listed twice.
[[nodiscard]] std::vector<ShareRule> parse_share_rules(std::string_view text, const std::string& source,
                                                       const std::string& field);

/// The rules a scope runs when none are given, as a LIST: uniform, adakv and duo, with pyramidkv
/// too on the whole model's scope (model = true).
[[nodiscard]] std::string default_share_rules(bool model);

}  // namespace subevict::greedy
