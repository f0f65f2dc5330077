// Tests the eviction process on sliding-window layers (greedy/eviction/evaluation/simulator.hpp,
// HeadGroup::window): a token leaves every cache once no later query sees it, and leaves before
// the policy is asked (a budget W - 1 keeps the whole window, no step holds fewer than
// min(k, visible) tokens), policies only ever see the window, a budget k >= W compresses
// nothing, the metrics and the optimum use the window's mask. References are independent: the windowed attention by plain loops (log-sum-exp
// over the window), the optimum by exhaustive dynamic programming over cache states (cache_dp).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/attention.hpp"
#include "core/tolerance.hpp"
#include "greedy/eviction/evaluation/head_evaluation.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/optimum/cache_dp.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"
#include "tests/greedy/naive_eviction.hpp"

namespace subevict::greedy {
namespace {

using T = Tol<double>;

/// One head's attention under a window of W keys by plain loops: row i is the softmax of
/// scale <q_i, k_j> over j in [max(0, i - W + 1), i] (all of 0..i for W = 0), 0 elsewhere.
Eigen::MatrixXd naive_windowed_attention(const ConstHeadMap& q, const ConstHeadMap& k, double scale, int window) {
  const int n = int(q.rows());
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < n; ++i) {
    const int from = window > 0 ? std::max(0, i - window + 1) : 0;
    double top = -1e300;
    std::vector<double> s(std::size_t(i + 1), 0.0);
    for (int j = from; j <= i; ++j) {
      for (int c = 0; c < q.cols(); ++c) s[std::size_t(j)] += double(q(i, c)) * double(k(j, c));
      s[std::size_t(j)] *= scale;
      top = std::max(top, s[std::size_t(j)]);
    }
    double total = 0.0;
    for (int j = from; j <= i; ++j) total += std::exp(s[std::size_t(j)] - top);
    for (int j = from; j <= i; ++j) a(i, j) = std::exp(s[std::size_t(j)] - top) / total;
  }
  return a;
}

/// The group's gains W_ij = Σ_h a^h_ij under the window, by the loops above.
Eigen::MatrixXd naive_windowed_gains(const HeadGroup& group) {
  Eigen::MatrixXd sum = Eigen::MatrixXd::Zero(group.tokens(), group.tokens());
  for (const ConstHeadMap& q : group.q) sum += naive_windowed_attention(q, group.k, group.scale, group.window);
  return sum;
}

/// Evicts the lowest token when full and records every token it was shown.
class WatchingPolicy final : public EvictionPolicy {
 public:
  std::vector<std::vector<Token>> shown;
  [[nodiscard]] std::string name() const override { return "watching"; }
  void reset(const PolicyContext&) override { shown.clear(); }
  [[nodiscard]] std::vector<Token> prefill() override { return {}; }
  [[nodiscard]] Token step(const StepView& view) override {
    shown.emplace_back(view.tokens.begin(), view.tokens.end());
    if (!view.full) return kNoEviction;
    return *std::min_element(view.tokens.begin(), view.tokens.end());
  }
};

/// Parameters under which every registered policy runs at any budget k >= 2.
PolicyParams small_budget_params() {
  PolicyParams params;
  params.sinks = 1;
  params.observation_window = 1;
  params.sink_size_start = 1;
  params.sink_size_end = 0;
  return params;
}

RC_GTEST_PROP(SlidingWindow, CachesHoldOnlyWhatTheNextQuerySeesAndEvictOncePerFullStep, ()) {
  naive::Instance in = naive::random_instance(*rc::gen::inRange<std::uint64_t>(0, 1u << 30), *rc::gen::inRange(2, 41),
                                              *rc::gen::inRange(1, 6), *rc::gen::inRange(1, 4), 2.0);
  HeadGroup group = in.group();
  group.window = *rc::gen::inRange(1, in.n + 2);
  SimulationOptions options;
  options.budget = *rc::gen::inRange(2, in.n + 1);  // streamingllm keeps 1 sink < k
  options.prefill = *rc::gen::element(0, *rc::gen::inRange(0, in.n + 1));
  options.record_cache = true;
  for (const std::string& name : policy_names()) {
    auto policy = make_policy(name, small_budget_params());
    const Trace trace = simulate(group, *policy, options);
    const bool compresses = options.budget < group.window;
    RC_ASSERT(trace.window == group.window);
    if (!compresses) RC_ASSERT(trace.budget == in.n);  // k >= W: nothing to compress, reported as budget n
    const int k = trace.budget;
    const bool prefill = options.prefill > k;
    std::vector<int> previous;
    for (int i = 0; i < in.n; ++i) {
      const std::vector<int>& s = trace.cache[std::size_t(i)];
      for (int j : s) RC_ASSERT(j > i + 1 - group.window && j <= i);  // every member visible at step i + 1
      RC_ASSERT(int(s.size()) <= std::min(k, group.window - 1) || (prefill && i < options.prefill - 1));
      if (!(prefill && i < options.prefill)) {
        std::vector<int> g_i = previous;
        g_i.push_back(i);
        RC_ASSERT(std::includes(g_i.begin(), g_i.end(), s.begin(), s.end()));
        // The token leaving the window leaves first; the policy evicts only while G_i is still
        // over k without it.
        const int expired =
            i + 1 - group.window >= 0 && std::binary_search(g_i.begin(), g_i.end(), i + 1 - group.window) ? 1 : 0;
        const bool full = int(g_i.size()) - expired > k;
        // Exactly the policy's eviction (when full) and the token leaving the window go.
        RC_ASSERT(int(g_i.size() - s.size()) == (full ? 1 : 0) + expired);
        if (full) RC_ASSERT(trace.steps[std::size_t(i)].evicted != i + 1 - group.window);
        RC_ASSERT((trace.steps[std::size_t(i)].evicted != kNoEviction) == full);
        if (!compresses) RC_ASSERT(!full);
      }
      previous = s;
    }
    const std::vector<int> last = trace.last_step();
    for (int i = 0; i < in.n; ++i) {
      for (int j = 0; j <= i; ++j) {
        const std::vector<int>& s = trace.cache[std::size_t(i)];
        RC_ASSERT(std::binary_search(s.begin(), s.end(), j) == (i <= last[std::size_t(j)]));
      }
    }
  }
}

RC_GTEST_PROP(SlidingWindow, PoliciesAreShownOnlyTheWindow, ()) {
  const naive::Instance in = naive::random_instance(*rc::gen::inRange<std::uint64_t>(0, 1u << 30),
                                                    *rc::gen::inRange(2, 41), 3, 1, 2.0);
  HeadGroup group = in.group();
  group.window = *rc::gen::inRange(1, in.n + 1);
  SimulationOptions options;
  options.budget = *rc::gen::inRange(1, in.n + 1);
  WatchingPolicy policy;
  (void)simulate(group, policy, options);
  RC_ASSERT(!policy.shown.empty());
  for (std::size_t i = 0; i < policy.shown.size(); ++i) {
    RC_ASSERT(int(policy.shown[i].size()) <= group.window);
    for (Token t : policy.shown[i]) RC_ASSERT(t > int(i) - group.window);
  }
}

RC_GTEST_PROP(SlidingWindow, RetainedMassIsTheWindowedRowsMassOfTheCache, ()) {
  const naive::Instance in = naive::random_instance(*rc::gen::inRange<std::uint64_t>(0, 1u << 30),
                                                    *rc::gen::inRange(2, 31), *rc::gen::inRange(1, 6),
                                                    *rc::gen::inRange(1, 4), 2.0);
  HeadGroup group = in.group();
  group.window = *rc::gen::inRange(1, in.n + 1);
  SimulationOptions options;
  options.budget = *rc::gen::inRange(2, in.n + 1);
  options.record_cache = true;
  PolicyParams params;
  params.sinks = 1;
  auto policy = make_policy(*rc::gen::element<std::string>("h2o", "tova", "local", "random", "streamingllm"), params);
  const Trace trace = simulate(group, *policy, options);
  std::vector<Eigen::MatrixXd> heads;
  for (const ConstHeadMap& q : group.q) heads.push_back(naive_windowed_attention(q, group.k, group.scale, group.window));
  for (int i = 0; i < in.n; ++i) {
    std::vector<int> g_i = i > 0 ? trace.cache[std::size_t(i - 1)] : std::vector<int>{};
    g_i.push_back(i);
    for (int h = 0; h < in.g; ++h) {
      double r = 0.0;
      for (int j : g_i) r += heads[std::size_t(h)](i, j);
      RC_ASSERT(near(trace.head_retained_mass[std::size_t(i) * in.g + h], std::min(r, 1.0),
                     T::sum(std::size_t(in.n) * in.d)));
    }
  }
  const Eigen::MatrixXd gains = naive_windowed_gains(group);
  RC_ASSERT(near(trace.total_retained_mass(), schedule_step_mass(gains, trace.last_step()).sum(),
                 T::sum(std::size_t(in.n) * in.n * in.g)));
}

RC_GTEST_PROP(SlidingWindow, OptimumEqualsExhaustiveSearchOnWindowedGainsAndBoundsEveryPolicy, ()) {
  const int n = *rc::gen::inRange(2, 13);
  Workload w(Shape{1, 2, 1, n, 3});
  const std::uint64_t seed = *rc::gen::inRange<std::uint64_t>(0, 1u << 30);
  for (std::size_t e = 0; e < w.q_data().size(); ++e) w.q_data()[e] = float(2.0 * normal(seed, 1, e));
  for (std::size_t e = 0; e < w.k_data().size(); ++e) w.k_data()[e] = float(normal(seed, 2, e));
  for (std::size_t e = 0; e < w.v_data().size(); ++e) w.v_data()[e] = float(normal(seed, 3, e));
  const int window = *rc::gen::inRange(1, n + 1);
  w.set_windows({window});
  const int budget = *rc::gen::inRange(1, n + 1);
  HeadEvaluationOptions options;
  options.budget = budget;
  const std::vector<std::string> policies = {"h2o", "tova", "local", "random", "l2norm"};
  const HeadEvaluation e = evaluate_head(w, 0, 0, policies, options);
  RC_ASSERT(e.has_optimum);
  const ScheduleSummary exhaustive = cache_dp(naive_windowed_gains(head_group(w, 0, 0)), budget);
  const double tol = T::sum(std::size_t(n) * n * 2);
  RC_ASSERT(near(e.optimum.value, exhaustive.value, tol));
  for (const Trace& t : e.traces) {
    if (t.budget == budget) RC_ASSERT(t.total_retained_mass() <= e.optimum.value + tol);  // l2norm skips layer 0
    if (budget < n) RC_ASSERT((t.budget == budget) == (budget < window && t.policy != "l2norm"));
  }
  RC_ASSERT(e.has_oracle);
  RC_ASSERT(e.optimum.value <= e.oracle.total + tol);  // the step oracle bounds the windowed process too
  if (budget >= window - 1) {
    // A cache of W − 1 holds the whole window: the token leaving it frees its slot for the next,
    // in the optimum, the oracle and every policy alike.
    RC_ASSERT(near(e.optimum.value, 2.0 * n, tol));
    RC_ASSERT(near(e.oracle.total, 2.0 * n, tol));
    for (const Trace& t : e.traces) RC_ASSERT(near(t.total_retained_mass(), 2.0 * n, tol));
  }
  // The optimum's schedule drops every token once it leaves the window.
  for (int j = 0; j < n; ++j) RC_ASSERT(e.optimum.last_step[std::size_t(j)] <= j + window - 2);
}

RC_GTEST_PROP(SlidingWindow, EveryPolicyKeepsTheWholeWindowAtABudgetOfWMinusOne, ()) {
  // A windowed cache of W − 1 entries never needs to evict: at every step the token query i + 1
  // no longer sees makes room for token i + 1. Every policy, window-aware or not, keeps mass 1.
  const naive::Instance in = naive::random_instance(*rc::gen::inRange<std::uint64_t>(0, 1u << 30),
                                                    *rc::gen::inRange(3, 41), *rc::gen::inRange(1, 6),
                                                    *rc::gen::inRange(1, 4), 2.0);
  HeadGroup group = in.group();
  group.layer = 2;  // l2norm compresses from layer 2 on
  group.window = *rc::gen::inRange(3, in.n + 1);
  SimulationOptions options;
  options.budget = group.window - 1;
  for (const std::string& name : policy_names()) {
    auto policy = make_policy(name, small_budget_params());
    const Trace trace = simulate(group, *policy, options);
    RC_ASSERT(trace.budget == options.budget);
    for (int i = 0; i < in.n; ++i) {
      RC_ASSERT(trace.steps[std::size_t(i)].evicted == kNoEviction);
      RC_ASSERT(trace.steps[std::size_t(i)].retained_mass == 1.0);
    }
    RC_ASSERT(trace.total_retained_mass() == double(in.n) * in.g);
  }
}

RC_GTEST_PROP(SlidingWindow, NoStepHoldsFewerThanTheBudgetOrWhatTheNextQuerySees, ()) {
  // Pure streaming: after step i the cache holds exactly min(k, v_i) tokens, v_i the arrived
  // tokens query i + 1 sees. Fewer would be a slot lost to the window's drop.
  const naive::Instance in = naive::random_instance(*rc::gen::inRange<std::uint64_t>(0, 1u << 30),
                                                    *rc::gen::inRange(2, 41), *rc::gen::inRange(1, 6),
                                                    *rc::gen::inRange(1, 4), 2.0);
  HeadGroup group = in.group();
  group.layer = 2;
  group.window = *rc::gen::element(0, *rc::gen::inRange(1, in.n + 2));
  SimulationOptions options;
  options.budget = *rc::gen::inRange(2, in.n + 1);
  options.record_cache = true;
  for (const std::string& name : policy_names()) {
    auto policy = make_policy(name, small_budget_params());
    const Trace trace = simulate(group, *policy, options);
    for (int i = 0; i < in.n; ++i) {
      const int visible = i + 1 - first_visible_key(i + 1, group.window);
      RC_ASSERT(int(trace.cache[std::size_t(i)].size()) == std::min(trace.budget, visible));
    }
  }
}

TEST(SlidingWindow, WindowAsLongAsTheSequenceChangesNothing) {
  const naive::Instance in = naive::random_instance(7, 30, 4, 2, 2.0);
  HeadGroup global = in.group(), windowed = in.group();
  windowed.window = in.n + 1;  // query n - 1 still sees token 0, which may stay to the end
  SimulationOptions options;
  options.budget = 12;
  for (const std::string& name : {"h2o", "tova", "snapkv"}) {
    auto a = make_policy(name), b = make_policy(name);
    const Trace x = simulate(global, *a, options), y = simulate(windowed, *b, options);
    for (int i = 0; i < in.n; ++i) {
      EXPECT_EQ(x.steps[std::size_t(i)].evicted, y.steps[std::size_t(i)].evicted) << name << " step " << i;
      EXPECT_NEAR(x.steps[std::size_t(i)].retained_mass, y.steps[std::size_t(i)].retained_mass, 1e-12);
    }
    EXPECT_EQ(x.last_step(), y.last_step());
  }
}

TEST(SlidingWindow, ShorterWindowsLeaveAtTheirLastVisibleStep) {
  const naive::Instance in = naive::random_instance(11, 20, 4, 1, 2.0);
  HeadGroup group = in.group();
  group.window = 4;
  SimulationOptions options;
  options.budget = 20;  // k >= W: not compressed
  options.record_cache = true;
  auto policy = make_policy("h2o");
  const Trace trace = simulate(group, *policy, options);
  EXPECT_EQ(trace.budget, 20);
  for (int i = 0; i < in.n; ++i) {
    const int from = std::max(0, i - 2);  // step i + 1 sees i - 2 .. i + 1
    std::vector<int> expected;
    for (int j = from; j <= i; ++j) expected.push_back(j);
    EXPECT_EQ(trace.cache[std::size_t(i)], expected) << "step " << i;
    EXPECT_EQ(trace.steps[std::size_t(i)].retained_mass, 1.0);
  }
  EXPECT_THROW(drop_outside_window({0, 1}, -1), std::invalid_argument);
  group.window = -1;
  EXPECT_THROW(group.validate(), std::invalid_argument);
}

}  // namespace
}  // namespace subevict::greedy
