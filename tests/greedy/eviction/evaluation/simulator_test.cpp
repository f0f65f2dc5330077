// Tests greedy/eviction/evaluation/simulator.hpp: the process invariants of theory.md §2 for every policy, the metrics
// against core/metrics.hpp on the same sets, group aggregation, prefill, budgets, contracts.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "core/attention.hpp"
#include "core/generator.hpp"
#include "core/input_error.hpp"
#include "core/tolerance.hpp"
#include "greedy/eviction/evaluation/head_evaluation.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "tests/greedy/naive_eviction.hpp"

namespace subevict::greedy {
namespace {

using T = Tol<double>;

naive::Instance gen_instance(int max_n = 40) {
  const int n = *rc::gen::inRange(1, max_n + 1);
  const int d = *rc::gen::inRange(1, 9);
  const int g = *rc::gen::inRange(1, 4);
  const auto seed = *rc::gen::inRange<std::uint64_t>(0, 1u << 30);
  return naive::random_instance(seed, n, d, g, *rc::gen::element(0.5, 2.0, 4.0));
}

/// The survivals each policy promises with default parameters and budget k at step i.
std::set<int> promised(const std::string& name, const PolicyParams& p, int k, int i) {
  std::set<int> keep;
  const auto last = [&](int count) {
    for (int j = std::max(0, i - count + 1); j <= i; ++j) keep.insert(j);
  };
  if (name == "local") last(k);
  if (name == "streamingllm") {
    for (int j = 0; j < std::min(p.sinks, i + 1); ++j) keep.insert(j);
    last(k - p.sinks);
  }
  if (name == "h2o" || name == "h2o-oracle") last(k - int(p.heavy_ratio * k));
  if (name == "h2o-flexgen") last((k + 1) / 2 - 1);  // prefill keeps hh − 1, streaming hh
  if (name == "snapkv") last(p.observation_window);
  return keep;
}

RC_GTEST_PROP(Simulator, ProcessInvariantsHoldForEveryPolicy, ()) {
  const naive::Instance in = gen_instance();
  const HeadGroup group = in.group();
  SimulationOptions options;
  options.budget = *rc::gen::inRange(6, 12);
  options.prefill = *rc::gen::element(0, *rc::gen::inRange(0, in.n + 1));
  options.aggregation = *rc::gen::element(GroupAggregation::kSum, GroupAggregation::kMean, GroupAggregation::kMax);
  options.seed = *rc::gen::inRange<std::uint64_t>(0, 100);
  options.record_cache = true;
  PolicyParams params;
  params.sinks = 2;
  params.observation_window = 3;
  params.sink_size_start = 2;
  params.sink_size_end = 2;
  for (const std::string& name : policy_names()) {
    auto policy = make_policy(name, params);
    const Trace trace = simulate(group, *policy, options);
    const int k = trace.budget;
    const bool prefill = options.prefill > k;
    std::vector<char> gone(in.n, 0);
    std::vector<int> previous;
    for (int i = 0; i < in.n; ++i) {
      const std::vector<int>& s = trace.cache[i];
      RC_ASSERT(std::is_sorted(s.begin(), s.end()));
      RC_ASSERT(int(s.size()) <= (prefill && i < options.prefill - 1 ? i + 1 : k));
      std::vector<int> g_i = previous;
      g_i.push_back(i);
      if (!(prefill && i < options.prefill)) {
        // S_i ⊆ G_i, one eviction exactly when full, none otherwise.
        RC_ASSERT(std::includes(g_i.begin(), g_i.end(), s.begin(), s.end()));
        const bool full = int(previous.size()) == k;
        RC_ASSERT(int(g_i.size() - s.size()) == (full ? 1 : 0));
        RC_ASSERT((trace.steps[i].evicted != kNoEviction) == full);
      }
      for (int j : s) RC_ASSERT(!gone[j]);  // evicted tokens never return
      for (int j = 0; j <= i; ++j) {
        if (!std::binary_search(s.begin(), s.end(), j)) gone[j] = 1;
      }
      if (!(prefill && i < options.prefill - 1)) {
        for (int j : promised(name, params, k, i)) {
          if (!std::binary_search(s.begin(), s.end(), j)) RC_FAIL(name + " dropped a promised token");
        }
      }
      previous = s;
    }
    // The schedule view agrees with the recorded caches.
    const std::vector<int> last = trace.last_step();
    for (int i = 0; i < in.n; ++i) {
      for (int j = 0; j <= i; ++j) {
        RC_ASSERT(std::binary_search(trace.cache[i].begin(), trace.cache[i].end(), j) == (i <= last[j]));
      }
    }
    // Identical inputs and seeds give identical traces.
    auto again = make_policy(name, params);
    const Trace repeat = simulate(group, *again, options);
    for (int i = 0; i < in.n; ++i) {
      RC_ASSERT(repeat.steps[i].evicted == trace.steps[i].evicted);
      RC_ASSERT(repeat.steps[i].retained_mass == trace.steps[i].retained_mass);
    }
  }
}

/// The condition number of the relative output error of head h at step i: rounding in the outputs
/// is of order eps * max_j |v_j| per term, so the relative error ||o - o~|| / ||o|| carries it
/// magnified by max_j |v_j| / ||o|| (large where the exact output nearly cancels).
double output_error_condition(const naive::Instance& in, int h, int i) {
  const HeadGroup group = in.group();
  const Eigen::VectorXd o = attention_output(attention_row(group.q[std::size_t(h)], group.k, i, in.scale), group.v);
  const double largest = group.v.topRows(i + 1).cast<double>().rowwise().norm().maxCoeff();
  return o.norm() > 0.0 ? 1.0 + largest / o.norm() : std::numeric_limits<double>::infinity();
}

RC_GTEST_PROP(Simulator, MetricsEqualCoreMetricsOnTheSameSets, ()) {
  const naive::Instance in = gen_instance();
  naive::Setup setup;
  setup.policy = *rc::gen::element<std::string>("h2o", "local", "tova", "random", "l2norm");
  setup.budget = *rc::gen::inRange(1, in.n + 1);
  setup.prefill = *rc::gen::element(0, *rc::gen::inRange(0, in.n + 1));
  setup.params.skipped_layers = {};
  const naive::Result expected = naive::simulate(in, setup);
  auto policy = make_policy(setup.policy, setup.params);
  SimulationOptions options;
  options.budget = setup.budget;
  options.prefill = setup.prefill;
  const Trace trace = simulate(in.group(), *policy, options);
  bool evicted = setup.prefill > trace.budget;
  for (int i = 0; i < in.n; ++i) {
    double mean_mass = 0.0, mean_error = 0.0;
    for (int h = 0; h < in.g; ++h) {
      const double r = trace.head_retained_mass[std::size_t(i) * in.g + h];
      const double e = trace.head_output_error[std::size_t(i) * in.g + h];
      RC_ASSERT(near(r, expected.mass[i][h], T::sum(std::size_t(in.n) * in.d)));
      RC_ASSERT(near(e, expected.error[i][h],
                     1e3 * T::sum(std::size_t(in.n) * in.d) * output_error_condition(in, h, i)));
      RC_ASSERT(e >= 0.0);
      RC_ASSERT(r <= 1.0);
      if (!evicted) {
        RC_ASSERT(r == 1.0);  // nothing evicted yet: the whole row, exactly
        RC_ASSERT(e == 0.0);
      }
      mean_mass += r / in.g;
      mean_error += e / in.g;
    }
    RC_ASSERT(near(trace.steps[i].retained_mass, mean_mass, T::sum(std::size_t(in.g))));
    RC_ASSERT(near(trace.steps[i].output_error, mean_error, T::sum(std::size_t(in.g))));
    RC_ASSERT(trace.steps[i].total_variation == 1.0 - trace.steps[i].retained_mass);
    if (trace.steps[i].evicted != kNoEviction) evicted = true;
  }
}

RC_GTEST_PROP(Simulator, TotalMassIsTheScheduleObjectiveOfTheGroupGains, ()) {
  const naive::Instance in = gen_instance(24);
  const HeadGroup group = in.group();
  SimulationOptions options;
  options.budget = *rc::gen::inRange(1, in.n + 1);
  auto policy = make_policy(*rc::gen::element<std::string>("h2o", "tova", "random"));
  const Trace trace = simulate(group, *policy, options);
  std::vector<Eigen::MatrixXd> heads;
  for (const ConstHeadMap& q : group.q) heads.push_back(causal_attention(q, group.k, group.scale));
  const Eigen::MatrixXd gains = gain_matrix(heads);
  RC_ASSERT(is_feasible_schedule(trace.last_step(), trace.budget));
  RC_ASSERT(near(trace.total_retained_mass(), schedule_step_mass(gains, trace.last_step()).sum(),
                 T::sum(std::size_t(in.n) * in.n * in.g)));
}

/// Records what the simulator shows a policy; evicts the lowest token when full.
class RecordingPolicy final : public EvictionPolicy {
 public:
  struct Seen {
    int step;
    std::vector<Token> tokens;
    std::vector<double> attention, heads;
  };
  std::vector<Seen> seen;
  [[nodiscard]] std::string name() const override { return "recording"; }
  void reset(const PolicyContext&) override { seen.clear(); }
  [[nodiscard]] std::vector<Token> prefill() override { return {}; }
  [[nodiscard]] Token step(const StepView& view) override {
    seen.push_back({view.step, {view.tokens.begin(), view.tokens.end()},
                    {view.attention.begin(), view.attention.end()},
                    {view.head_attention.begin(), view.head_attention.end()}});
    RC_ASSERT(view.tokens.back() == view.step);
    if (!view.full) return kNoEviction;
    return *std::min_element(view.tokens.begin(), view.tokens.end());
  }
};

RC_GTEST_PROP(Simulator, PoliciesSeeTrackedAttentionAggregatedByTheRule, ()) {
  const naive::Instance in = gen_instance(24);
  const HeadGroup group = in.group();
  SimulationOptions options;
  options.budget = *rc::gen::inRange(1, in.n + 1);
  options.aggregation = *rc::gen::element(GroupAggregation::kSum, GroupAggregation::kMean, GroupAggregation::kMax);
  RecordingPolicy policy;
  (void)simulate(group, policy, options);
  for (const RecordingPolicy::Seen& s : policy.seen) {
    const std::size_t m = s.tokens.size();
    std::vector<bool> in_set(std::size_t(s.step) + 1, false);
    for (Token t : s.tokens) in_set[std::size_t(t)] = true;
    for (int h = 0; h < in.g; ++h) {
      // Exactly the corrected Def D.10: softmax over G_i, zero weight elsewhere (erratum §9.4).
      const Eigen::VectorXd tracked = tracked_attention(causal_logits(group.q[h], group.k, s.step, group.scale), in_set);
      double total = 0.0;
      for (std::size_t e = 0; e < m; ++e) {
        RC_ASSERT(near(s.heads[h * m + e], tracked[s.tokens[e]], T::sum(m * in.d)));
        total += tracked[s.tokens[e]];
      }
      RC_ASSERT(near(total, 1.0, T::sum(m)));
    }
    for (std::size_t e = 0; e < m; ++e) {
      double sum = 0.0, top = s.heads[e];
      for (int h = 0; h < in.g; ++h) sum += s.heads[h * m + e], top = std::max(top, s.heads[h * m + e]);
      const double expected = options.aggregation == GroupAggregation::kSum   ? sum
                              : options.aggregation == GroupAggregation::kMean ? sum / in.g
                                                                               : top;
      RC_ASSERT(near(s.attention[e], expected, T::sum(std::size_t(in.g))));
    }
  }
}

TEST(Simulator, GroupAggregationRuleDecidesAndIsFollowed) {
  // TOVA with two query heads: each rule's trace equals the naive rule's, and on some of these
  // instances the max rule evicts differently from the sum (so the rule is not ignored).
  const GroupAggregation rules[3] = {GroupAggregation::kSum, GroupAggregation::kMean, GroupAggregation::kMax};
  int differing = 0;
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    const naive::Instance in = naive::random_instance(seed, 16, 4, 2, 3.0);
    std::vector<int> evictions[3];
    for (int r = 0; r < 3; ++r) {
      naive::Setup setup;
      setup.policy = "tova";
      setup.budget = 4;
      setup.rule = rules[r];
      evictions[r] = naive::simulate(in, setup).evicted;
      SimulationOptions options;
      options.budget = 4;
      options.aggregation = rules[r];
      auto policy = make_policy("tova");
      const Trace trace = simulate(in.group(), *policy, options);
      for (int i = 0; i < in.n; ++i) EXPECT_EQ(trace.steps[i].evicted, evictions[r][i]) << i;
    }
    EXPECT_EQ(evictions[0], evictions[1]);  // mean = sum / g orders members identically
    if (evictions[0] != evictions[2]) ++differing;
  }
  EXPECT_GT(differing, 0);
}

class BadPolicy final : public EvictionPolicy {
 public:
  explicit BadPolicy(int mode) : mode_(mode) {}
  [[nodiscard]] std::string name() const override { return "bad"; }
  void reset(const PolicyContext&) override {}
  [[nodiscard]] std::vector<Token> prefill() override { return {0, 0}; }
  [[nodiscard]] Token step(const StepView& view) override {
    if (mode_ == 0) return view.tokens.front();  // evicts while not full
    if (mode_ == 1) return kNoEviction;           // never evicts
    return view.full ? 1000 : kNoEviction;        // not a member
  }

 private:
  int mode_;
};

TEST(Simulator, PolicyContractViolationsThrowNamingThePolicy) {
  const naive::Instance in = naive::random_instance(3, 10, 4, 1, 1.0);
  SimulationOptions options;
  options.budget = 3;
  for (int mode = 0; mode < 3; ++mode) {
    BadPolicy policy(mode);
    try {
      (void)simulate(in.group(), policy, options);
      FAIL() << "mode " << mode;
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("bad"), std::string::npos);
    }
  }
  options.prefill = 6;
  BadPolicy duplicates(1);
  EXPECT_THROW((void)simulate(in.group(), duplicates, options), std::logic_error);
  options.prefill = 11;
  EXPECT_THROW((void)simulate(in.group(), duplicates, options), std::invalid_argument);
  options.prefill = 0;
  options.budget = 0;
  EXPECT_THROW((void)simulate(in.group(), duplicates, options), std::invalid_argument);
}

TEST(Simulator, BudgetsResolveRelativeToTheStatedBase) {
  EXPECT_EQ(Budget::absolute(256).resolve(4096, 0), 256);
  EXPECT_EQ(Budget::absolute(9000).resolve(4096, 0), 4096);
  EXPECT_EQ(Budget::ratio_of_tokens(0.2).resolve(4096, 0), 819);
  EXPECT_EQ(Budget::ratio_of_tokens(0.2).resolve(4096, 1000), 819);
  EXPECT_EQ(Budget::ratio_of_prompt(0.2).resolve(4096, 1000), 200);
  EXPECT_EQ(Budget::ratio_of_tokens(1e-6).resolve(100, 0), 1);
  EXPECT_THROW((void)Budget::ratio_of_prompt(0.2).resolve(4096, 0), InputError);
  EXPECT_THROW((void)Budget::ratio_of_tokens(1.5).resolve(10, 0), InputError);
  EXPECT_THROW((void)Budget::absolute(0).resolve(10, 0), InputError);
  EXPECT_THROW((void)(Budget{Budget::Kind::kAbsolute, 2.5}.resolve(10, 0)), InputError);
  EXPECT_EQ(parse_group_aggregation("max"), GroupAggregation::kMax);
  EXPECT_THROW((void)parse_group_aggregation("median"), InputError);
}

TEST(Simulator, SkippedLayerKeepsEverythingAndMetricsOffKeepsDecisions) {
  const naive::Instance in = naive::random_instance(5, 20, 4, 2, 2.0, /*layer=*/1);
  PolicyParams params;
  params.skipped_layers = {1};
  auto l2 = make_policy("l2norm", params);
  SimulationOptions options;
  options.budget = 5;
  const Trace skipped = simulate(in.group(), *l2, options);
  EXPECT_EQ(skipped.budget, 20);
  for (const StepRecord& r : skipped.steps) EXPECT_EQ(r.evicted, kNoEviction);

  auto h2o = make_policy("h2o");
  const Trace with = simulate(in.group(), *h2o, options);
  options.compute_metrics = false;
  const Trace without = simulate(in.group(), *h2o, options);
  EXPECT_TRUE(without.head_retained_mass.empty());
  for (int i = 0; i < in.n; ++i) EXPECT_EQ(with.steps[i].evicted, without.steps[i].evicted);
}

TEST(Simulator, WholeWorkloadMatchesPerHeadRunsForAnyThreadCount) {
  WorkloadSpec spec;
  spec.shape = Shape{2, 4, 2, 24, 8};
  spec.seed = 11;
  const Workload workload = generate_workload(spec, 1);
  SimulationOptions options;
  options.budget = 6;
  const PolicyFactory factory = [] { return make_policy("h2o"); };
  std::vector<int> progress;
  const std::vector<Trace> one = simulate_workload(workload, factory, options, 1,
                                                   [&](int done, int total) { progress.push_back(done * 10 + total); });
  const std::vector<Trace> two = simulate_workload(workload, factory, options, 2);
  ASSERT_EQ(one.size(), 4u);
  EXPECT_EQ(progress.size(), 4u);
  for (int index = 0; index < 4; ++index) {
    auto policy = make_policy("h2o");
    const Trace direct = simulate(head_group(workload, index / 2, index % 2), *policy, options);
    EXPECT_EQ(one[index].layer, index / 2);
    EXPECT_EQ(one[index].kv_head, index % 2);
    EXPECT_EQ(one[index].heads, 2);
    for (int i = 0; i < 24; ++i) {
      EXPECT_EQ(one[index].steps[i].evicted, direct.steps[i].evicted);
      EXPECT_EQ(two[index].steps[i].retained_mass, direct.steps[i].retained_mass);
    }
  }
}

}  // namespace
}  // namespace subevict::greedy

namespace subevict::greedy {
namespace {

TEST(BudgetFromValue, RatiosAndSizesUpToIntMax) {
  EXPECT_EQ(budget_from_value(0.25, "t").kind, Budget::Kind::kRatioOfTokens);
  EXPECT_EQ(budget_from_value(2147483647.0, "t").resolve(100, 0), 100);  // capped at n
  EXPECT_EQ(budget_from_value(7, "t").resolve(100, 0), 7);
  // Beyond INT_MAX (once cast to int: undefined behaviour, seen as -2147483648), non-integers
  // >= 1, zero, negatives and non-finite values are rejected naming the value.
  for (double bad : {2147483648.0, 3e9, 1.5, 0.0, -2.0, std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_THROW((void)budget_from_value(bad, "t"), InputError) << bad;
  }
  try {
    (void)budget_from_value(3e9, "simulate");
    FAIL() << "3e9 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("3000000000"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace subevict::greedy
