#pragma once
/// \file
/// Numbers as text with a chosen number of significant digits: the one formatter behind error
/// messages, metadata, job ids and tables. 17 digits round-trip every double exactly.

#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace subevict {

/// `value` as printf "%.<digits>g" (e.g. 10 for messages and tables, 17 for a lossless
/// round trip); non-finite values as printf writes them ("inf", "-inf", "nan" or "-nan").
/// Precondition: 1 <= digits <= 17.
inline std::string significant_digits(double value, int digits) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
  return buffer;
}

/// `text` as a double when all of it is one finite decimal number (std::from_chars: no leading
/// white space, no '+'), else nullopt. The reader of metadata and CSV fields.
inline std::optional<double> finite_number(std::string_view text) {
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

/// `text` as an integer of type T when all of it is one decimal integer within T's range
/// (std::from_chars: no white space, no '+'), else nullopt. The reader of integer fields and
/// options, so that a value out of range is named as any other bad value.
template <class T = long long>
std::optional<T> whole_number(std::string_view text) {
  T value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace subevict
