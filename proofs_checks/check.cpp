#include "proofs_checks/check.hpp"

#include <stdexcept>

namespace subevict::proofs_checks {

const char* outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::held: return "held";
    case Outcome::violated: return "violated";
    case Outcome::hypotheses_not_met: return "hypotheses not met";
    case Outcome::inconclusive: return "inconclusive";
  }
  throw std::invalid_argument("outcome_name: unknown Outcome value");
}

void conclude(CheckResult& result) {
  if (result.hypotheses_held < 0 || result.violations < 0 || result.violations > result.hypotheses_held ||
      result.hypotheses_held > result.instances) {
    throw std::invalid_argument("conclude: expected 0 <= violations <= hypotheses_held <= instances");
  }
  if (result.violations > 0) {
    result.outcome = Outcome::violated;
  } else if (result.hypotheses_held > 0) {
    result.outcome = Outcome::held;
  } else {
    result.outcome = Outcome::hypotheses_not_met;
  }
  result.violation_rate = result.hypotheses_held > 0
                              ? clopper_pearson(result.violations, result.hypotheses_held)
                              : Interval{0.0, 1.0};
}

}  // namespace subevict::proofs_checks
