#include "core/generator_profile.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <limits>
#include <optional>
#include <cmath>
#include <fstream>
#include <span>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "core/atomic_file.hpp"
#include "core/input_error.hpp"
#include "core/number_text.hpp"

namespace subevict {
namespace {

constexpr const char* kFormat = "subevict.profile.v1";

/// Reads one TOML table strictly: every key must be known; values are converted with the key
/// named as `where` + key in errors.
class TableReader {
 public:
  TableReader(const toml::table& table, std::string source, std::string where)
      : table_(table), source_(std::move(source)), where_(std::move(where)) {}

  /// Throws unless every key of the table is in `known` (a comma-separated list for the message).
  template <class IsKnown>
  void require_known_keys(IsKnown is_known, const std::string& known) const {
    for (const auto& [key, node] : table_) {
      if (!is_known(std::string(key.str()))) {
        throw InputError(source_, where_ + "unknown key '" + std::string(key.str()) + "'", "one of " + known);
      }
    }
  }

  /// The value of `key` converted to T (an integer or a finite double), or nullptr if absent.
  template <class T>
  bool read(const std::string& key, T& out) const {
    const toml::node* node = table_.get(key);
    if (!node) return false;
    if constexpr (std::is_integral_v<T>) {
      const std::optional<std::int64_t> v = node->is_integer() ? node->value<std::int64_t>() : std::nullopt;
      if (!v || *v < std::numeric_limits<T>::min() || *v > std::numeric_limits<T>::max()) {
        throw InputError(source_, where_ + key,
                         "an integer in [" + std::to_string(std::numeric_limits<T>::min()) + ", " +
                             std::to_string(std::numeric_limits<T>::max()) + "]",
                         describe(*node));
      }
      out = T(*v);
    } else {
      const std::optional<double> v =
          node->is_integer() || node->is_floating_point() ? node->value<double>() : std::nullopt;
      if (!v || !std::isfinite(*v)) throw InputError(source_, where_ + key, "a finite number", describe(*node));
      out = *v;
    }
    return true;
  }

  /// Like read, but throws if the key is absent.
  template <class T>
  T required(const std::string& key) const {
    T out{};
    if (!read(key, out)) throw InputError(source_, where_ + key, "a value (the key is required)");
    return out;
  }

 private:
  static std::string describe(const toml::node& node) {
    std::ostringstream text;
    node.visit([&text](const auto& value) { text << value; });
    return text.str();
  }

  const toml::table& table_;
  std::string source_, where_;
};

/// Throws InputError(source, `where` + the field, its range) unless `params` pass
/// LlmLikeParams::validate.
void validate_params(const LlmLikeParams& params, const std::string& source, const std::string& where) {
  try {
    params.validate();
  } catch (const InputError& e) {
    throw InputError(source, where, std::string("valid parameters (") + e.what() + ")");
  }
}

/// Sets every LlmLikeParams field that `table` names; rejects unknown keys.
void read_params(const TableReader& table, LlmLikeParams& params) {
  std::string known;
  for_each_llm_param(params, [&known](const char* name, const auto&, const char*) {
    known += (known.empty() ? "" : ", ") + std::string(name);
  });
  table.require_known_keys([&](const std::string& key) { return (", " + known + ",").find(", " + key + ",") != std::string::npos; }, known);
  for_each_llm_param(params, [&table](const char* name, auto& field, const char*) { table.read(name, field); });
}

const toml::table& subtable(const toml::table& root, const std::string& key, const std::string& source) {
  const toml::node* node = root.get(key);
  if (!node) throw InputError(source, "[" + key + "]", "a table (the table is required)");
  if (!node->is_table()) throw InputError(source, "[" + key + "]", "a table");
  return *node->as_table();
}

/// Shortest text that reads back as exactly `value`: integers as TOML integers, doubles always
/// with a '.' or an exponent (so they stay TOML floats).
template <class T>
std::string number_text(T value) {
  char buffer[64];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  std::string text(buffer, end);
  if (std::is_floating_point_v<T> && text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

/// A TOML basic string.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20 || c == 0x7f) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", c);
      out += escape;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

/// Throws InputError(source, ...) unless the profile can be generated from.
void validate_profile(const GeneratorProfile& profile, const std::string& source) {
  try {
    (void)spec_from_profile(profile, 1, 0, 0);
  } catch (const InputError& e) {
    throw InputError(source, "profile", std::string("a valid profile (") + e.what() + ")");
  }
}

}  // namespace

GeneratorProfile read_profile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "profile", "a readable TOML file");
  std::ostringstream text;
  text << in.rdbuf();
  toml::table root;
  try {
    root = toml::parse(text.str(), path);
  } catch (const toml::parse_error& e) {
    throw InputError(path, "TOML at line " + std::to_string(e.source().begin.line), "valid TOML",
                     std::string(e.description()));
  }
  const TableReader top(root, path, "");
  top.require_known_keys([](const std::string& k) { return k == "format" || k == "name" || k == "shape" || k == "defaults" || k == "layers"; },
                         "format, name, shape, defaults, layers");
  const toml::node* format = root.get("format");
  if (!format || format->value<std::string>() != kFormat) {
    throw InputError(path, "format", std::string("\"") + kFormat + "\"",
                     format ? format->value_or(std::string("a non-string value")) : "no format key");
  }
  GeneratorProfile profile;
  if (const toml::node* name = root.get("name")) {
    if (!name->is_string()) throw InputError(path, "name", "a string");
    profile.name = *name->value<std::string>();
  }

  const TableReader shape(subtable(root, "shape", path), path, "[shape] ");
  shape.require_known_keys([](const std::string& k) { return k == "layers" || k == "q_heads" || k == "kv_heads" || k == "head_dim" || k == "score_scale"; },
                           "layers, q_heads, kv_heads, head_dim, score_scale");
  profile.shape = {shape.required<int>("layers"), shape.required<int>("q_heads"), shape.required<int>("kv_heads"), 1,
                   shape.required<int>("head_dim")};
  try {
    profile.shape.validate();
  } catch (const std::invalid_argument& e) {
    throw InputError(path, "[shape]", std::string("a valid geometry (") + e.what() + ")");
  }
  if (shape.read("score_scale", profile.score_scale) && !(profile.score_scale >= kLlmMinMagnitude)) {
    throw InputError(path, "[shape] score_scale", "a number >= " + significant_digits(kLlmMinMagnitude, 10),
                     significant_digits(profile.score_scale, 17));
  }

  LlmLikeParams defaults;
  if (root.get("defaults")) {
    read_params(TableReader(subtable(root, "defaults", path), path, "[defaults] "), defaults);
    validate_params(defaults, path, "[defaults]");
  }

  const toml::node* layers = root.get("layers");
  const toml::array* list = layers ? layers->as_array() : nullptr;
  if (!list || !list->is_array_of_tables()) throw InputError(path, "[[layers]]", "an array of tables, one per layer");
  if (list->size() != std::size_t(profile.shape.layers)) {
    throw InputError(path, "[[layers]]", std::to_string(profile.shape.layers) + " tables ([shape] layers)",
                     std::to_string(list->size()));
  }
  for (std::size_t l = 0; l < list->size(); ++l) {
    profile.layers.push_back(defaults);
    const std::string where = "[[layers]] #" + std::to_string(l);
    read_params(TableReader(*(*list)[l].as_table(), path, where + " "), profile.layers.back());
    validate_params(profile.layers.back(), path, where);
  }
  validate_profile(profile, path);
  return profile;
}

void write_profile(const std::string& path, const GeneratorProfile& profile) {
  validate_profile(profile, path);
  std::ostringstream out;
  const Shape& s = profile.shape;
  out << "format = " << quoted(kFormat) << "\n";
  if (!profile.name.empty()) out << "name = " << quoted(profile.name) << "\n";
  out << "\n[shape]\nlayers = " << s.layers << "\nq_heads = " << s.q_heads << "\nkv_heads = " << s.kv_heads
      << "\nhead_dim = " << s.head_dim << "\n";
  if (profile.score_scale > 0) out << "score_scale = " << number_text(profile.score_scale) << "\n";

  // A parameter goes under [defaults] iff every layer has the same value.
  std::vector<bool> uniform;
  for (const auto& [name, values] : llm_param_columns(profile.layers)) {
    uniform.push_back(std::adjacent_find(values.begin(), values.end(), std::not_equal_to<>()) == values.end());
  }
  auto write_fields = [&out, &uniform](const LlmLikeParams& p, bool shared) {
    std::size_t f = 0;
    for_each_llm_param(p, [&](const char* name, const auto& value, const char*) {
      if (uniform[f++] == shared) out << name << " = " << number_text(value) << "\n";
    });
  };
  out << "\n[defaults]\n";
  write_fields(profile.layers[0], true);
  for (std::size_t l = 0; l < profile.layers.size(); ++l) {
    out << "\n[[layers]]  # " << l << "\n";
    write_fields(profile.layers[l], false);
  }
  const std::string text = out.str();
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(text.data()), text.size());
  write_file_atomically(path, std::span<const std::span<const std::byte>>(&bytes, 1));
}

WorkloadSpec spec_from_profile(const GeneratorProfile& profile, int tokens, int layers, std::uint64_t seed) {
  if (tokens < 1) throw InputError("workload spec", "tokens", "a count >= 1", std::to_string(tokens));
  if (layers < 0 || layers > profile.shape.layers) {
    throw InputError("workload spec", "layers",
                     "a count in [0, " + std::to_string(profile.shape.layers) + "] (0: all of the profile's)",
                     std::to_string(layers));
  }
  if (profile.layers.size() != std::size_t(profile.shape.layers)) {
    throw InputError("profile", "layers", "one parameter set per layer (" + std::to_string(profile.shape.layers) + ")",
                     std::to_string(profile.layers.size()));
  }
  WorkloadSpec spec;
  spec.shape = profile.shape;
  spec.shape.tokens = tokens;
  spec.shape.layers = layers > 0 ? layers : profile.shape.layers;
  spec.kind = GeneratorKind::kLlmLike;
  spec.layer_params.assign(profile.layers.begin(), profile.layers.begin() + spec.shape.layers);
  spec.seed = seed;
  spec.score_scale = profile.score_scale;
  spec.profile = profile.name;
  validate_spec(spec);
  return spec;
}

}  // namespace subevict
