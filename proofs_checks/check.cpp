#include "proofs_checks/check.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace subevict::proofs_checks {

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::claim: return "claim";
    case Kind::measurement: return "measurement";
    case Kind::erratum: return "erratum";
  }
  throw std::invalid_argument("kind_name: unknown Kind value");
}

const char* outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::held: return "held";
    case Outcome::violated: return "violated";
    case Outcome::hypotheses_not_met: return "hypotheses not met";
    case Outcome::inconclusive: return "inconclusive";
    case Outcome::measured: return "measured";
    case Outcome::vacuous: return "vacuous";
  }
  throw std::invalid_argument("outcome_name: unknown Outcome value");
}

bool outcome_allowed(Kind kind, Outcome outcome) {
  if (kind == Kind::measurement) return outcome == Outcome::measured || outcome == Outcome::inconclusive;
  if (kind == Kind::erratum) return outcome != Outcome::measured && outcome != Outcome::vacuous;
  return outcome != Outcome::measured;
}

const char* status_name(Kind kind, Outcome outcome) {
  if (!outcome_allowed(kind, outcome)) {
    throw std::invalid_argument(std::string("status_name: a check of kind ") + kind_name(kind) + " cannot be \"" +
                                outcome_name(outcome) + "\"");
  }
  return kind == Kind::erratum && outcome == Outcome::held ? "confirmed" : outcome_name(outcome);
}

double measurement_value(const CheckResult& result, const std::string& name) {
  for (const Measurement& m : result.measurements) {
    if (m.name == name) return m.value;
  }
  throw std::out_of_range("measurement_value: no measurement named \"" + name + "\"");
}

void conclude(CheckResult& result) {
  const long long can_fail = result.hypotheses_held - result.vacuous;
  if (result.hypotheses_held < 0 || result.violations < 0 || result.vacuous < 0 || result.violations > can_fail ||
      result.hypotheses_held > result.instances) {
    throw std::invalid_argument(
        "conclude: expected 0 <= violations <= hypotheses_held - vacuous, vacuous >= 0, hypotheses_held <= instances");
  }
  if (result.violations > 0) {
    result.outcome = Outcome::violated;
  } else if (can_fail > 0) {
    result.outcome = Outcome::held;
  } else if (result.vacuous > 0) {
    result.outcome = Outcome::vacuous;
  } else {
    result.outcome = Outcome::hypotheses_not_met;
  }
  result.violation_rate = can_fail > 0 ? clopper_pearson(result.violations, can_fail) : Interval{0.0, 1.0};
}

namespace {

/// Why a measurement's result carries a claim's verdict; empty when it does not.
std::string claim_verdict_in(const CheckResult& result) {
  if (result.hypotheses_held != 0 || result.violations != 0 || result.vacuous != 0) {
    return "hypotheses_held = " + std::to_string(result.hypotheses_held) + ", violations = " +
           std::to_string(result.violations) + " and vacuous = " + std::to_string(result.vacuous) + " (expected 0)";
  }
  if (result.counterexample) return "a counterexample";
  return "";
}

}  // namespace

void conclude_measurement(CheckResult& result) {
  const std::string verdict = claim_verdict_in(result);
  if (!verdict.empty()) throw std::logic_error("conclude_measurement: a measurement carries " + verdict);
  result.outcome = result.instances > 0 ? Outcome::measured : Outcome::inconclusive;
  result.violation_rate = Interval{0.0, 1.0};
}

CheckResult verdict_as_measurement(CheckResult result) {
  result.measurements.push_back({"instances_with_hypotheses", double(result.hypotheses_held),
                                 "instances on which the statement's hypotheses held"});
  result.measurements.push_back({"conclusion_failures", double(result.violations),
                                 "of those, instances where the conclusion failed"});
  if (std::isfinite(result.worst_slack)) {
    result.measurements.push_back({"worst_slack", result.worst_slack, "smallest conclusion lhs - rhs"});
  }
  if (result.counterexample) {
    result.notes += (result.notes.empty() ? "" : " ") + std::string("The conclusion failed on: ") +
                    result.counterexample->description + ".";
  }
  clear_verdict(result);
  conclude_measurement(result);
  return result;
}

void clear_verdict(CheckResult& result) {
  result.hypotheses_held = result.violations = result.vacuous = 0;
  result.worst_slack = std::numeric_limits<double>::infinity();
  result.counterexample.reset();
}

void require_consistent(const CheckInfo& info, const CheckResult& result) {
  if (!outcome_allowed(info.kind, result.outcome)) {
    throw std::logic_error("check " + info.id + " is a " + kind_name(info.kind) + " but reported \"" +
                           outcome_name(result.outcome) + "\"" +
                           (info.kind == Kind::measurement ? ": a measurement reports numbers, never a verdict"
                                                           : ": only a measurement is \"measured\""));
  }
  if (info.kind == Kind::measurement) {
    const std::string verdict = claim_verdict_in(result);
    if (!verdict.empty()) throw std::logic_error("check " + info.id + " is a measurement but its result carries " + verdict);
  }
}

std::vector<int> checked_layers(const CheckContext& context) {
  if (!context.layers.empty() || context.workload == nullptr) return context.layers;
  std::vector<int> all(std::size_t(context.workload->shape().layers));
  for (std::size_t l = 0; l < all.size(); ++l) all[l] = int(l);
  return all;
}

}  // namespace subevict::proofs_checks
