#pragma once
/// \file
/// The counts of a `verify` run by kind and outcome (check.hpp: Kind), kept apart so that a
/// measurement is never counted as a claim that held: one tally feeds the last line of the printed
/// table, the summary of report.md, "summary" in results.json and `--fail-on-violation`.

#include <string>
#include <vector>

#include "proofs_checks/runner.hpp"

namespace subevict::proofs_checks {

/// How many checks of each kind ended in each outcome. Disjoint counts: every run is in exactly
/// one of the ten outcome counters; `errors` counts again, among them, those that stopped with
/// an error (they are inconclusive).
struct RunSummary {
  int claims_held = 0, claims_violated = 0, claims_hypotheses_not_met = 0, claims_inconclusive = 0;
  int claims_vacuous = 0;  ///< held on every instance, none of which could have failed
  int measured = 0, measurements_inconclusive = 0;
  /// confirmed: printed form failed and corrected form held; violated: the corrected form failed;
  /// not_confirmed: the printed form was not shown to fail or the corrected form was not tested.
  int errata_confirmed = 0, errata_violated = 0, errata_not_confirmed = 0;
  int errors = 0;

  int claims() const {
    return claims_held + claims_violated + claims_vacuous + claims_hypotheses_not_met + claims_inconclusive;
  }
  int measurements() const { return measured + measurements_inconclusive; }
  int errata() const { return errata_confirmed + errata_violated + errata_not_confirmed; }
  /// What `--fail-on-violation` fails on: violated claims plus errata whose corrected form failed.
  /// A measurement never counts.
  int failures() const { return claims_violated + errata_violated; }
};

/// Tallies `runs` by kind and outcome. Throws std::logic_error (require_consistent) for a run
/// whose outcome its kind does not allow, e.g. a measurement reported as held. O(runs).
RunSummary summarize(const std::vector<CheckRun>& runs);

/// One line, e.g. "20 claims: 17 held, 1 violated, 1 hypotheses not met; 4 measurements;
/// 4 errata confirmed". Vacuous and inconclusive claims, inconclusive measurements, errata whose
/// correction was violated and errata not confirmed are added only when there are any.
std::string summary_line(const RunSummary& summary);

}  // namespace subevict::proofs_checks
