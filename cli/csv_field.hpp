#pragma once
/// \file
/// One CSV field as the CLI's CSV outputs write it.

#include <string>

namespace subevict::cli {

/// `text` as a CSV field: quoted (RFC 4180, a quote doubled) when it holds a comma or a quote, as
/// a policy or rule label may; as is otherwise.
inline std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace subevict::cli
