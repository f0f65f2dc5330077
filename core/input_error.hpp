#pragma once
/// \file
/// The one exception type for bad input (files, command-line values, configurations).

#include <cstdio>
#include <stdexcept>
#include <string>

namespace subevict {

/// Bad input. what() reads "SOURCE: FIELD: expected EXPECTATION, got ACTUAL" (the last part only
/// when something concrete was found), so the CLI can print it as one line. ACTUAL usually quotes
/// bytes from the input, so control characters and non-ASCII bytes in it are written as \xNN: the
/// message stays one printable line whatever the file held.
class InputError : public std::runtime_error {
 public:
  InputError(const std::string& source, const std::string& field, const std::string& expected,
             const std::string& actual = "")
      : std::runtime_error(source + ": " + field + ": expected " + expected +
                           (actual.empty() ? "" : ", got " + printable(actual))) {}

  /// `text` with every byte outside printable ASCII (0x20..0x7e) replaced by \xNN.
  static std::string printable(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (unsigned char c : text) {
      if (c >= 0x20 && c < 0x7f) {
        out += char(c);
      } else {
        char hex[5];
        std::snprintf(hex, sizeof hex, "\\x%02x", c);
        out += hex;
      }
    }
    return out;
  }
};

}  // namespace subevict
