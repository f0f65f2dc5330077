#pragma once
/// \file
/// Running a list of checks: each is timed, and a check that throws, or reports an outcome its
/// Kind does not allow (require_consistent: e.g. a measurement reporting "held"), is recorded as an
/// error (outcome inconclusive) instead of stopping the run.

#include <functional>
#include <string>
#include <vector>

#include "proofs_checks/check.hpp"

namespace subevict::proofs_checks {

/// One check's run: its description, its result and its wall-clock time.
struct CheckRun {
  CheckInfo info;
  CheckResult result;
  double seconds = 0;
  /// The exception's message when the check threw or its result was inconsistent with its kind
  /// (then result.outcome is inconclusive and the check's result is discarded); empty otherwise.
  std::string error;
};

/// Runs `checks` in order with `context`, calling `on_done` (when set) after each. Never throws
/// for a failing check; rethrows nothing. O(sum of the checks' costs).
std::vector<CheckRun> run_checks(const std::vector<const Check*>& checks, const CheckContext& context,
                                 const std::function<void(const CheckRun&)>& on_done = {});

}  // namespace subevict::proofs_checks
