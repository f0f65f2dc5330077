#pragma once
/// \file
/// The validator of options that count something (seeds, evaluations): a whole number >= 1, the
/// message naming the value typed, as every other bad value is named.

#include <CLI/CLI.hpp>

#include <climits>
#include <optional>
#include <string>

#include "core/number_text.hpp"

namespace subevict::cli {

/// Accepts a decimal integer in [1, INT_MAX]; anything else (0, negative, text, out of the int
/// range) fails with "expected an integer in [1, 2147483647], got TEXT". main() turns the failure
/// into one error line and exit 2.
inline CLI::Validator count_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::optional<int> value = whole_number<int>(text);
        if (value && *value >= 1) return {};
        return "expected an integer in [1, " + std::to_string(INT_MAX) + "], got " + text;
      },
      "INT>=1");
}

}  // namespace subevict::cli
