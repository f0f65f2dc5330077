// Tests sweep/job.hpp: the id hash, the canonical parameter string and run_job's metrics.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstring>

#include "core/tolerance.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "sweep/job.hpp"

namespace subevict::sweep {
namespace {

Job tiny_job(const std::string& policy, BudgetKind kind, double budget, greedy::OptimumMode mode) {
  Job job;
  job.workload = spec_from_preset("tiny-gqa", 24, 2, 7);
  job.policy = policy;
  job.budget_kind = kind;
  job.budget_value = budget;
  job.optimum = mode;
  return job;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(Job, HashIsFnv1a64) {
  // Published FNV-1a 64-bit test vectors (Fowler/Noll/Vo reference test suite).
  EXPECT_EQ(fnv1a_hex(""), "cbf29ce484222325");
  EXPECT_EQ(fnv1a_hex("a"), "af63dc4c8601ec8c");
  EXPECT_EQ(fnv1a_hex("foobar"), "85944171f73967e8");
}

TEST(Job, IdIsTheHashOfAStableCanonicalString) {
  Job job = tiny_job("h2o", BudgetKind::kRatio, 0.25, greedy::OptimumMode::kFlow);
  const std::string expected =
      "subevict.sweep.v1;preset=tiny-gqa;generator=llm-like;tokens=24;layers=2;q_heads=4;kv_heads=2;"
      "head_dim=8;seed=7;content_logit_std=1.5;sinks=4;sink_logit=7;token_types=512;"
      "zipf_alpha=1.1000000000000001;heavy_logit=1.2;norm_logit_range=3;norm_spread=24;recency_logit=3;"
      "rope_base=10000;temperature=1;value_std=1;policy=h2o;budget=ratio:0.25;optimum=flow";
  EXPECT_EQ(job.canonical(), expected);
  EXPECT_EQ(job.id(), fnv1a_hex(expected));
  EXPECT_EQ(job.id(), "840422f0179b47b8");  // ids of jobs without a layer set stay what they were
  job.horizon = 3;  // only lookahead reads the horizon, so only its id carries it
  EXPECT_EQ(job.id(), fnv1a_hex(expected));
  job.policy = "lookahead";
  EXPECT_NE(job.canonical().find(";horizon=3;"), std::string::npos);
}

TEST(Job, ALayerSetEntersTheCanonicalStringAfterTheLayerCount) {
  Job job = tiny_job("h2o", BudgetKind::kRatio, 0.25, greedy::OptimumMode::kFlow);
  EXPECT_EQ(job.run_layers(), (std::vector<int>{0, 1}));  // no set: every generated layer
  const std::string without = job.canonical();
  job.workload.shape.layers = 6;
  job.layers = {1, 3, 4, 5};
  EXPECT_EQ(job.run_layers(), job.layers);
  std::string expected = without;
  expected.replace(expected.find(";layers=2;"), 10, ";layers=6;layer_set=1,3-5;");
  EXPECT_EQ(job.canonical(), expected);
}

RC_GTEST_PROP(Job, EveryParameterChangesTheId, ()) {
  const Job base = tiny_job("h2o", BudgetKind::kRatio, 0.25, greedy::OptimumMode::kFlow);
  Job other = base;
  switch (*rc::gen::inRange(0, 10)) {
    case 0: other.workload.seed = *rc::gen::suchThat(rc::gen::arbitrary<std::uint64_t>(), [](auto s) { return s != 7; }); break;
    case 1: other.workload.shape.tokens += *rc::gen::inRange(1, 100); break;
    case 2: other.workload.shape.layers = 1; break;
    case 3: other.workload.llm.heavy_logit = *rc::gen::suchThat(rc::gen::inRange(0, 100), [](int v) { return v != 12; }) / 10.0; break;
    case 4: other.workload.llm.sinks = *rc::gen::suchThat(rc::gen::inRange(0, 10), [](int v) { return v != 4; }); break;
    case 5: other.policy = *rc::gen::suchThat(rc::gen::elementOf(greedy::policy_names()), [](const std::string& p) { return p != "h2o"; }); break;
    case 6: other.budget_kind = BudgetKind::kSize; break;
    case 7: other.budget_value = *rc::gen::suchThat(rc::gen::inRange(1, 100), [](int v) { return v != 25; }) / 100.0; break;
    case 8: other.layers = {*rc::gen::inRange(0, 2)}; break;  // one layer of the two
    default: other.optimum = *rc::gen::element(greedy::OptimumMode::kNone, greedy::OptimumMode::kOracle); break;
  }
  RC_ASSERT(other.id() != base.id());
}

TEST(Job, FullBudgetLosesNothing) {
  // k = n: nothing is ever evicted, so r_i = 1, TV = 0, the output is exact and OPT = sum U = n.
  for (const char* policy : {"h2o", "local", "tova"}) {
    const JobResult r = run_job(tiny_job(policy, BudgetKind::kSize, 24, greedy::OptimumMode::kFlow));
    EXPECT_EQ(r.groups, 4);  // 2 layers x 2 KV heads
    EXPECT_EQ(r.budget_size, 24);
    EXPECT_TRUE(near(r.mean_retained_mass, 1.0, Tol<double>::sum(24)));
    EXPECT_TRUE(near(r.mean_total_variation, 0.0, Tol<double>::sum(24)));
    EXPECT_TRUE(near(r.mean_output_error, 0.0, Tol<double>::sum(24)));
    ASSERT_TRUE(r.optimum_mean_retained_mass && r.oracle_mean_retained_mass && r.ratio_to_optimum);
    EXPECT_TRUE(near(*r.optimum_mean_retained_mass, 1.0, Tol<double>::sum(24)));
    EXPECT_TRUE(near(*r.ratio_to_optimum, 1.0, Tol<double>::sum(24)));
  }
}

RC_GTEST_PROP(Job, MetricsRespectTheDecompositionAndAreDeterministic, ()) {
  const auto policy = *rc::gen::element<std::string>("h2o", "local", "streamingllm", "tova", "random", "l2norm");
  const int k = *rc::gen::inRange(policy == "streamingllm" ? 5 : 1, 24);  // k > its 4 sinks
  const Job job = tiny_job(policy, BudgetKind::kSize, k, greedy::OptimumMode::kFlow);
  const JobResult r = run_job(job);
  RC_ASSERT(r.budget_size == k);
  RC_ASSERT(r.optimum_mean_retained_mass.has_value());
  const double tol = Tol<double>::sum(24 * 24);
  // l2norm skips layers 0 and 1 (all of this workload): uncompressed runs may exceed OPT.
  if (r.uncompressed_groups == 0) RC_ASSERT(r.mean_retained_mass <= *r.optimum_mean_retained_mass + tol);
  RC_ASSERT(*r.optimum_mean_retained_mass <= *r.oracle_mean_retained_mass + tol);
  RC_ASSERT(*r.oracle_mean_retained_mass <= 1.0 + tol);
  RC_ASSERT(near(r.mean_total_variation, 1.0 - r.mean_retained_mass, tol));
  const JobResult again = run_job(job);
  RC_ASSERT(same_bits(again.mean_retained_mass, r.mean_retained_mass));
  RC_ASSERT(same_bits(again.mean_output_error, r.mean_output_error));
  RC_ASSERT(same_bits(*again.ratio_to_optimum, *r.ratio_to_optimum));
}

TEST(Job, OptimumModesComputeOnlyWhatTheyName) {
  const JobResult none = run_job(tiny_job("h2o", BudgetKind::kRatio, 0.25, greedy::OptimumMode::kNone));
  EXPECT_FALSE(none.optimum_mean_retained_mass || none.oracle_mean_retained_mass || none.ratio_to_optimum);
  const JobResult oracle = run_job(tiny_job("h2o", BudgetKind::kRatio, 0.25, greedy::OptimumMode::kOracle));
  EXPECT_FALSE(oracle.optimum_mean_retained_mass || oracle.ratio_to_optimum);
  EXPECT_TRUE(oracle.oracle_mean_retained_mass);
  EXPECT_TRUE(same_bits(none.mean_retained_mass, oracle.mean_retained_mass));
  EXPECT_EQ(none.budget_size, 6);  // round(0.25 * 24)
}

}  // namespace
}  // namespace subevict::sweep
