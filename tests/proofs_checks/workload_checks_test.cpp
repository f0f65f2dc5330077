// Tests the workload-structure checks (proofs_checks/workload_structure.hpp): an LLM-like
// workload shows the structures the papers report; an i.i.d. Gaussian one (no structure) does not.
#include <gtest/gtest.h>

#include <set>

#include "dynamic_instances.hpp"
#include "proofs_checks/workload_checks.hpp"
#include "proofs_checks/workload_structure.hpp"

namespace subevict::proofs_checks {
namespace {

const InspectedWorkload& structured() {
  static const Workload w = testing::llm_workload(1024);
  static const InspectedWorkload inspected = inspect_for_checks(w);
  return inspected;
}

const InspectedWorkload& unstructured() {
  static const Workload w = testing::gaussian_workload(1024);
  static const InspectedWorkload inspected = inspect_for_checks(w);
  return inspected;
}

/// The LLM-like shape of testing::llm_workload with one strong sink on token 0 in every layer.
const InspectedWorkload& first_token_sink() {
  static const Workload w = [] {
    WorkloadSpec spec;
    spec.shape = Shape{3, 2, 2, 1024, 64};
    spec.seed = 5;
    spec.llm.sinks = 1;
    spec.llm.sink_logit = 12;
    return generate_workload(spec, 1);
  }();
  static const InspectedWorkload inspected = inspect_for_checks(w);
  return inspected;
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
  const Workload w = generate_workload(spec, 1);
  const CheckResult r = check_l2norm_correlation(inspect_for_checks(w));
  EXPECT_EQ(r.instances, 1);
  EXPECT_NE(r.notes.find("all layers are used"), std::string::npos);
}

TEST(AttentionSinks, HeldWhenTheFirstTokenHoldsMostAttention) {
  const CheckResult r = check_attention_sinks(first_token_sink());
  EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
  EXPECT_EQ(r.instances, 1);  // layer 2 only
}

TEST(AttentionSinks, ViolatedWithoutASinkOnTheFirstToken) {
  // Gaussian attention has no sink; the default LLM-like model spreads a weaker sink over 4 tokens.
  EXPECT_EQ(check_attention_sinks(unstructured()).outcome, Outcome::violated);
  const CheckResult spread = check_attention_sinks(structured());
  EXPECT_EQ(spread.outcome, Outcome::violated) << spread.key_number;
  ASSERT_TRUE(spread.counterexample.has_value());
}

TEST(AttentionSinks, ThresholdSeparatesTheMeasuredMass) {
  // The same measurement decides both sides of the threshold: a threshold just above the layer's
  // mass fails it, just below holds it.
  const double mass = layer_means(first_token_sink(), &HeadStatistics::first_token_mass)[2];
  EXPECT_EQ(check_attention_sinks(first_token_sink(), mass + 1e-9).outcome, Outcome::violated);
  EXPECT_EQ(check_attention_sinks(first_token_sink(), mass - 1e-9).outcome, Outcome::held);
}

TEST(StructureStatistics, SinkHeadRateCountsHeadsAboveTheThreshold) {
  std::vector<HeadStatistics> heads(6);
  const double late[6] = {0.1, 0.31, 0.5, 0.29, 0.3, 0.9};  // heads 0-2 in layer 1, 3-5 in layer 0
  for (int h = 0; h < 6; ++h) {
    heads[std::size_t(h)].layer = 1 - h / 3;  // layer 1 first: per_layer_statistics sorts by layer
    heads[std::size_t(h)].q_head = h % 3;
    heads[std::size_t(h)].late_first_token_mass = late[h];
    heads[std::size_t(h)].sparsity = h;
  }
  const std::vector<LayerStatistics> layers = per_layer_statistics(heads);
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].layer, 0);
  EXPECT_EQ(layers[0].heads, 3);
  EXPECT_DOUBLE_EQ(layers[0].sink_head_rate, 1.0 / 3);  // 0.29 and 0.3 are not above 0.3
  EXPECT_DOUBLE_EQ(layers[0].mean.sparsity, 4.0);       // heads 3, 4, 5
  EXPECT_DOUBLE_EQ(layers[1].sink_head_rate, 2.0 / 3);
  EXPECT_DOUBLE_EQ(sink_head_rate(heads), 3.0 / 6);
  EXPECT_DOUBLE_EQ(sink_head_rate(heads, 0.6), 1.0 / 6);
  EXPECT_EQ(sink_head_rate({}), 0.0);
}

TEST(WorkloadChecks, RegisteredIdsAndTheyRunOnMeasuredStatistics) {
  CheckContext context;
  context.workload = first_token_sink().workload;
  context.head_statistics = &first_token_sink().heads;
  std::set<std::string> ids;
  for (const auto& check : workload_checks()) {
    ids.insert(check->info().id);
    EXPECT_EQ(check->run(context).outcome, Outcome::held) << check->info().id;
  }
  EXPECT_EQ(ids, (std::set<std::string>{"h2o.sec3_sparsity", "h2o.sec3_power_law", "l2norm.attention_correlation",
                                        "streamingllm.attention_sinks"}));
}

TEST(WorkloadChecks, MeasureTheWorkloadThemselvesWithoutStatistics) {
  CheckContext with, without;
  with.workload = without.workload = unstructured().workload;
  with.head_statistics = &unstructured().heads;
  for (const auto& check : workload_checks()) {
    EXPECT_EQ(check->run(with).key_number, check->run(without).key_number) << check->info().id;
  }
}

}  // namespace
}  // namespace subevict::proofs_checks
