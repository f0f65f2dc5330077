#include "greedy/eviction/evaluation/share_rule.hpp"

#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "core/input_error.hpp"
#include "core/number_text.hpp"

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

double number(const std::string& text, const std::string& item, const std::string& source, const std::string& field,
              const std::string& expected) {
  std::size_t used = 0;
  double v = 0.0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || !std::isfinite(v)) throw InputError(source, field, expected, item);
  return v;
}

void set_key(ShareRule& rule, const std::string& key, const std::string& value, const std::string& item,
             const std::string& source, const std::string& field) {
  const auto in_range = [&](double lo, double hi, bool integer, const std::string& expected) {
    const double v = number(value, item, source, field, key + ": " + expected);
    if (v < lo || v > hi || (integer && v != std::floor(v))) throw InputError(source, field, key + ": " + expected, item);
    return v;
  };
  if (key == "alpha_safeguard") rule.alpha_safeguard = in_range(0, 1, false, "a share in [0, 1]");
  if (key == "window_size") rule.window_size = int(in_range(0, 1e9, true, "an integer >= 0"));
  if (key == "beta") rule.beta = in_range(1, 1e9, false, "a number >= 1");
  if (key == "head_compression_ratio") rule.head_compression_ratio = in_range(0, 1, false, "a share in [0, 1]");
  if (key == "sink_size") rule.sink_size = int(in_range(0, 1e9, true, "an integer >= 0"));
  if (key == "recent_size") rule.recent_size = int(in_range(1, 1e9, true, "an integer >= 1"));
  if (key == "calibration") rule.calibration = int(in_range(1, 1e9, true, "an integer >= 1"));
  rule.given.push_back(key + "=" + significant_digits(number(value, item, source, field, key), 17));
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
  std::vector<std::set<std::string>> seen;
  const RuleName* current = nullptr;
  std::stringstream in{std::string(text)};
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty()) continue;
    std::string assignment = item;
    const auto colon = item.find(':');
    if (colon != std::string::npos || item.find('=') == std::string::npos) {
      const std::string name = item.substr(0, colon);
      current = nullptr;
      std::vector<std::string> names;
      for (const RuleName& r : rule_names()) {
        names.push_back(r.name);
        if (name == r.name) current = &r;
      }
      if (current == nullptr) throw InputError(source, field, "a rule among " + joined(names), item);
      rules.push_back(ShareRule{});
      rules.back().kind = current->kind;
      seen.emplace_back();
      if (colon == std::string::npos) continue;
      assignment = item.substr(colon + 1);
    } else if (current == nullptr) {
      throw InputError(source, field, "a rule before its key", item);
    }
    const auto eq = assignment.find('=');
    if (eq == std::string::npos) throw InputError(source, field, "KEY=VALUE after the rule's name", item);
    const std::string key = assignment.substr(0, eq), value = assignment.substr(eq + 1);
    bool known = false;
    for (const auto& k : current->keys) known = known || k == key;
    if (!known) throw InputError(source, field, std::string(current->name) + "'s keys: " + joined(current->keys), item);
    if (!seen.back().insert(key).second) throw InputError(source, field, "each key once", item);
    set_key(rules.back(), key, value, item, source, field);
  }
  if (rules.empty()) throw InputError(source, field, "at least one rule", std::string(text));
  std::set<std::string> labels;
  for (const ShareRule& r : rules) {
    if (!labels.insert(r.label()).second) throw InputError(source, field, "each rule once", r.label());
  }
  return rules;
}

}  // namespace subevict::greedy
