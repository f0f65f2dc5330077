#include "cli/json_output.hpp"

#include <filesystem>

#include "core/atomic_file.hpp"
#include "core/input_error.hpp"

namespace subevict::cli {

nlohmann::json to_json(const Shape& s) {
  return {{"layers", s.layers},     {"q_heads", s.q_heads},   {"kv_heads", s.kv_heads},
          {"tokens", s.tokens},     {"head_dim", s.head_dim}, {"attention", s.attention_kind()}};
}

nlohmann::json to_json(const HeadStatistics& h) {
  nlohmann::json doc = {{"layer", h.layer}, {"q_head", h.q_head}, {"kv_head", h.kv_head}, {"window", h.window}};
  for_each_statistic([&](const char* name, double HeadStatistics::*field) { doc[name] = h.*field; });
  return doc;
}

void write_json(const std::string& path, const nlohmann::json& doc) {
  const std::string text = doc.dump(2) + "\n";
  const std::span<const std::byte> bytes = std::as_bytes(std::span(text));
  write_file_atomically(path, std::span(&bytes, 1));
}

void require_output_directory(const std::string& path, const std::string& option) {
  if (path.empty()) return;
  const std::filesystem::path parent = std::filesystem::absolute(path).parent_path();
  std::error_code error;
  if (!std::filesystem::is_directory(parent, error)) {
    throw InputError(path, option, "a path in an existing directory", "no directory " + parent.string());
  }
}

}  // namespace subevict::cli
