// Tests greedy/eviction/budgets/share_study.hpp, the share study of `simulate --share` and
// subevict.share: its optima in their order and above every rule, its uniform rule against the
// simulator head by head, AdaKV with a floor of k against the uniform rule, a thread count that
// changes nothing, and every refusal before any work.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/generator.hpp"
#include "core/input_error.hpp"
#include "greedy/eviction/budgets/share_study.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/process/head_group.hpp"

namespace subevict::greedy {
namespace {

constexpr double kSlack = 1e-9;  // double sums of the same attention weights in another order

Workload tiny_workload(std::uint64_t seed) { return generate_workload(spec_from_preset("tiny-gqa", 96, 2, seed)); }

ShareStudyOptions quiet_options(bool model, int k) {
  ShareStudyOptions options;
  options.model = model;
  options.budget = k;
  options.quiet = true;
  return options;
}

std::vector<PolicySpec> scorers(const std::string& text) { return parse_policy_list(text, "test", "policies", 16); }

double unit_sum(const std::vector<double>& v, const std::vector<int>& unit) {
  double s = 0.0;
  for (int x : unit) s += v[std::size_t(x)];
  return s;
}

TEST(ShareStudy, OptimaAreOrderedAndNoRuleBeatsTheSharedOptimum) {
  for (bool model : {false, true}) {
    for (std::uint64_t seed : {1u, 2u}) {
      const Workload w = tiny_workload(seed);
      const ShareStudy s = share_study(w, {0, 1}, parse_share_rules(model ? "uniform,adakv,pyramidkv:window_size=4,duo:recent_size=8,sink_size=2" : "uniform,adakv,duo:recent_size=8,sink_size=2", "test", "rules"),
                                       scorers("h2o,tova"), quiet_options(model, 24));
      ASSERT_EQ(s.shares.units.size(), model ? 1u : 2u);
      ASSERT_EQ(s.runs.size(), (model ? 4u : 3u) * 2u);
      for (std::size_t u = 0; u < s.shares.units.size(); ++u) {
        const auto& unit = s.shares.units[u];
        const double uniform = unit_sum(s.optima.uniform, unit), fixed = unit_sum(s.optima.fixed, unit);
        ASSERT_TRUE(s.optima.shared[u].has_value());
        EXPECT_LE(uniform, fixed * (1 + kSlack));
        EXPECT_LE(fixed, *s.optima.shared[u] * (1 + kSlack));
        EXPECT_LE(*s.optima.shared[u], *s.optima.shared_bound[u] * (1 + kSlack));
        long long budgets = 0;
        for (int x : unit) budgets += s.optima.allocation[std::size_t(x)];
        EXPECT_EQ(budgets, (long long)unit.size() * 24);  // the static allocation spends the total
        for (const ShareRuleRun& run : s.runs) {
          // Every rule is one cache of the unit's total over time: no more than the shared optimum.
          EXPECT_LE(unit_sum(run.mass, unit), *s.optima.shared_bound[u] * (1 + kSlack)) << run.rule << " " << run.scorer;
          EXPECT_LE(run.peak[u], (long long)unit.size() * 24) << run.rule;
        }
      }
      for (const ShareRuleRun& run : s.runs) {
        if (run.rule != "uniform") continue;
        for (std::size_t x = 0; x < s.shares.heads.size(); ++x) {
          EXPECT_LE(run.mass[x], s.optima.uniform[x] * (1 + kSlack));  // policy <= OPT_h(k)
        }
      }
    }
  }
}

TEST(ShareStudy, TheUniformRuleIsTheSimulatorHeadByHeadAndAFloorOfKMakesAdaKvUniform) {
  const Workload w = tiny_workload(3);
  const ShareStudy s = share_study(w, {0, 1}, parse_share_rules("uniform,adakv:alpha_safeguard=1", "test", "rules"),
                                   scorers("h2o"), quiet_options(false, 20));
  ASSERT_EQ(s.runs.size(), 2u);
  for (std::size_t x = 0; x < s.shares.heads.size(); ++x) {
    const auto [layer, kv] = s.shares.heads[x];
    SimulationOptions options;
    options.budget = 20;
    auto policy = make_policy(scorers("h2o").front());
    const Trace t = simulate(head_group(w, layer, kv), *policy, options);
    EXPECT_DOUBLE_EQ(s.runs[0].mass[x], t.total_retained_mass()) << "head " << x;
    EXPECT_NEAR(s.runs[1].mass[x], t.total_retained_mass(), 1e-9 * t.total_retained_mass()) << "head " << x;
  }
}

TEST(ShareStudy, ResultsDoNotDependOnTheThreads) {
  const Workload w = tiny_workload(4);
  const auto rules = parse_share_rules("uniform,adakv,duo:recent_size=8,sink_size=2", "test", "rules");
  ShareStudyOptions one = quiet_options(false, 16), two = one;
  two.threads = 2;
  const ShareStudy a = share_study(w, {0, 1}, rules, scorers("h2o,snapkv"), one);
  const ShareStudy b = share_study(w, {0, 1}, rules, scorers("h2o,snapkv"), two);
  EXPECT_EQ(a.optima.uniform, b.optima.uniform);
  EXPECT_EQ(a.optima.fixed, b.optima.fixed);
  EXPECT_EQ(a.optima.shared, b.optima.shared);
  ASSERT_EQ(a.runs.size(), b.runs.size());
  for (std::size_t r = 0; r < a.runs.size(); ++r) {
    EXPECT_EQ(a.runs[r].mass, b.runs[r].mass) << a.runs[r].rule;
    EXPECT_EQ(a.runs[r].peak, b.runs[r].peak) << a.runs[r].rule;
  }
}

TEST(ShareStudy, RefusesBadRequestsNamingTheField) {
  const Workload w = tiny_workload(5);
  const auto expect_refused = [&](const std::string& rules, const std::string& policies, bool model, int k,
                                  const std::string& field) {
    try {
      (void)share_study(w, {0, 1}, parse_share_rules(rules, "test", "rules"), scorers(policies),
                        quiet_options(model, k));
      ADD_FAILURE() << rules << " / " << policies << ": not refused";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  expect_refused("uniform", "random", false, 16, "policies");     // a scorer that does not rank
  expect_refused("pyramidkv", "h2o", false, 16, "rules");         // pyramidkv moves budget between layers
  expect_refused("duo", "h2o", false, 16, "duo: budget");         // 64 streaming slots leave the full heads nothing
  ShareStudyOptions options = quiet_options(false, 16);
  options.curves = "/nonexistent/budget_curve.csv";
  EXPECT_THROW((void)share_study(w, {0, 1}, parse_share_rules("uniform", "test", "rules"), scorers("h2o"), options),
               InputError);
}

}  // namespace
}  // namespace subevict::greedy
