#pragma once
/// \file
/// Numbers as text with a chosen number of significant digits: the one formatter behind error
/// messages, metadata, job ids and tables. 17 digits round-trip every double exactly.

#include <cstdio>
#include <string>

namespace subevict {

/// `value` as printf "%.<digits>g" (e.g. 10 for messages and tables, 17 for a lossless
/// round trip); non-finite values as printf writes them ("inf", "-inf", "nan" or "-nan").
/// Precondition: 1 <= digits <= 17.
inline std::string significant_digits(double value, int digits) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
  return buffer;
}

}  // namespace subevict
