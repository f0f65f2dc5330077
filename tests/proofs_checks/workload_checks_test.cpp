// Tests the workload-structure checks (proofs_checks/workload_structure.hpp): an LLM-like
// workload shows the structures the papers report; an i.i.d. Gaussian one (no structure) does not.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <set>
#include <vector>

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
  EXPECT_EQ(r.instances, 1);  // the set of 3 layers
  EXPECT_EQ(measurement_value(r, "layers_checked"), 3.0);
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
  EXPECT_NE(r.notes.find("none remains after excluding the first two: all are used"), std::string::npos);
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

/// Statistics set by hand: one head per layer, `member` of layer l equal to values[l], on a
/// workload of the matching shape (128 tokens, so 92 middle tokens for the L2-norm check).
InspectedWorkload synthetic(const std::vector<double>& values, double HeadStatistics::*member) {
  static std::vector<std::unique_ptr<Workload>> shapes;  // kept alive for the returned pointers
  shapes.push_back(std::make_unique<Workload>(Shape{int(values.size()), 1, 1, 128, 1}));
  InspectedWorkload out{shapes.back().get(), InspectOptions{}, {}};
  for (std::size_t l = 0; l < values.size(); ++l) {
    HeadStatistics h;
    h.layer = int(l);
    h.*member = values[l];
    out.heads.push_back(h);
  }
  return out;
}

/// `layers` copies of `value`, of which the first `off` are `off_value`.
std::vector<double> layer_values(int layers, double value, int off = 0, double off_value = 0.0) {
  std::vector<double> v(std::size_t(layers), value);
  for (int l = 0; l < off; ++l) v[std::size_t(l)] = off_value;
  return v;
}

TEST(Sec3Sparsity, ThresholdIsNinetyFivePercent) {
  // Every layer 1% above 0.95 holds, 1% below fails: a default threshold 5% off either way fails this.
  EXPECT_EQ(check_sec3_sparsity(synthetic(layer_values(4, 0.95 * 1.01), &HeadStatistics::sparsity)).outcome,
            Outcome::held);
  EXPECT_EQ(check_sec3_sparsity(synthetic(layer_values(4, 0.95 * 0.99), &HeadStatistics::sparsity)).outcome,
            Outcome::violated);
}

TEST(Sec3Sparsity, AlmostAllLayersMeansAllButTenPercent) {
  // 10 layers: 1 may miss; 19 layers: still only 1 (floor(1.9)). A share 10% off either way
  // (0.09 or 0.11) changes one of the two.
  EXPECT_EQ(check_sec3_sparsity(synthetic(layer_values(10, 0.99, 1, 0.5), &HeadStatistics::sparsity)).outcome,
            Outcome::held);
  EXPECT_EQ(check_sec3_sparsity(synthetic(layer_values(19, 0.99, 2, 0.5), &HeadStatistics::sparsity)).outcome,
            Outcome::violated);
}

TEST(Sec3Sparsity, AHeldAlmostAllClaimCarriesNoViolationAndAViolatedOneSaysHowMany) {
  // Held with one layer missing: no violation, rate or counterexample contradicts "held"; the
  // miss is a measurement and a note.
  const CheckResult held = check_sec3_sparsity(synthetic(layer_values(10, 0.99, 1, 0.5), &HeadStatistics::sparsity));
  EXPECT_EQ(held.outcome, Outcome::held);
  EXPECT_EQ(held.violations, 0);
  EXPECT_FALSE(held.counterexample.has_value());
  EXPECT_EQ(held.violation_rate.lower, 0.0);
  EXPECT_EQ(measurement_value(held, "layers_missing"), 1.0);
  EXPECT_EQ(measurement_value(held, "layers_allowed_to_miss"), 1.0);
  EXPECT_NE(held.notes.find("within \"almost all\""), std::string::npos) << held.notes;
  EXPECT_EQ(held.worst_slack, 0.0);  // no layer to spare
  // Violated: one violation of the one claim, and the counterexample counts the layers.
  const CheckResult violated =
      check_sec3_sparsity(synthetic(layer_values(19, 0.99, 2, 0.5), &HeadStatistics::sparsity));
  EXPECT_EQ(violated.violations, 1);
  ASSERT_TRUE(violated.counterexample.has_value());
  EXPECT_NE(violated.counterexample->description.find("2 of 19 layers miss"), std::string::npos)
      << violated.counterexample->description;
  EXPECT_EQ(violated.worst_slack, -1.0);
  // For the almost-all claims over every layer and every number of misses (20 layers: 2 may
  // miss), held never comes with violations.
  for (int off = 0; off <= 4; ++off) {
    for (const CheckResult& r :
         {check_sec3_sparsity(synthetic(layer_values(20, 0.99, off, 0.5), &HeadStatistics::sparsity)),
          check_sec3_power_law(synthetic(layer_values(20, 0.99, off, 0.5), &HeadStatistics::power_law_r2))}) {
      EXPECT_EQ(r.outcome == Outcome::held, r.violations == 0 && !r.counterexample) << r.key_number;
      EXPECT_EQ(r.outcome, off <= 2 ? Outcome::held : Outcome::violated) << r.key_number;
      EXPECT_EQ(measurement_value(r, "layers_missing"), double(off));
    }
  }
}

TEST(Sec3PowerLaw, ThresholdIsRSquaredNinetyFivePercent) {
  EXPECT_EQ(check_sec3_power_law(synthetic(layer_values(4, 0.95 * 1.01), &HeadStatistics::power_law_r2)).outcome,
            Outcome::held);
  EXPECT_EQ(check_sec3_power_law(synthetic(layer_values(4, 0.95 * 0.99), &HeadStatistics::power_law_r2)).outcome,
            Outcome::violated);
}

TEST(AttentionSinks, ThresholdIsHalfTheAttention) {
  EXPECT_EQ(check_attention_sinks(synthetic(layer_values(4, 0.5 * 1.01), &HeadStatistics::first_token_mass)).outcome,
            Outcome::held);
  EXPECT_EQ(check_attention_sinks(synthetic(layer_values(4, 0.5 * 0.99), &HeadStatistics::first_token_mass)).outcome,
            Outcome::violated);
}

TEST(L2normCorrelation, ThresholdIsTwoStandardErrors) {
  // 1 query head, 128 - 4 sinks - 32 recent = 92 middle tokens: threshold -2 / sqrt(91).
  const double threshold = -2.0 / std::sqrt(91.0);
  const auto rho = [](double value) { return synthetic(layer_values(3, value), &HeadStatistics::norm_attention_spearman); };
  EXPECT_EQ(check_l2norm_correlation(rho(threshold * 1.02)).outcome, Outcome::held);
  EXPECT_EQ(check_l2norm_correlation(rho(threshold * 0.98)).outcome, Outcome::violated);
  EXPECT_EQ(check_l2norm_correlation(rho(threshold * 0.98), 2.0 * 0.95).outcome, Outcome::held);
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
  // The same tensors without the generator's metadata: what an imported workload looks like.
  Workload imported = *first_token_sink().workload;
  imported.metadata.clear();
  CheckContext context;
  context.workload = &imported;
  context.head_statistics = &first_token_sink().heads;
  std::set<std::string> ids;
  for (const auto& check : workload_checks()) {
    ids.insert(check->info().id);
    EXPECT_EQ(check->run(context).outcome, Outcome::held) << check->info().id;
  }
  EXPECT_EQ(ids, (std::set<std::string>{"h2o.sec3_sparsity", "h2o.sec3_power_law", "l2norm.attention_correlation",
                                        "streamingllm.attention_sinks"}));
}

TEST(WorkloadChecks, OnAGeneratedWorkloadTheStructureIsTheGeneratorsAndNotTested) {
  // The generator planted the sink and the sparsity: the claims' hypotheses (real attention) are
  // not met, and their numbers are the same as on the imported copy.
  Workload imported = *first_token_sink().workload;
  imported.metadata.clear();
  CheckContext generated, real;
  generated.workload = first_token_sink().workload;
  real.workload = &imported;
  generated.head_statistics = real.head_statistics = &first_token_sink().heads;
  ASSERT_EQ(generated.workload->metadata.count("generator"), 1u);
  for (const auto& check : workload_checks()) {
    const CheckResult a = check->run(generated), b = check->run(real);
    EXPECT_EQ(a.outcome, Outcome::hypotheses_not_met) << check->info().id;
    EXPECT_EQ(a.hypotheses_held, 0) << check->info().id;
    EXPECT_NE(a.notes.find("generated"), std::string::npos) << check->info().id;
    ASSERT_EQ(a.measurements.size(), b.measurements.size()) << check->info().id;
    for (std::size_t m = 0; m < a.measurements.size(); ++m) {
      EXPECT_EQ(a.measurements[m].value, b.measurements[m].value) << check->info().id << " " << a.measurements[m].name;
    }
  }
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
