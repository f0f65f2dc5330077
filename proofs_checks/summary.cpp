#include "proofs_checks/summary.hpp"

#include <string>

namespace subevict::proofs_checks {
namespace {

/// "1 claim", "2 claims".
std::string counted(int n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

RunSummary summarize(const std::vector<CheckRun>& runs) {
  RunSummary s;
  for (const CheckRun& run : runs) {
    require_consistent(run.info, run.result);
    s.errors += run.error.empty() ? 0 : 1;
    const Outcome o = run.result.outcome;
    switch (run.info.kind) {
      case Kind::claim:
        if (o == Outcome::held) ++s.claims_held;
        else if (o == Outcome::violated) ++s.claims_violated;
        else if (o == Outcome::vacuous) ++s.claims_vacuous;
        else if (o == Outcome::hypotheses_not_met) ++s.claims_hypotheses_not_met;
        else ++s.claims_inconclusive;
        break;
      case Kind::measurement:
        if (o == Outcome::measured) ++s.measured;
        else ++s.measurements_inconclusive;
        break;
      case Kind::erratum:
        if (o == Outcome::held) ++s.errata_confirmed;
        else if (o == Outcome::violated) ++s.errata_violated;
        else ++s.errata_not_confirmed;
        break;
    }
  }
  return s;
}

std::string summary_line(const RunSummary& s) {
  std::string line = counted(s.claims(), "claim", "claims") + ": " + std::to_string(s.claims_held) + " held, " +
                     std::to_string(s.claims_violated) + " violated, " + std::to_string(s.claims_hypotheses_not_met) +
                     " hypotheses not met";
  if (s.claims_vacuous > 0) line += ", " + std::to_string(s.claims_vacuous) + " vacuous";
  if (s.claims_inconclusive > 0) line += ", " + std::to_string(s.claims_inconclusive) + " inconclusive";
  line += "; " + counted(s.measurements(), "measurement", "measurements");
  if (s.measurements_inconclusive > 0) line += " (" + std::to_string(s.measurements_inconclusive) + " inconclusive)";
  line += "; " + counted(s.errata_confirmed, "erratum", "errata") + " confirmed";
  if (s.errata_violated > 0) {
    line += ", " + counted(s.errata_violated, "erratum", "errata") + " with the corrected form violated";
  }
  if (s.errata_not_confirmed > 0) line += ", " + counted(s.errata_not_confirmed, "erratum", "errata") + " not confirmed";
  return line;
}

}  // namespace subevict::proofs_checks
