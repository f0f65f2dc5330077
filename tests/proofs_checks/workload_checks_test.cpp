// Tests the workload-structure checks (proofs_checks/workload_structure.hpp): an LLM-like
// workload shows the structures the papers report; an i.i.d. Gaussian one (no structure) does not.
#include <gtest/gtest.h>

#include <set>

#include "dynamic_instances.hpp"
#include "proofs_checks/workload_checks.hpp"
#include "proofs_checks/workload_structure.hpp"

namespace subevict::proofs_checks {
namespace {

const Workload& structured() {
  static const Workload w = testing::llm_workload(1024);
  return w;
}

const Workload& unstructured() {
  static const Workload w = testing::gaussian_workload(1024);
  return w;
}

TEST(Sec3Sparsity, HeldOnLlmLikeWorkload) {
  const CheckResult r = check_sec3_sparsity(structured());
  EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
  EXPECT_EQ(r.instances, 3);
}

TEST(Sec3Sparsity, ViolatedOnGaussianWorkload) {
  EXPECT_EQ(check_sec3_sparsity(unstructured()).outcome, Outcome::violated);
}

TEST(Sec3PowerLaw, HeldOnLlmLikeWorkload) {
  const CheckResult r = check_sec3_power_law(structured());
  EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
}

TEST(Sec3PowerLaw, ViolatedOnGaussianWorkload) {
  EXPECT_EQ(check_sec3_power_law(unstructured()).outcome, Outcome::violated);
}

TEST(L2normCorrelation, NegativeOnLlmLikeWorkloadExcludingTheFirstTwoLayers) {
  const CheckResult r = check_l2norm_correlation(structured());
  EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
  EXPECT_EQ(r.instances, 1);  // layer 2 only
}

TEST(L2normCorrelation, NotNegativeOnGaussianWorkload) {
  EXPECT_EQ(check_l2norm_correlation(unstructured()).outcome, Outcome::violated);
}

TEST(L2normCorrelation, UsesEveryLayerWhenNoneRemains) {
  WorkloadSpec spec;
  spec.shape = Shape{1, 2, 2, 128, 64};
  spec.seed = 2;
  const CheckResult r = check_l2norm_correlation(generate_workload(spec, 1));
  EXPECT_EQ(r.instances, 1);
  EXPECT_NE(r.notes.find("all layers are used"), std::string::npos);
}

TEST(WorkloadChecks, RegisteredIdsAndTheyRun) {
  CheckContext context;
  context.workload = &structured();
  std::set<std::string> ids;
  for (const auto& check : workload_checks()) {
    ids.insert(check->info().id);
    EXPECT_EQ(check->run(context).outcome, Outcome::held) << check->info().id;
  }
  EXPECT_EQ(ids, (std::set<std::string>{"h2o.sec3_sparsity", "h2o.sec3_power_law", "l2norm.attention_correlation"}));
}

}  // namespace
}  // namespace subevict::proofs_checks
