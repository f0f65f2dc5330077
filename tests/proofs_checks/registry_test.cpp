// Tests proofs_checks/registry.hpp: ids are unique and well formed, every check describes itself
// fully for its kind, and every registered check runs at small effort and yields a result without
// NaN whose outcome its kind allows (no measurement "held").
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "core/generator.hpp"
#include "proofs_checks/registry.hpp"
#include "proofs_checks/runner.hpp"

namespace subevict::proofs_checks {
namespace {

TEST(Registry, IdsAreUniqueAndInfoIsComplete) {
  const auto checks = all_checks();
  ASSERT_FALSE(checks.empty());
  std::set<std::string> ids;
  const std::regex id_form("[a-z0-9_]+(\\.[a-z0-9_]+)+");
  for (const auto& c : checks) {
    const CheckInfo i = c->info();
    EXPECT_TRUE(ids.insert(i.id).second) << "duplicate id " << i.id;
    EXPECT_TRUE(std::regex_match(i.id, id_form)) << i.id;
    EXPECT_FALSE(i.reference.empty()) << i.id;
    EXPECT_FALSE(i.statement.empty()) << i.id;
    if (i.kind != Kind::measurement) {  // a claim or an erratum states what could fail
      EXPECT_FALSE(i.hypotheses.empty()) << i.id;
      EXPECT_FALSE(i.conclusion.empty()) << i.id;
    }
    EXPECT_FALSE(i.families.empty()) << i.id;
    EXPECT_TRUE(std::filesystem::exists(std::string(SUBEVICT_SOURCE_DIR) + "/" + i.source)) << i.id << ": " << i.source;
  }
}

TEST(Registry, FindCheckReturnsTheCheckOrNull) {
  for (const auto& c : all_checks()) {
    const auto found = find_check(c->info().id);
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(found->info().id, c->info().id);
  }
  EXPECT_EQ(find_check("no.such_check"), nullptr);
}

TEST(Registry, EveryKindIsRegisteredAndTheRequiredMeasurementsAreMeasurements) {
  std::map<std::string, Kind> kinds;
  for (const auto& c : all_checks()) kinds[c->info().id] = c->info().kind;
  // Lemma D.19's run makes its errors within the bound and evicts by the perturbed argmax itself:
  // the conclusion follows in one line. Theorem D.49's measured start constant is fitted.
  // Lemma D.48's bound sits e-folds above any ratio the Hessian can reach: its looseness is measured.
  for (const char* id : {"h2o.universal_conditions", "h2o.def41_submodularity", "h2o.lemma_d19",
                         "h2o.theorem_d49_measured_m", "h2o.lemma_d48"}) {
    ASSERT_TRUE(kinds.count(id)) << id;
    EXPECT_EQ(kinds[id], Kind::measurement) << id;
  }
  for (const auto& [id, kind] : kinds) {
    if (id.find(".erratum_") != std::string::npos) EXPECT_EQ(kind, Kind::erratum) << id;
  }
  EXPECT_EQ(kinds.count("h2o.erratum_d29_stray_term"), 0u);  // the printed form is weaker but true
  EXPECT_EQ(kinds["h2o.lemma_d29"], Kind::claim);
  EXPECT_EQ(kinds["h2o.theorem_d49"], Kind::claim);
}

TEST(Registry, EveryCheckYieldsAResultWithoutNaN) {
  const Workload w = generate_workload(spec_from_preset("llama2-7b", 256, 1, 7));
  CheckContext context;
  context.workload = &w;
  context.seed = 7;
  context.effort = 0.1;
  const auto checks = all_checks();
  std::vector<const Check*> pointers;
  for (const auto& c : checks) pointers.push_back(c.get());
  for (const CheckRun& run : run_checks(pointers, context)) {
    EXPECT_TRUE(run.error.empty()) << run.info.id << ": " << run.error;
    EXPECT_NE(run.result.outcome, Outcome::inconclusive) << run.info.id;
    EXPECT_TRUE(outcome_allowed(run.info.kind, run.result.outcome)) << run.info.id;
    if (run.info.kind == Kind::measurement) {
      EXPECT_EQ(run.result.outcome, Outcome::measured) << run.info.id;  // never held
      EXPECT_FALSE(run.result.measurements.empty()) << run.info.id;
    } else {
      EXPECT_NE(run.result.outcome, Outcome::measured) << run.info.id;
    }
    EXPECT_FALSE(run.result.key_number.empty()) << run.info.id;
    EXPECT_LE(run.result.violations, run.result.hypotheses_held) << run.info.id;
    EXPECT_FALSE(std::isnan(run.result.worst_slack)) << run.info.id;
    std::set<std::string> names;
    for (const Measurement& m : run.result.measurements) {
      EXPECT_FALSE(std::isnan(m.value)) << run.info.id << "." << m.name;
      EXPECT_TRUE(names.insert(m.name).second) << run.info.id << ": duplicate measurement " << m.name;
    }
    if (run.result.outcome == Outcome::violated) {
      EXPECT_TRUE(run.result.counterexample.has_value()) << run.info.id;
    }
  }
}

}  // namespace
}  // namespace subevict::proofs_checks
