#pragma once
/// \file
/// The one way numbers are written in key numbers, report.md and the stdout table, so that every
/// number a reader sees can be found again in results.json by formatting its value the same way.

#include <string>

namespace subevict::proofs_checks {

/// `value` with 6 significant digits (printf "%.6g"); "inf", "-inf" and "nan" for non-finite
/// values. O(1).
std::string format_number(double value);

}  // namespace subevict::proofs_checks
