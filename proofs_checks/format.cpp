#include "proofs_checks/format.hpp"

#include <cmath>

#include "core/number_text.hpp"

namespace subevict::proofs_checks {

std::string format_number(double value) {
  if (std::isnan(value)) return "nan";  // printf may write "-nan"
  return significant_digits(value, 6);
}

}  // namespace subevict::proofs_checks
