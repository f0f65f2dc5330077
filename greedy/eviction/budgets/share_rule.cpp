#include "greedy/eviction/budgets/share_rule.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "core/input_error.hpp"
#include "core/number_text.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"

namespace subevict::greedy {

namespace {

struct RuleName {
  const char* name;
  ShareRule::Kind kind;
  std::vector<std::string> keys;
};

const std::vector<RuleName>& rule_names() {
  static const std::vector<RuleName> names{
      {"uniform", ShareRule::Kind::kUniform, {}},
      {"adakv", ShareRule::Kind::kAdaKv, {"alpha_safeguard"}},
      {"pyramidkv", ShareRule::Kind::kPyramidKv, {"window_size", "beta"}},
      {"duo", ShareRule::Kind::kDuo, {"head_compression_ratio", "sink_size", "recent_size", "calibration"}}};
  return names;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out.empty() ? "none" : out;
}

/// Applies KEY=VALUE to `rule`: the value parsed once (finite_number), checked against the key's
/// range, and recorded in its shortest round-trip form for the label.
void set_key(ShareRule& rule, const std::string& key, const std::string& value, const std::string& item,
             const std::string& source, const std::string& field) {
  struct Range {
    double lo, hi;
    bool integer;
    const char* expected;
  };
  static const std::map<std::string, Range> ranges{
      {"alpha_safeguard", {0, 1, false, "a share in [0, 1]"}},
      {"window_size", {0, 1e9, true, "an integer >= 0"}},
      {"beta", {1, 1e9, false, "a number >= 1"}},
      {"head_compression_ratio", {0, 1, false, "a share in [0, 1]"}},
      {"sink_size", {0, 1e9, true, "an integer >= 0"}},
      {"recent_size", {1, 1e9, true, "an integer >= 1"}},
      {"calibration", {1, 1e9, true, "an integer >= 1"}}};
  const Range& range = ranges.at(key);
  const std::optional<double> parsed = finite_number(value);
  if (!parsed || *parsed < range.lo || *parsed > range.hi || (range.integer && *parsed != std::floor(*parsed))) {
    throw InputError(source, field, key + ": " + range.expected, item);
  }
  const double v = *parsed;
  if (key == "alpha_safeguard") rule.alpha_safeguard = v;
  if (key == "window_size") rule.window_size = int(v);
  if (key == "beta") rule.beta = v;
  if (key == "head_compression_ratio") rule.head_compression_ratio = v;
  if (key == "sink_size") rule.sink_size = int(v);
  if (key == "recent_size") rule.recent_size = int(v);
  if (key == "calibration") rule.calibration = int(v);
  rule.given.push_back(key + "=" + significant_digits(v, 17));
}

}  // namespace

std::string ShareRule::label() const {
  std::string name;
  for (const RuleName& r : rule_names()) {
    if (r.kind == kind) name = r.name;
  }
  if (given.empty()) return name;
  std::string out = name + ":";
  for (std::size_t i = 0; i < given.size(); ++i) out += (i ? "," : "") + given[i];
  return out;
}

std::vector<ShareRule> parse_share_rules(std::string_view text, const std::string& source, const std::string& field) {
  std::vector<ShareRule> rules;
  for (const ListItem& item : split_spec_list(text, source, field, {"rule", "rules", "adakv:alpha_safeguard=0.2"})) {
    const RuleName* rule = nullptr;
    std::vector<std::string> names;
    for (const RuleName& r : rule_names()) {
      names.push_back(r.name);
      if (item.name == r.name) rule = &r;
    }
    if (rule == nullptr) throw InputError(source, field, "a rule among " + joined(names), item.name);
    rules.push_back(ShareRule{});
    rules.back().kind = rule->kind;
    for (const auto& [key, value] : item.keys) {
      const std::string typed = item.name + ":" + key + "=" + value;
      if (std::find(rule->keys.begin(), rule->keys.end(), key) == rule->keys.end()) {
        throw InputError(source, field, std::string(rule->name) + "'s keys: " + joined(rule->keys), typed);
      }
      set_key(rules.back(), key, value, typed, source, field);
    }
  }
  std::set<std::string> labels;
  for (const ShareRule& r : rules) {
    if (!labels.insert(r.label()).second) throw InputError(source, field, "each rule once", r.label());
  }
  return rules;
}

std::string default_share_rules(bool model) { return model ? "uniform,adakv,pyramidkv,duo" : "uniform,adakv,duo"; }

}  // namespace subevict::greedy
