#include "greedy/eviction/policies/policy_spec.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>

#include "core/generator.hpp"
#include "core/input_error.hpp"
#include "core/number_text.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/policies/learned.hpp"
#include "greedy/eviction/policies/lookahead.hpp"

namespace subevict::greedy {
namespace {

/// What a key's value must be.
enum class Kind {
  kShareOrCount,  ///< a share in [0, 1) or an integer count >= 0
  kCount,         ///< an integer >= minimum
  kOddCount,      ///< an odd integer >= 1
  kNumber,        ///< a finite number >= 0
  kPooling,       ///< none | max | avg (or the names in `choices`)
  kPath,          ///< a file path (any text; the rule reads and checks the file)
};

/// One key of one policy: how it is read and where it goes.
struct KeyRule {
  const char* key;
  Kind kind;
  int minimum;  ///< for kCount
  const char* meaning;
  /// Stores the checked value (`number` for numeric kinds, `text` for names) into the spec.
  std::function<void(PolicySpec&, double number, const std::string& text)> apply;
  /// The effective value of the key in a spec.
  std::function<std::string(const PolicySpec&)> show;
  int maximum = 1'000'000'000;  ///< for kCount (every count fits an int)
  const char* choices = "none, max or avg";  ///< for kPooling: the accepted names, for errors
};

/// l2norm's skip_first: no model has more layers (the skipped layers are stored one by one).
constexpr int kMaxSkippedLayers = 4096;

/// `x` in its shortest round-trip form; integers without an exponent.
std::string number_text(double x) {
  if (x == std::floor(x) && std::abs(x) < 1e15) return std::to_string((long long)x);
  for (int digits = 1; digits < 17; ++digits) {
    const std::string t = significant_digits(x, digits);
    if (std::strtod(t.c_str(), nullptr) == x) return t;
  }
  return significant_digits(x, 17);
}

std::string int_text(int v) { return std::to_string(v); }

/// A rule whose value is the integer field `field` of PolicyParams.
KeyRule int_field(const char* key, Kind kind, int minimum, const char* meaning, int PolicyParams::*field) {
  return {key, kind, minimum, meaning,
          [field](PolicySpec& s, double v, const std::string&) { s.params.*field = int(v); },
          [field](const PolicySpec& s) { return int_text(s.params.*field); }};
}

/// A 0/1 switch stored in the bool field `field` of PolicyParams.
KeyRule bool_field(const char* key, const char* meaning, bool PolicyParams::*field) {
  KeyRule rule{key, Kind::kCount, 0, meaning,
               [field](PolicySpec& s, double v, const std::string&) { s.params.*field = v != 0.0; },
               [field](const PolicySpec& s) { return int_text(s.params.*field ? 1 : 0); }};
  rule.maximum = 1;
  return rule;
}

/// h2o's split: a share or a count of `heavy` or `recent` as the user gave them (finish_split
/// turns them into PolicyParams).
struct SplitPart {
  std::optional<double> share;
  std::optional<int> count;
};

const std::vector<KeyRule>& rules_of(std::string_view name) {
  static const std::vector<KeyRule> none;
  static const std::vector<KeyRule> split = {
      {"heavy", Kind::kShareOrCount, 0, "heavy hitters: a share of the budget k in [0, 1) or a count <= k",
       nullptr, nullptr},
      {"recent", Kind::kShareOrCount, 0, "recent window: a share of k in [0, 1) or a count <= k; heavy + recent fill k",
       nullptr, nullptr},
  };
  static const std::vector<KeyRule> streaming = {
      int_field("sinks", Kind::kCount, 0, "sink tokens (the first positions), 0 <= sinks < k", &PolicyParams::sinks),
  };
  static const std::vector<KeyRule> strided = {
      int_field("stride", Kind::kCount, 1, "the stride l >= 1", &PolicyParams::stride),
      int_field("window", Kind::kCount, 0, "the local window (0: the stride)", &PolicyParams::window),
  };
  static const std::vector<KeyRule> fixed = {
      int_field("stride", Kind::kCount, 1, "the block length l >= 1", &PolicyParams::stride),
      int_field("summary", Kind::kCount, 1, "summary positions per block, 1 <= c <= l", &PolicyParams::summary),
  };
  static const std::vector<KeyRule> snapkv = {
      int_field("window", Kind::kCount, 1, "the observation window w >= 1 (the last w prompt queries)",
                &PolicyParams::observation_window),
      {"pooling", Kind::kPooling, 0, "pooling of the scores: none, max or avg",
       [](PolicySpec& s, double, const std::string& t) { s.params.pooling = parse_pooling(t); },
       [](const PolicySpec& s) { return to_string(s.params.pooling); }},
      int_field("kernel", Kind::kOddCount, 1, "the pooling kernel, odd >= 1", &PolicyParams::pooling_kernel),
  };
  static const std::vector<KeyRule> noisy = {
      {"epsilon", Kind::kNumber, 0, "the noise bound >= 0 (|eta| <= epsilon)",
       [](PolicySpec& s, double v, const std::string&) { s.params.epsilon = v; },
       [](const PolicySpec& s) { return number_text(s.params.epsilon); }},
  };
  static const std::vector<KeyRule> l2norm = {
      {"skip_first", Kind::kCount, 0, "layers 0..N-1 are not compressed",
       [](PolicySpec& s, double v, const std::string&) {
         s.params.skipped_layers.clear();
         for (int l = 0; l < int(v); ++l) s.params.skipped_layers.push_back(l);
       },
       [](const PolicySpec& s) { return int_text(int(s.params.skipped_layers.size())); }, kMaxSkippedLayers},
  };
  static const std::vector<KeyRule> lookahead = {
      {"horizon", Kind::kCount, 1, "the lookahead window L >= 1 (default: --horizon)",
       [](PolicySpec& s, double v, const std::string&) { s.horizon = int(v); },
       [](const PolicySpec& s) { return int_text(s.horizon); }},
  };
  static const std::vector<KeyRule> kvpress_streaming = {
      int_field("n_sink", Kind::kCount, 0, "sink tokens (the first positions), 0 <= n_sink < k", &PolicyParams::sinks),
  };
  static const std::vector<KeyRule> leverage = {
      {"ridge", Kind::kNumber, 0, "the ridge lambda > 0 of (X^T X + lambda I)^-1",
       [](PolicySpec& s, double v, const std::string&) { s.params.ridge = v; },
       [](const PolicySpec& s) { return number_text(s.params.ridge); }},
  };
  static const KeyRule future_positions =
      int_field("n_future_positions", Kind::kCount, 0,
                "future positions of the average RoPE matrix applied to pre-RoPE query statistics, >= 0",
                &PolicyParams::n_future_positions);
  static const std::vector<KeyRule> expected = {
      int_field("n_sink", Kind::kCount, 0, "sink tokens (the first positions, never evicted), 0 <= n_sink < k",
                &PolicyParams::sinks),
      {"epsilon", Kind::kNumber, 0, "the epsilon >= 0 of (p + epsilon) * |v| (kvpress's default 0)",
       [](PolicySpec& s, double v, const std::string&) { s.params.expected_epsilon = v; },
       [](const PolicySpec& s) { return number_text(s.params.expected_epsilon); }},
      bool_field("use_covariance", "1: the covariance term of the expected logit, 0: the mean only",
                 &PolicyParams::use_covariance),
      bool_field("use_vnorm", "1: scores (p + epsilon) * |v|, 0: p", &PolicyParams::use_vnorm),
      future_positions,
  };
  static const std::vector<KeyRule> lagkv = {
      int_field("n_sink", Kind::kCount, 0, "sink tokens (the first positions, never evicted), 0 <= n_sink < k",
                &PolicyParams::sinks),
      int_field("lag_size", Kind::kCount, 2, "the partition length L >= 2", &PolicyParams::lag_size),
      bool_field("cross_scoring", "1: raw scores across partitions, 0: ranks within each", &PolicyParams::cross_scoring),
  };
  static const std::vector<KeyRule> cur = [] {
    KeyRule type{"leverage_type", Kind::kPooling, 0, "key, value, kv_avg or kv_product",
                 [](PolicySpec& s, double, const std::string& t) { s.params.cur_leverage = parse_cur_leverage(t); },
                 [](const PolicySpec& s) { return to_string(s.params.cur_leverage); }};
    type.choices = "key, value, kv_avg or kv_product";
    return std::vector<KeyRule>{
        int_field("n_sink", Kind::kCount, 0, "sink tokens (the first positions, never evicted), 0 <= n_sink < k",
                  &PolicyParams::sinks),
        type,
        bool_field("use_local_approximation", "1: normalize the norms in local windows, 0: not",
                   &PolicyParams::use_local_approximation),
        int_field("local_window_size", Kind::kCount, 1, "the local window w >= 1", &PolicyParams::local_window_size),
    };
  }();
  static const std::vector<KeyRule> cap = {
      int_field("n_sink", Kind::kCount, 0, "sink tokens (the first positions, never evicted), 0 <= n_sink < k",
                &PolicyParams::sinks),
      {"tau", Kind::kNumber, 0, "the temperature >= 0 of the key-query alignment weights",
       [](PolicySpec& s, double v, const std::string&) { s.params.tau = v; },
       [](const PolicySpec& s) { return number_text(s.params.tau); }},
      {"epsilon", Kind::kNumber, 0, "the epsilon >= 0 added to the weights in the capacity matrix",
       [](PolicySpec& s, double v, const std::string&) { s.params.cap_epsilon = v; },
       [](const PolicySpec& s) { return number_text(s.params.cap_epsilon); }},
      future_positions,
  };
  static const std::vector<KeyRule> compactor = {
      int_field("sink_size_start", Kind::kCount, 0, "the first tokens, never evicted (with sink_size_end <= k)",
                &PolicyParams::sink_size_start),
      int_field("sink_size_end", Kind::kCount, 0, "the most recent tokens, never evicted (with sink_size_start <= k)",
                &PolicyParams::sink_size_end),
      int_field("chunk_size", Kind::kCount, 1, "the chunk C >= 1 of the non-causal attention", &PolicyParams::chunk_size),
      {"blending", Kind::kNumber, 0, "the weight >= 0 of the leverage scores (default: the compression ratio of the tokens seen so far, 1 - k/P at prefill, 1 - k/(i + 1) at step i)",
       [](PolicySpec& s, double v, const std::string&) { s.params.blending = v; },
       [](const PolicySpec& s) {
         return s.params.blending < 0.0 ? std::string("compression_ratio") : number_text(s.params.blending);
       }},
      leverage.front(),
  };
  static const std::vector<KeyRule> non_causal = {
      int_field("chunk_size", Kind::kCount, 1, "the chunk C >= 1 of the non-causal attention", &PolicyParams::chunk_size),
  };
  static const std::vector<KeyRule> learned = {
      {"model", Kind::kPath, 0, "the model file (scripts/learn_policy.py; docs/learned_policy.md), required",
       [](PolicySpec& s, double, const std::string& t) {
         s.learned_model = std::make_shared<const policies::LearnedModel>(policies::LearnedModel::read(t));
         s.model_path = t;
       },
       [](const PolicySpec& s) { return s.model_path; }},
  };
  if (name == "learned") return learned;
  if (name == "cap") return cap;
  if (name == "non_causal_attention") return non_causal;
  if (name == "compactor") return compactor;
  if (name == "lagkv") return lagkv;
  if (name == "cur") return cur;
  if (name == "h2o" || name == "h2o-oracle") return split;
  if (name == "streaming_llm") return kvpress_streaming;
  if (name == "leverage") return leverage;
  if (name == "expected_attention") return expected;
  if (name == "streamingllm") return streaming;
  if (name == "sparse-strided") return strided;
  if (name == "sparse-fixed") return fixed;
  if (name == "snapkv") return snapkv;
  if (name == "h2o-noisy") return noisy;
  if (name == "l2norm") return l2norm;
  if (name == "lookahead") return lookahead;
  return none;
}

void require_known_name(std::string_view name, const std::string& source, const std::string& field) {
  const std::vector<std::string> names = spec_policy_names();
  if (std::find(names.begin(), names.end(), name) != names.end()) return;
  std::string accepted;
  for (const auto& n : names) accepted += (accepted.empty() ? "" : ", ") + n;
  throw InputError(source, field, "policy names (" + accepted + ")", std::string(name));
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

/// A spec as typed (split_spec_list) with its keys applied.
PolicySpec finish(const ListItem& p, const std::string& source, const std::string& field, int default_horizon) {
  require_known_name(p.name, source, field);
  PolicySpec spec;
  spec.name = p.name;
  spec.horizon = default_horizon;
  const std::vector<KeyRule>& rules = rules_of(p.name);
  const std::string where = field + ": " + p.name;
  SplitPart heavy, recent;
  for (const auto& [key, text] : p.keys) {
    const auto rule = std::find_if(rules.begin(), rules.end(), [&](const KeyRule& r) { return key == r.key; });
    if (rule == rules.end()) {
      std::string valid;
      for (const KeyRule& r : rules) valid += (valid.empty() ? "" : ", ") + std::string(r.key);
      throw InputError(source, where, rules.empty() ? p.name + " takes no parameters" : "one of its keys " + valid,
                       "unknown key '" + key + "'");
    }
    const std::string at = where + ": " + key;
    if (rule->kind == Kind::kPath) {
      if (text.empty()) throw InputError(source, at, "a file path", "an empty value");
      rule->apply(spec, 0.0, text);
      continue;
    }
    if (rule->kind == Kind::kPooling) {
      try {
        rule->apply(spec, 0.0, text);
      } catch (const InputError&) {
        throw InputError(source, at, rule->choices, text);
      }
      continue;
    }
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    const bool number = !text.empty() && end == text.c_str() + text.size() && std::isfinite(v) &&
                        text.find_first_not_of("0123456789.eE+-") == std::string::npos;
    const bool integer = number && v == std::floor(v) && v <= 1e9;
    switch (rule->kind) {
      case Kind::kShareOrCount: {
        if (!number || v < 0.0 || (v >= 1.0 && !integer)) {
          throw InputError(source, at, "a share of the budget in [0, 1) or an integer count >= 0", text);
        }
        SplitPart& part = key == std::string("heavy") ? heavy : recent;
        if (v > 0.0 && v < 1.0) {
          part.share = v;
        } else {
          part.count = int(v);
        }
        break;
      }
      case Kind::kCount:
        if (!integer || v < rule->minimum || v > rule->maximum) {
          throw InputError(source, at,
                           "an integer in [" + std::to_string(rule->minimum) + ", " + std::to_string(rule->maximum) + "]",
                           text);
        }
        rule->apply(spec, v, text);
        break;
      case Kind::kOddCount:
        if (!integer || v < 1 || std::fmod(v, 2.0) != 1.0) throw InputError(source, at, "an odd integer >= 1", text);
        rule->apply(spec, v, text);
        break;
      case Kind::kNumber:
        if (!number || v < 0.0) throw InputError(source, at, "a number >= 0", text);
        rule->apply(spec, v, text);
        break;
      case Kind::kPooling:
      case Kind::kPath:
        break;
    }
  }
  if (p.name == "learned" && !spec.learned_model) {
    throw InputError(source, where, "learned:model=FILE (a model file from scripts/learn_policy.py)", "no model");
  }
  // h2o's split: shares set heavy_ratio, counts set heavy/recent (the policy checks them against k).
  // snapkv's kernel acts only through a pooling: a kernel given without one would change nothing.
  if (p.name == "snapkv" && spec.params.pooling == Pooling::kNone &&
      std::any_of(p.keys.begin(), p.keys.end(), [](const auto& kv) { return kv.first == "kernel"; })) {
    throw InputError(source, where + ": kernel", "a kernel given with pooling=max or pooling=avg (none pools nothing)",
                     "kernel with pooling none");
  }
  if ((heavy.share && recent.count) || (heavy.count && recent.share)) {
    throw InputError(source, where + ": heavy, recent", "both shares of k or both counts",
                     "a share and a count");
  }
  if (heavy.share && recent.share && std::abs(*heavy.share + *recent.share - 1.0) > 1e-12) {
    throw InputError(source, where + ": heavy + recent",
                     "shares of the budget k that sum to 1 (they split the cache; H2O's 10% heavy + 10% "
                     "recent of the sequence is heavy=0.5,recent=0.5 with budget 0.2)",
                     number_text(*heavy.share) + " + " + number_text(*recent.share));
  }
  if (heavy.share) spec.params.heavy_ratio = *heavy.share;
  if (recent.share && !heavy.share) spec.params.heavy_ratio = 1.0 - *recent.share;
  if (heavy.count) spec.params.heavy = *heavy.count;
  if (recent.count) spec.params.recent = *recent.count;
  // The label lists the given keys in the policy's key order, values normalized.
  for (const KeyRule& r : rules) {
    for (const auto& [key, text] : p.keys) {
      if (key != r.key) continue;
      if (r.kind == Kind::kPooling || r.kind == Kind::kPath) {
        spec.given.emplace_back(key, text);
      } else {
        spec.given.emplace_back(key, number_text(std::strtod(text.c_str(), nullptr)));
      }
    }
  }
  return spec;
}

}  // namespace

std::string PolicySpec::label() const {
  std::string out = name;
  for (std::size_t i = 0; i < given.size(); ++i) {
    out += (i == 0 ? ":" : ",") + given[i].first + "=" + given[i].second;
  }
  return out;
}

std::vector<std::string> spec_policy_names() {
  std::vector<std::string> names = policy_names();
  names.push_back("lookahead");
  names.push_back("learned");
  return names;
}

std::vector<PolicyParameter> policy_parameters(std::string_view name) {
  require_known_name(name, "policy", "name");
  PolicySpec defaults;
  defaults.name = std::string(name);
  std::vector<PolicyParameter> out;
  const auto effective = effective_parameters(defaults);
  for (const KeyRule& r : rules_of(name)) {
    std::string value;
    for (const auto& [key, v] : effective)
      if (key == r.key) value = v;
    out.push_back({r.key, r.meaning, value});
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> effective_parameters(const PolicySpec& spec) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const KeyRule& r : rules_of(spec.name)) {
    if (r.kind != Kind::kShareOrCount) {
      out.emplace_back(r.key, r.show(spec));
      continue;
    }
    const PolicyParams& p = spec.params;
    const bool heavy_key = std::string(r.key) == "heavy";
    const int count = heavy_key ? p.heavy : p.recent;
    if (p.heavy >= 0 || p.recent >= 0) {
      out.emplace_back(r.key, count >= 0 ? int_text(count) : "rest");
    } else {
      // 15 digits: a share given as `recent` reads back through 1 - heavy_ratio without its last ulp.
      out.emplace_back(r.key, significant_digits(heavy_key ? p.heavy_ratio : 1.0 - p.heavy_ratio, 15));
    }
  }
  return out;
}

std::vector<ListItem> split_spec_list(std::string_view text, const std::string& source, const std::string& field,
                                      const ListWords& words) {
  std::vector<ListItem> items;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item = trim(text.substr(start, comma == std::string_view::npos ? text.npos : comma - start));
    const std::size_t colon = item.find(':');
    const std::string_view head = item.substr(0, colon);
    const std::string_view rest = colon == std::string_view::npos ? std::string_view() : item.substr(colon + 1);
    std::string_view pair = rest;
    if (item.empty()) {
      throw InputError(source, field, std::string("a comma list of ") + words.plural + " NAME[:KEY=VALUE,...]",
                       "an empty item in \"" + std::string(text) + "\"");
    }
    if (colon == std::string_view::npos && item.find('=') != std::string_view::npos) {
      if (items.empty() || !items.back().has_colon) {
        throw InputError(source, field,
                         std::string("KEY=VALUE after a ") + words.noun + " NAME: (e.g. " + words.example + ")",
                         std::string(item));
      }
      pair = item;
    } else {
      items.push_back({std::string(trim(head)), colon != std::string_view::npos, {}});
      if (colon == std::string_view::npos) pair = {};
      else if (trim(rest).empty()) {
        throw InputError(source, field, "KEY=VALUE after ':'", std::string(item));
      }
    }
    if (!pair.empty()) {
      const std::size_t eq = pair.find('=');
      if (eq == std::string_view::npos || trim(pair.substr(0, eq)).empty()) {
        throw InputError(source, field + ": " + items.back().name, "KEY=VALUE", std::string(pair));
      }
      const std::string key(trim(pair.substr(0, eq)));
      for (const auto& [k, v] : items.back().keys) {
        if (k == key) throw InputError(source, field + ": " + items.back().name, "each key once", key + " (given twice)");
      }
      items.back().keys.emplace_back(key, std::string(trim(pair.substr(eq + 1))));
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return items;
}

std::vector<PolicySpec> parse_policy_list(std::string_view text, const std::string& source,
                                          const std::string& field, int default_horizon) {
  const std::vector<ListItem> pending =
      split_spec_list(text, source, field, {"policy", "policies", "h2o:heavy=0.25,recent=0.75"});
  std::vector<PolicySpec> specs;
  for (const ListItem& p : pending) {
    PolicySpec spec = finish(p, source, field, default_horizon);
    for (const PolicySpec& s : specs) {
      if (s.label() == spec.label()) throw InputError(source, field, "each policy once", spec.label() + " (listed twice)");
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

PolicySpec parse_policy_spec(std::string_view text, const std::string& source, const std::string& field,
                             int default_horizon) {
  std::vector<PolicySpec> specs = parse_policy_list(text, source, field, default_horizon);
  if (specs.size() != 1) {
    throw InputError(source, field, "one policy NAME[:KEY=VALUE,...] per entry", std::string(text));
  }
  return std::move(specs.front());
}

std::unique_ptr<EvictionPolicy> make_policy(const PolicySpec& spec) {
  if (spec.name == "lookahead") return std::make_unique<LookaheadPolicy>(spec.horizon);
  if (spec.name == "learned") {
    if (!spec.learned_model) throw InputError("policy", "learned: model", "learned:model=FILE", "no model");
    return std::make_unique<policies::LearnedPolicy>(spec.learned_model);
  }
  return make_policy(spec.name, spec.params);
}

void check_policy_budget(const PolicySpec& spec, int tokens, int budget, const std::string& source,
                         const std::string& field) {
  WorkloadSpec stand_in;
  stand_in.shape = Shape{1, 1, 1, tokens, 8};
  stand_in.kind = GeneratorKind::kGaussian;
  const Workload w = generate_workload(stand_in, 1);
  const HeadGroup group = head_group(w, 0, 0);
  PolicyContext context;
  context.input = &group;
  context.tokens = tokens;
  context.budget = budget;
  try {
    make_policy(spec)->reset(context);
  } catch (const InputError& e) {
    throw InputError(source, field + " with budget k = " + std::to_string(budget) + " of n = " + std::to_string(tokens),
                     "a budget the policy accepts (" + std::string(e.what()) + ")", spec.label());
  }
}

}  // namespace subevict::greedy
