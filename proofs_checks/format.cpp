#include "proofs_checks/format.hpp"

#include <cmath>
#include <cstdio>

namespace subevict::proofs_checks {

std::string format_number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

}  // namespace subevict::proofs_checks
