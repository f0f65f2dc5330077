// Tests greedy/eviction/evaluation/shared_simulator.hpp (one cache shared by several heads, AdaKV's
// rule) and the budget rules (budgets/pyramidkv_share.hpp, budgets/duo_share.hpp): the shared run
// against simulate() head by head where the floor pins every head to k, against a combinatorial
// re-statement of the rule with scripted keys, its objective against the schedule's value and the
// shared optimum, and the budget rules against their formulas and brute force.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "core/attention.hpp"
#include "core/input_error.hpp"
#include "core/tolerance.hpp"
#include "greedy/eviction/budgets/duo_share.hpp"
#include "greedy/eviction/budgets/pyramidkv_share.hpp"
#include "greedy/eviction/evaluation/shared_simulator.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/optimum/shared_optimum.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/policies/policy_support.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"
#include "tests/greedy/naive_eviction.hpp"

namespace subevict::greedy {
namespace {

std::vector<naive::Instance> random_heads(int heads, int n) {
  const auto seed = *rc::gen::inRange<std::uint64_t>(0, 1u << 30);
  const int d = *rc::gen::inRange(1, 7), g = *rc::gen::inRange(1, 3);
  std::vector<naive::Instance> out;
  for (int h = 0; h < heads; ++h) out.push_back(naive::random_instance(seed + 7919 * h, n, d, g, 2.0));
  return out;
}

std::vector<HeadGroup> groups(const std::vector<naive::Instance>& in) {
  std::vector<HeadGroup> out;
  for (const auto& i : in) out.push_back(i.group());
  return out;
}

RC_GTEST_PROP(SharedSimulator, AFloorOfKIsSimulateHeadByHeadBitForBit, ()) {
  const int heads = *rc::gen::inRange(1, 4), n = *rc::gen::inRange(1, 30), k = *rc::gen::inRange(9, 14);  // > snapkv's window
  const auto in = random_heads(heads, n);
  auto group = groups(in);
  const int window = *rc::gen::element(0, *rc::gen::inRange(1, n + 2));  // the layer's, shared by its heads
  for (HeadGroup& g : group) g.window = window;
  const std::string name = *rc::gen::element<std::string>("h2o", "tova", "snapkv", "streamingllm", "local",
                                                          "keydiff", "expected_attention", "observed_attention");
  std::vector<std::unique_ptr<EvictionPolicy>> owned;
  std::vector<EvictionPolicy*> policies;
  for (int h = 0; h < heads; ++h) {
    owned.push_back(make_policy(name));
    policies.push_back(owned.back().get());
  }
  SharedSimulationOptions options;
  options.budget = k;
  options.floor = k;
  options.threads = *rc::gen::inRange(1, 3);
  const SharedRun run = simulate_shared(group, policies, options);
  for (int h = 0; h < heads; ++h) {
    SimulationOptions alone;
    alone.budget = k;
    auto policy = make_policy(name);
    const Trace direct = simulate(group[h], *policy, alone);
    RC_ASSERT(direct.last_step() == run.last_step[h]);
    for (int i = 0; i < n; ++i) {
      RC_ASSERT(run.traces[h].steps[i].evicted == direct.steps[i].evicted);
      RC_ASSERT(run.traces[h].steps[i].retained_mass == direct.steps[i].retained_mass);
      RC_ASSERT(run.traces[h].steps[i].output_error == direct.steps[i].output_error);
      // The token leaving the window frees its slot: a head holds k, or all that query i + 1 sees.
      RC_ASSERT(run.occupancy(i, h) == std::min(i + 1 - first_visible_key(i + 1, window), k));
    }
  }
}

/// A ranked policy whose keys are a fixed table: key(t) = table[t], +infinity where never evicted.
class ScriptedPolicy final : public policies::RankedPolicy<ScriptedPolicy> {
 public:
  explicit ScriptedPolicy(std::vector<double> table) : table_(std::move(table)) {}
  [[nodiscard]] std::string name() const override { return "scripted"; }
  [[nodiscard]] double key(int, Token t) const { return table_[std::size_t(t)]; }
  [[nodiscard]] bool eligible(int, Token t) const { return std::isfinite(table_[std::size_t(t)]); }

 private:
  std::vector<double> table_;
};

RC_GTEST_PROP(SharedSimulator, EvictsTheSmallestKeysOverHeadsAboveTheFloor, ()) {
  const int heads = *rc::gen::inRange(1, 5), n = *rc::gen::inRange(1, 25), k = *rc::gen::inRange(1, 6);
  const int floor = *rc::gen::inRange(0, k + 1);
  const long long total = *rc::gen::inRange<long long>(std::max<long long>(1, (long long)heads * floor), heads * k + 4);
  const auto in = random_heads(heads, n);
  std::vector<std::vector<double>> table(heads, std::vector<double>(n));
  for (auto& row : table) {
    for (double& x : row) x = double(*rc::gen::inRange(0, 6));  // small integers: ties across heads and tokens
  }
  std::vector<std::unique_ptr<EvictionPolicy>> owned;
  std::vector<EvictionPolicy*> policies;
  for (int h = 0; h < heads; ++h) {
    owned.push_back(std::make_unique<ScriptedPolicy>(table[h]));
    policies.push_back(owned.back().get());
  }
  SharedSimulationOptions options;
  options.budget = k;
  options.floor = floor;
  options.total = total;
  const SharedRun run = simulate_shared(groups(in), policies, options);
  // The rule restated: sets per head; after the arrivals, the excess leaves in (key, token, head)
  // order, a head at the floor keeps its members.
  std::vector<std::vector<int>> cached(heads);
  std::vector<std::vector<int>> last(heads, std::vector<int>(n, n - 1));
  for (int i = 0; i < n; ++i) {
    long long size = 0;
    for (auto& c : cached) {
      c.push_back(i);
      size += (long long)c.size();
    }
    std::vector<std::tuple<double, int, int>> order;
    for (int h = 0; h < heads; ++h)
      for (int t : cached[h]) order.emplace_back(table[h][t], t, h);
    std::sort(order.begin(), order.end());
    for (const auto& [key, t, h] : order) {
      if (size <= total) break;
      if (int(cached[h].size()) <= floor) continue;
      cached[h].erase(std::find(cached[h].begin(), cached[h].end(), t));
      last[h][t] = i - 1;
      --size;
    }
    long long held = 0;
    for (int h = 0; h < heads; ++h) {
      RC_ASSERT(run.occupancy(i, h) == int(cached[h].size()));
      held += run.occupancy(i, h);
    }
    RC_ASSERT(held <= total);
  }
  RC_ASSERT(run.last_step == last);
}

RC_GTEST_PROP(SharedSimulator, ItsMassIsItsScheduleValueAndAtMostTheSharedOptimum, ()) {
  const int heads = *rc::gen::inRange(1, 4), n = *rc::gen::inRange(1, 16), k = *rc::gen::inRange(1, 6);
  const auto in = random_heads(heads, n);
  const auto group = groups(in);
  std::vector<std::unique_ptr<EvictionPolicy>> owned;
  std::vector<EvictionPolicy*> policies;
  for (int h = 0; h < heads; ++h) {
    owned.push_back(make_policy(*rc::gen::element<std::string>("h2o", "tova", "local")));
    policies.push_back(owned.back().get());
  }
  SharedSimulationOptions options;
  options.budget = k;
  options.floor = *rc::gen::inRange(0, k + 1);
  const SharedRun run = simulate_shared(group, policies, options);
  std::vector<Eigen::MatrixXd> gains;
  double scheduled = 0.0;
  for (int h = 0; h < heads; ++h) {
    gains.push_back(gain_matrix(group[h]));
    scheduled += schedule_value(gains.back(), run.last_step[h]);
  }
  const double tolerance = Tol<double>::sum(std::size_t(n) * n) * std::max(1.0, scheduled) * heads;
  RC_ASSERT(std::abs(run.total_retained_mass() - scheduled) <= tolerance);
  const SharedOptimum best = shared_optimum(gains, (long long)heads * k);
  RC_ASSERT(run.total_retained_mass() <= best.upper_bound + tolerance);
}

TEST(SharedSimulator, ReportsTheStepWhereFloorsAndProtectedMembersBlockTheEvictions) {
  const auto in = naive::random_instance(5, 12, 4, 1, 2.0);
  const std::vector<HeadGroup> group{in.group(), in.group()};
  ScriptedPolicy first(std::vector<double>(12, std::numeric_limits<double>::infinity()));
  ScriptedPolicy second(std::vector<double>(12, std::numeric_limits<double>::infinity()));
  SharedSimulationOptions options;
  options.budget = 3;
  try {
    (void)simulate_shared(group, {&first, &second}, options);
    FAIL() << "a cache that cannot evict ran on";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("at step 3"), std::string::npos) << e.what();
  }
}

TEST(SharedSimulator, RefusesWhatCannotShareACache) {
  const auto in = naive::random_instance(5, 12, 4, 1, 2.0);
  const std::vector<HeadGroup> group{in.group(), in.group()};
  auto h2o = make_policy("h2o"), other = make_policy("h2o"), random = make_policy("random");
  SharedSimulationOptions options;
  options.budget = 4;
  EXPECT_THROW((void)simulate_shared({}, {}, options), InputError);
  EXPECT_THROW((void)simulate_shared(group, {h2o.get(), random.get()}, options), InputError);  // does not rank
  EXPECT_THROW((void)simulate_shared(group, {h2o.get()}, options), InputError);               // one policy short
  options.floor = 5;
  EXPECT_THROW((void)simulate_shared(group, {h2o.get(), other.get()}, options), InputError);  // floor > k
  options.floor = 3;
  options.total = 5;
  EXPECT_THROW((void)simulate_shared(group, {h2o.get(), other.get()}, options), InputError);  // T < H floor
  const auto shorter = naive::random_instance(6, 10, 4, 1, 2.0);
  options = {};
  options.budget = 4;
  EXPECT_THROW((void)simulate_shared({in.group(), shorter.group()}, {h2o.get(), other.get()}, options), InputError);
}

TEST(PyramidBudget, FollowsTheScheduleAndFallsBackWhereItsConditionFails) {
  // n = 2048, k = 410, W = 0, beta = 20: min = 20.5, max = 799.5, linear over 30 layers.
  int sum = 0;
  for (int l = 0; l < 30; ++l) {
    const int b = pyramid_layer_budget(l, 30, 410, 2048, 0, 20.0);
    const double exact = 799.5 - l * (799.5 - 20.5) / 29.0;
    EXPECT_LE(std::abs(b - exact), 0.5) << l;
    if (l > 0) EXPECT_LE(b, pyramid_layer_budget(l - 1, 30, 410, 2048, 0, 20.0));
    sum += b;
  }
  EXPECT_LE(std::abs(sum - 30 * 410), 15);  // the mean is k up to rounding
  EXPECT_EQ(pyramid_layer_budget(0, 30, 410, 2048, 0, 20.0), 800);   // 799.5 rounds half to even
  // kvpress's default window 64 needs k / beta >= 64: at k = 410 every layer falls back to k.
  for (int l = 0; l < 30; ++l) EXPECT_EQ(pyramid_layer_budget(l, 30, 410, 2048, 64, 20.0), 410);
  // max capped at n − W: k = 1500, n = 2048, W = 64 -> max = 1984, min = 1016, mean still k.
  EXPECT_EQ(pyramid_layer_budget(0, 3, 1500, 2048, 64, 20.0), 1984);
  EXPECT_EQ(pyramid_layer_budget(2, 3, 1500, 2048, 64, 20.0), 1016);
  EXPECT_EQ(pyramid_layer_budget(0, 1, 100, 2048, 0, 20.0), 100);  // one layer
  EXPECT_THROW((void)pyramid_layer_budget(3, 3, 100, 2048, 0, 20.0), InputError);
  EXPECT_THROW((void)pyramid_layer_budget(0, 3, 100, 2048, 0, 0.5), InputError);
  EXPECT_THROW((void)pyramid_layer_budget(0, 3, 0, 2048, 0, 20.0), InputError);
}

RC_GTEST_PROP(StreamingLoss, IsTheMassOutsideSinksAndRecentKeysOfTheExactRows, ()) {
  const int n = *rc::gen::inRange(1, 20);
  const auto in = random_heads(1, n).front();
  const HeadGroup group = in.group();
  const int sink = *rc::gen::inRange(0, 4), recent = *rc::gen::inRange(1, 6), calibration = *rc::gen::inRange(1, n + 1);
  const Eigen::MatrixXd w = gain_matrix(group);  // Σ over the query heads of the causal rows
  double lost = 0.0;
  for (int i = 0; i < calibration; ++i) {
    double kept = 0.0;
    for (int j = 0; j <= i; ++j) kept += (j < sink || j > i - recent) ? w(i, j) : 0.0;
    lost += group.group_size() - kept;
  }
  const double expected = lost / group.group_size() / calibration;
  RC_ASSERT(std::abs(streaming_loss(group, sink, recent, calibration) - expected) <= 1e-12);
}

RC_GTEST_PROP(StreamingHeads, TakesTheRoundedShareWithTheSmallestLosses, ()) {
  const auto losses = *rc::gen::nonEmpty(rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 5)));
  const double ratio = *rc::gen::element(0.0, 0.25, 0.5, 0.75, 1.0);
  std::vector<double> x(losses.begin(), losses.end());
  const std::vector<bool> streaming = streaming_heads(x, ratio);
  const long long count = std::count(streaming.begin(), streaming.end(), true);
  RC_ASSERT(count == (long long)std::nearbyint(ratio * double(x.size())));  // half to even, as the default mode
  for (std::size_t a = 0; a < x.size(); ++a)
    for (std::size_t b = 0; b < x.size(); ++b)
      if (streaming[a] && !streaming[b]) RC_ASSERT(x[a] < x[b] || (x[a] == x[b] && a < b));
}

TEST(FullHeadBudget, SplitsWhatTheStreamingHeadsLeave) {
  EXPECT_EQ(full_head_budget(300, 3, 1, 64, 2048), 118);   // (300 − 64) / 2
  EXPECT_EQ(full_head_budget(9000, 3, 1, 64, 2048), 2048);  // capped at n
  EXPECT_EQ(full_head_budget(192, 3, 3, 64, 2048), 0);      // every head streams
  EXPECT_THROW((void)full_head_budget(100, 3, 2, 64, 2048), InputError);
  EXPECT_THROW((void)full_head_budget(100, 2, 2, 64, 2048), InputError);
  EXPECT_THROW((void)streaming_heads({1.0, 2.0}, 1.5), InputError);
}

}  // namespace
}  // namespace subevict::greedy
