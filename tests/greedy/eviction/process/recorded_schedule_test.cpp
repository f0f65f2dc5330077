// Recorded schedules (greedy/eviction/process/recorded_schedule.*) and the overlap of two schedules
// (greedy/eviction/process/schedule_overlap.*): round trips of both recorded forms, every malformed
// case with its message, the to-process conversion, and the overlap against brute force over
// explicit sets.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/generator.hpp"
#include "core/input_error.hpp"
#include "core/tolerance.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/process/recorded_schedule.hpp"
#include "greedy/eviction/process/schedule_overlap.hpp"

namespace subevict::greedy {
namespace {

using Steps = std::vector<std::int64_t>;
using Mask = std::vector<std::uint8_t>;
constexpr auto kExact = ScheduleAdmission::kExact;
constexpr auto kToProcess = ScheduleAdmission::kToProcess;

/// A random process schedule at budget k: once full, evict a random member of G_i.
std::vector<int> random_process_schedule(int n, int k) {
  std::vector<int> last(static_cast<std::size_t>(n), n - 1);
  std::vector<int> cache;
  for (int i = 0; i < n; ++i) {
    cache.push_back(i);
    if (int(cache.size()) > k) {
      const std::size_t victim = *rc::gen::inRange<std::size_t>(0, cache.size());
      last[std::size_t(cache[victim])] = i - 1;
      cache.erase(cache.begin() + std::ptrdiff_t(victim));
    }
  }
  return last;
}

/// The message of the InputError `f` throws ("" when it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

/// Row-major n x n mask from explicit caches S_i.
Mask mask_of(int n, const std::vector<std::vector<int>>& caches) {
  Mask m(std::size_t(n) * n, 0);
  for (int i = 0; i < n; ++i)
    for (int j : caches[std::size_t(i)]) m[std::size_t(i) * n + j] = 1;
  return m;
}

TEST(RecordedSchedule, HandScheduleInBothForms) {
  // n = 5, k = 2: S_0 = {0}, S_1 = {0, 1}, S_2 = {0, 2} (1 evicted), S_3 = {0, 2} (3 evicted on
  // arrival), S_4 = {2, 4} (0 evicted). Eviction steps: 0 -> 4, 1 -> 2, 2 -> never (5), 3 -> 3,
  // 4 -> never (5).
  const std::vector<int> t{3, 1, 4, 2, 4};
  const Steps e{4, 2, 5, 3, 5};
  const Mask m = mask_of(5, {{0}, {0, 1}, {0, 2}, {0, 2}, {2, 4}});
  EXPECT_EQ(eviction_steps(t), e);
  EXPECT_EQ(keep_mask(t), m);
  EXPECT_TRUE(is_process_schedule(t, 2));
  for (const AdmittedSchedule& a : {admit_eviction_steps(e, 2, 0, kExact, "f"), admit_keep_mask(m, 5, 2, 0, kExact, "f"),
                                    admit_last_step(t, 2, 0, kExact, "f")}) {
    EXPECT_EQ(a.last_step, t);
    EXPECT_FALSE(a.converted);
    EXPECT_EQ(a.changed_tokens, 0);
  }
  EXPECT_THROW((void)eviction_steps({0, -2}), std::invalid_argument);
  EXPECT_THROW((void)keep_mask({5}), std::invalid_argument);
  EXPECT_EQ(to_string(kExact), "exact");
  EXPECT_EQ(to_string(kToProcess), "to-process");
}

RC_GTEST_PROP(RecordedSchedule, BothFormsRoundTripEveryProcessSchedule, ()) {
  const int n = *rc::gen::inRange(0, 30);
  const int k = *rc::gen::inRange(1, 12);
  const std::vector<int> t = random_process_schedule(n, k);
  RC_ASSERT(is_process_schedule(t, k));
  RC_ASSERT(admit_eviction_steps(eviction_steps(t), k, 0, kExact, "f").last_step == t);
  RC_ASSERT(admit_keep_mask(keep_mask(t), n, k, 0, kExact, "f").last_step == t);
  // The mask row i is exactly S_i = {j <= i : i < e_j}.
  const Steps e = eviction_steps(t);
  const Mask m = keep_mask(t);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) RC_ASSERT(m[std::size_t(i) * n + j] == (j <= i && i < e[std::size_t(j)] ? 1 : 0));
}

TEST(RecordedSchedule, StepsOutsideTheirRangeNameTheToken) {
  // n = 3, k = 3: nothing needs evicting.
  EXPECT_EQ(error_of([] { (void)admit_eviction_steps(Steps{3, -1, 3}, 3, 0, kExact, "f.npy"); }),
            "f.npy: token 1: expected an eviction step in [1, 3] (3 = never evicted), got -1 (write n, not -1, "
            "for a token never evicted)");
  EXPECT_EQ(error_of([] { (void)admit_eviction_steps(Steps{3, 3, 4}, 3, 0, kExact, "f.npy"); }),
            "f.npy: token 2: expected an eviction step in [2, 3] (3 = never evicted), got 4");
}

TEST(RecordedSchedule, EvictionBeforeArrivalNamesTheStep) {
  // Token 2 evicted at step 1, before it arrives at step 2.
  const std::string m = error_of([] { (void)admit_eviction_steps(Steps{4, 4, 1, 4}, 4, 0, kExact, "f"); });
  EXPECT_NE(m.find("f: step 1: expected only tokens that have arrived evicted at step 1"), std::string::npos) << m;
  EXPECT_NE(m.find("got token 2 evicted at step 1 before it arrives"), std::string::npos) << m;
  // In a mask: token 3 in S_1.
  const std::string mm = error_of(
      [] { (void)admit_keep_mask(mask_of(4, {{0}, {0, 1, 3}, {0, 1, 2}, {0, 1, 2, 3}}), 4, 4, 0, kExact, "f"); });
  EXPECT_NE(mm.find("f: step 1: expected only tokens that have arrived in the cache after step 1"), std::string::npos)
      << mm;
  EXPECT_NE(mm.find("got token 3 kept at step 1 before it arrives"), std::string::npos) << mm;
}

TEST(RecordedSchedule, ATokenEvictedTwiceIsRejectedAtItsReturn) {
  // k = 2: token 0 evicted at step 2, back in S_3 (then it would have to be evicted again).
  const Mask m = mask_of(5, {{0}, {0, 1}, {1, 2}, {0, 2}, {2, 4}});
  EXPECT_EQ(error_of([&] { (void)admit_keep_mask(m, 5, 2, 0, kExact, "f"); }),
            "f: step 3: expected an evicted token never returns (each token is evicted at most once), got token 0 "
            "back in the cache at step 3 after its eviction at step 2");
  // Evicted on arrival (never cached) and then cached: its eviction step is its arrival.
  const Mask arrival = mask_of(3, {{0}, {0}, {0, 1}});
  EXPECT_NE(error_of([&] { (void)admit_keep_mask(arrival, 3, 1, 0, kExact, "f"); })
                .find("token 1 back in the cache at step 2 after its eviction at step 1"),
            std::string::npos);
}

TEST(RecordedSchedule, OverBudgetNamesTheStepAndTheSize) {
  // k = 2 but nothing is ever evicted: S_2 holds 3 tokens.
  const std::string expected =
      "f: step 2: expected a cache of at most k = 2 tokens (the budget), got 3 tokens after step 2 (nothing evicted)";
  EXPECT_EQ(error_of([] { (void)admit_eviction_steps(Steps{4, 4, 4, 4}, 2, 0, kExact, "f"); }), expected);
  EXPECT_EQ(error_of([] { (void)admit_eviction_steps(Steps{4, 4, 4, 4}, 2, 0, kToProcess, "f"); }), expected);
  EXPECT_EQ(error_of([] { (void)admit_keep_mask(keep_mask({3, 3, 3, 3}), 4, 2, 0, kExact, "f"); }), expected);
}

TEST(RecordedSchedule, ProcessRulesAreExactUnlessConversionIsAsked) {
  // k = 3, n = 5: token 0 evicted at step 1 while the cache held 1 < 3 tokens.
  const Steps early{1, 5, 5, 5, 4};
  EXPECT_EQ(error_of([&] { (void)admit_eviction_steps(early, 3, 0, kExact, "f"); }),
            "f: step 1: expected no eviction while the cache holds fewer than k = 3 tokens (it held 1; the process "
            "evicts only when full; docs/eviction.md: recorded decisions), got token 0 evicted");
  // Two evictions in one full step: k = 2, token 2 is evicted on arrival (S_2 = {0, 1}), then
  // tokens 0 and 1 both leave at step 3 (S_3 = {3}).
  const Steps two{3, 3, 2, 4};
  EXPECT_EQ(error_of([&] { (void)admit_eviction_steps(two, 2, 0, kExact, "f"); }),
            "f: step 3: expected exactly one eviction per step once the cache is full (k = 2), got 2 evictions "
            "(tokens 0 and 1)");
  // The conversion accepts both and returns to_process_schedule, which keeps every token as long.
  for (const auto& [e, k] : {std::pair{early, 3}, std::pair{two, 2}}) {
    const AdmittedSchedule a = admit_eviction_steps(e, k, 0, kToProcess, "f");
    std::vector<int> t(e.size());
    for (std::size_t j = 0; j < e.size(); ++j) t[j] = int(e[j]) - 1;
    EXPECT_EQ(a.last_step, to_process_schedule(t, k));
    EXPECT_TRUE(is_process_schedule(a.last_step, k));
    EXPECT_TRUE(a.converted);
    int changed = 0;
    for (std::size_t j = 0; j < t.size(); ++j) {
      EXPECT_GE(a.last_step[j], t[j]);
      changed += a.last_step[j] != t[j];
    }
    EXPECT_EQ(a.changed_tokens, changed);
  }
}

TEST(RecordedSchedule, TheFirstBadStepIsNamedWhateverTheRule) {
  // Mask, k = 2: over budget at step 2, and a returning token at step 4: step 2 is named.
  const Mask m = mask_of(5, {{0}, {0, 1}, {0, 1, 2}, {1, 2}, {0, 1, 2}});
  EXPECT_NE(error_of([&] { (void)admit_keep_mask(m, 5, 2, 0, kExact, "f"); }).find("f: step 2: "), std::string::npos);
  // Steps: an eviction before arrival at step 3 and an over-full cache at step 2 (k = 2).
  EXPECT_NE(error_of([] { (void)admit_eviction_steps(Steps{5, 5, 5, 5, 3}, 2, 0, kExact, "f"); }).find("f: step 2: "),
            std::string::npos);
  // A keep-mask entry other than 0/1 is named with its step.
  Mask bad = keep_mask({2, 2, 2});
  bad[2 * 3 + 1] = 7;
  EXPECT_EQ(error_of([&] { (void)admit_keep_mask(bad, 3, 3, 0, kExact, "f"); }),
            "f: step 2: expected keep-mask entries 0 or 1, got entry (2, 1) = 7");
}

TEST(RecordedSchedule, PrefillCompressesAtItsLastStepOnly) {
  // n = 6, k = 2, P = 4: steps 0..2 attend the whole prefix, step 3 keeps {1, 3}, then streaming.
  const Steps ok{3, 6, 3, 5, 4, 6};  // S_3 = {1, 3}; step 4 evicts 4 on arrival; step 5 evicts 3
  const AdmittedSchedule a = admit_eviction_steps(ok, 2, 4, kExact, "f");
  EXPECT_EQ(a.last_step, (std::vector<int>{2, 5, 2, 4, 3, 5}));
  EXPECT_EQ(error_of([] { (void)admit_eviction_steps(Steps{2, 6, 6, 5, 4, 6}, 2, 4, kExact, "f"); }),
            "f: step 2: expected no eviction during the prefill steps 0..2 (prefill 4 > budget 2: the prompt is "
            "compressed at step 3), got token 0 evicted");
  EXPECT_NE(error_of([] { (void)admit_eviction_steps(Steps{6, 6, 3, 5, 4, 6}, 2, 4, kExact, "f"); })
                .find("f: step 3: expected a cache of at most k = 2 tokens"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)admit_eviction_steps(ok, 2, 4, kToProcess, "f"); }).find("f: admission: "),
            std::string::npos);
  // P <= k: the prompt streams like any tokens (the process rules apply from step 0).
  EXPECT_EQ(admit_eviction_steps(Steps{3, 3, 3}, 3, 2, kExact, "f").last_step, (std::vector<int>{2, 2, 2}));
  EXPECT_NE(error_of([] { (void)admit_eviction_steps(Steps{3, 3, 3}, 3, 4, kExact, "f"); }).find("f: prefill: "),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)admit_eviction_steps(Steps{1}, 0, 0, kExact, "f"); }).find("f: budget: "),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)admit_keep_mask(Mask(5, 0), 2, 1, 0, kExact, "f"); }).find("f: shape: "),
            std::string::npos);
}

// ---- overlap ---------------------------------------------------------------------------------

/// G_i of a schedule as an explicit set.
std::set<int> attended(const std::vector<int>& t, int i) {
  std::set<int> g{i};
  for (int j = 0; j < i; ++j)
    if (t[std::size_t(j)] >= i - 1) g.insert(j);
  return g;
}

TEST(ScheduleOverlap, HandExample) {
  // n = 4. A: t = {3, 1, 1, 3} (G_3 = {0, 3}); B: t = {0, 3, 3, 3} (0 evicted after step 0).
  Eigen::MatrixXd w = Eigen::MatrixXd::Zero(4, 4);
  w << 1, 0, 0, 0,  //
      1, 2, 0, 0,   //
      1, 2, 4, 0,   //
      1, 2, 4, 8;
  const ScheduleOverlap o = schedule_overlap(w, {3, 1, 1, 3}, {0, 3, 3, 3});
  // G(A): {0}, {0,1}, {0,1,2}, {0,3}; G(B): {0}, {0,1}, {1,2}, {1,2,3}.
  EXPECT_EQ(o.jaccard, Eigen::Vector4d(1, 1, 2.0 / 3, 1.0 / 4));
  EXPECT_EQ(o.only_first_mass, Eigen::Vector4d(0, 0, 1, 1));
  EXPECT_EQ(o.only_second_mass, Eigen::Vector4d(0, 0, 0, 6));
  EXPECT_DOUBLE_EQ(o.mean_jaccard(), (1 + 1 + 2.0 / 3 + 0.25) / 4);
  EXPECT_DOUBLE_EQ(o.mean_only_first_mass(), 0.5);
  EXPECT_DOUBLE_EQ(o.mean_only_second_mass(), 1.5);
  EXPECT_THROW((void)schedule_overlap(w, {3, 1, 1}, {0, 3, 3, 3}), std::invalid_argument);
  EXPECT_THROW((void)schedule_overlap(w, {3, 1, 1, 3}, {0, 3, 3, 4}), std::invalid_argument);
}

RC_GTEST_PROP(ScheduleOverlap, MatchesExplicitSetsAndDecomposesTheGap, ()) {
  const int n = *rc::gen::inRange(1, 25);
  const int ka = *rc::gen::inRange(1, 8), kb = *rc::gen::inRange(1, 8);
  const std::vector<int> a = random_process_schedule(n, ka), b = random_process_schedule(n, kb);
  Eigen::MatrixXd w = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) w(i, j) = *rc::gen::inRange(0, 9) / 8.0;  // dyadic: exact sums
  const ScheduleOverlap o = schedule_overlap(w, a, b);
  const Eigen::VectorXd ra = schedule_step_mass(w, a), rb = schedule_step_mass(w, b);
  for (int i = 0; i < n; ++i) {
    const std::set<int> ga = attended(a, i), gb = attended(b, i);
    std::vector<int> inter, uni;
    std::set_intersection(ga.begin(), ga.end(), gb.begin(), gb.end(), std::back_inserter(inter));
    std::set_union(ga.begin(), ga.end(), gb.begin(), gb.end(), std::back_inserter(uni));
    double only_a = 0, only_b = 0;
    for (int j : ga) only_a += gb.count(j) ? 0.0 : w(i, j);
    for (int j : gb) only_b += ga.count(j) ? 0.0 : w(i, j);
    RC_ASSERT(o.jaccard[i] == double(inter.size()) / double(uni.size()));
    RC_ASSERT(o.only_first_mass[i] == only_a);
    RC_ASSERT(o.only_second_mass[i] == only_b);
    RC_ASSERT(ra[i] - rb[i] == only_a - only_b);  // exact: dyadic gains
  }
  // A schedule against itself: full overlap, nothing apart.
  const ScheduleOverlap self = schedule_overlap(w, a, a);
  RC_ASSERT(self.jaccard.minCoeff() == 1.0);
  RC_ASSERT(self.only_first_mass.maxCoeff() == 0.0 && self.only_second_mass.maxCoeff() == 0.0);
}

RC_GTEST_PROP(ScheduleOverlap, StreamedRowsEqualTheDenseGainMatrix, ()) {
  const int n = *rc::gen::inRange(2, 150);  // more than one block of 64 query rows
  const int k = *rc::gen::inRange(1, n + 1);
  const Workload w = generate_workload(spec_from_preset("tiny-gqa", n, 1, *rc::gen::inRange<std::uint64_t>(0, 1000)));
  const HeadGroup group = head_group(w, 0, *rc::gen::inRange(0, w.shape().kv_heads));
  const std::vector<int> a = random_process_schedule(n, k), b = random_process_schedule(n, k);
  const ScheduleOverlap dense = schedule_overlap(gain_matrix(group), a, b);
  const ScheduleOverlap streamed = schedule_overlap(group, a, b);
  RC_ASSERT(streamed.jaccard == dense.jaccard);  // counts: exact
  const double tol = Tol<double>::sum(std::size_t(group.group_size() * n));  // sums of g n products in another order
  RC_ASSERT((streamed.only_first_mass - dense.only_first_mass).cwiseAbs().maxCoeff() <= tol);
  RC_ASSERT((streamed.only_second_mass - dense.only_second_mass).cwiseAbs().maxCoeff() <= tol);
}

}  // namespace
}  // namespace subevict::greedy
