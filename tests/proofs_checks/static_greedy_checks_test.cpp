// Tests proofs_checks/static_greedy_checks.hpp: each check holds with the library's greedy and
// reports a violation for a deliberately wrong optimizer or tie rule.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <string>
#include <memory>
#include <numeric>

#include "core/tolerance.hpp"
#include "greedy/functions/concave_over_modular.hpp"
#include "greedy/exact/exhaustive.hpp"
#include "greedy/functions/weighted_coverage.hpp"
#include "proofs_checks/static_greedy_checks.hpp"

namespace subevict::proofs_checks {
namespace {

/// f(S) = Σ_{j∈S} w_j with w = (0, 0, 0, 1, 1, 1): OPT_3 = 3, the first three elements are worth 0.
std::vector<GreedyInstance> worthless_prefix_instance() {
  auto f = std::make_shared<greedy::ConcaveOverModular>(std::vector<double>{0, 0, 0, 1, 1, 1},
                                                        greedy::Concave::kIdentity);
  return {{"modular", f, 3}};
}

/// A broken optimizer: the first k elements, whatever they are worth.
greedy::Selection first_k(const greedy::SetFunction& f, std::size_t k) {
  greedy::Selection s;
  s.set.resize(k);
  std::iota(s.set.begin(), s.set.end(), greedy::Element{0});
  s.value = f.evaluate(s.set);
  return s;
}

const double kInvE = std::exp(-1.0);

/// The tied tight family (ties towards the columns, which are elements 0..k-1) with every row
/// worth `row_boost` times its own weight more (a private item per row): OPT_k = row_boost k^{k+1},
/// the columns keep k^{k+1} - k (k-1)^k.
GreedyInstance boosted_tight_family(std::size_t k, double row_boost = 1.0) {
  greedy::TightFamily family = greedy::tight_family(k, greedy::TieTowards::kColumns);
  const double row_weight = std::pow(double(k), double(k));  // each row holds k^k
  for (const greedy::Element r : family.rows) {
    if (row_boost == 1.0) break;
    family.sets[r].push_back(family.weights.size());
    family.weights.push_back((row_boost - 1.0) * row_weight);
  }
  return {"tight-family", std::make_shared<greedy::WeightedCoverage>(family.weights, family.sets), k};
}

/// `factor` times `scale`, for a deliberately wrong bound.
BoundFactor scaled(double scale) {
  return [scale](std::size_t k) { return scale * nwf_factor(k); };
}

/// A modular f with values (v, 1) and k = 1: first_k returns the element worth v, OPT = 1.
std::vector<GreedyInstance> two_element_instance(double v) {
  auto f = std::make_shared<greedy::ConcaveOverModular>(std::vector<double>{v, 1.0}, greedy::Concave::kIdentity);
  return {{"modular", f, 1}};
}

/// Noisy greedy against an adversarial oracle that errs by at most eps: at every step it makes the
/// element with the smallest true gain among those within 2 eps of the best gain win (reporting
/// +eps on it and -eps on the others). A correct noisy greedy, as bad as Corollary D.18 allows.
greedy::Selection adversarial_noisy_greedy(const greedy::SetFunction& f, std::size_t k, double epsilon,
                                           std::uint64_t) {
  greedy::Selection s;
  std::vector<bool> taken(f.ground_size(), false);
  for (std::size_t step = 0; step < k; ++step) {
    const double base = f.evaluate(s.set);
    std::vector<double> gain(f.ground_size(), -1.0);
    double best = -1e300;
    for (greedy::Element e = 0; e < f.ground_size(); ++e) {
      if (taken[e]) continue;
      std::vector<greedy::Element> with = s.set;
      with.push_back(e);
      gain[e] = f.evaluate(with) - base;
      best = std::max(best, gain[e]);
    }
    greedy::Element pick = 0;
    double worst = 1e300;
    for (greedy::Element e = 0; e < f.ground_size(); ++e) {
      if (!taken[e] && gain[e] >= best - 2 * epsilon && gain[e] < worst) {
        worst = gain[e];
        pick = e;
      }
    }
    taken[pick] = true;
    s.set.push_back(pick);
  }
  s.value = f.evaluate(s.set);
  return s;
}

TEST(NwfBound, HeldWithTheLibraryGreedy) {
  const CheckResult r = check_nwf_bound(random_monotone_instances(4, 11), library_greedy);
  EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
  EXPECT_EQ(r.instances, 12);
  EXPECT_GE(r.worst_slack, 0.0);
  EXPECT_FALSE(r.counterexample.has_value());
}

RC_GTEST_PROP(NwfBound, HeldOnRandomInstancesWithTheLibraryGreedy, (std::uint64_t seed)) {
  const CheckResult r = check_nwf_bound(random_monotone_instances(1, seed), library_greedy);
  RC_ASSERT(r.outcome == Outcome::held);
  RC_ASSERT(r.worst_slack >= -Tol<double>::sum(10) * 10);
}

TEST(NwfBound, ViolatedByAnOptimizerThatIgnoresTheGains) {
  const CheckResult r = check_nwf_bound(worthless_prefix_instance(), first_k);
  EXPECT_EQ(r.outcome, Outcome::violated);
  ASSERT_TRUE(r.counterexample.has_value());
  // f(S) = 0 against (1 - (2/3)^3) * 3 = 19/9.
  EXPECT_TRUE(near(r.worst_slack, -19.0 / 9.0, Tol<double>::kValue)) << r.worst_slack;
}

TEST(NwfBound, ViolatedByAnOptimizerThatExceedsTheBudget) {
  const auto too_many = [](const greedy::SetFunction& f, std::size_t k) { return first_k(f, k + 1); };
  EXPECT_EQ(check_nwf_bound(worthless_prefix_instance(), too_many).outcome, Outcome::violated);
}

TEST(NwfBound, TightFamilyAttainsTheFactorSoAStrongerFactorFails) {
  // Greedy takes the columns: f(S) = (1 - (1 - 1/k)^k) OPT_k exactly (slack 0), so the bound
  // holds with the right factor and fails with one 1% larger.
  std::vector<GreedyInstance> tight;
  for (std::size_t k = 2; k <= 6; ++k) tight.push_back(boosted_tight_family(k));
  const CheckResult r = check_nwf_bound(tight, library_greedy);
  EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
  EXPECT_LE(std::fabs(r.worst_slack), Tol<double>::kValue) << r.worst_slack;
  const CheckResult stronger = check_nwf_bound(tight, library_greedy, scaled(1.01));
  EXPECT_EQ(stronger.outcome, Outcome::violated);
  EXPECT_EQ(stronger.violations, 5);
}

TEST(NwfBound, ColumnsThreePercentBelowTheFactorAreViolatedUnlessTheFactorIsWeakened) {
  // Rows boosted by 3%: the columns (first_k) reach (1 - (1 - 1/k)^k) OPT_k / 1.03, 3% below the
  // bound; a factor 5% weaker would let them pass.
  const std::vector<GreedyInstance> below = {boosted_tight_family(3, 1.03), boosted_tight_family(5, 1.03)};
  const CheckResult r = check_nwf_bound(below, first_k);
  EXPECT_EQ(r.outcome, Outcome::violated);
  EXPECT_EQ(r.violations, 2);
  // k = 3: f(S) = 57, OPT = 1.03 * 81, slack = 57 - 57 * 1.03.
  EXPECT_TRUE(near(r.worst_slack, std::min(57.0 - 57.0 * 1.03, 10505.0 * (1 - 1.03)), Tol<double>::kValue))
      << r.worst_slack;
  EXPECT_EQ(check_nwf_bound(below, first_k, scaled(0.95)).outcome, Outcome::held);
}

TEST(NwfTightness, GreedyAttainsTheFactorExactly) {
  const CheckResult r = check_nwf_tightness({2, 3, 4, 5}, greedy::TieTowards::kColumns, library_greedy);
  EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
  // theory.md §6: 6/8, 57/81, 700/1024, 10505/15625.
  const double expected[] = {6.0 / 8, 57.0 / 81, 700.0 / 1024, 10505.0 / 15625};
  for (int k = 2; k <= 5; ++k) {
    bool found = false;
    for (const Measurement& m : r.measurements) {
      if (m.name != "ratio_k" + std::to_string(k)) continue;
      found = true;
      EXPECT_TRUE(near(m.value, expected[k - 2], Tol<double>::kValue)) << k << ": " << m.value;
    }
    EXPECT_TRUE(found) << k;
  }
}

TEST(NwfTightness, ViolatedWhenTiesGoTowardsTheRows) {
  // Greedy then takes the rows and finds OPT on the tied family; the tie-free family still holds.
  const CheckResult r = check_nwf_tightness({2, 3, 4}, greedy::TieTowards::kRows, library_greedy);
  EXPECT_EQ(r.outcome, Outcome::violated);
  EXPECT_EQ(r.violations, 3);
  ASSERT_TRUE(r.counterexample.has_value());
}

TEST(NwfTightness, AClosedFormOffByAPermilleIsViolated) {
  for (const double scale : {1.001, 0.999}) {
    const CheckResult r = check_nwf_tightness({2, 3, 4}, greedy::TieTowards::kColumns, library_greedy, scaled(scale));
    EXPECT_EQ(r.outcome, Outcome::violated) << scale;
    EXPECT_EQ(r.violations, 3) << scale;  // the tied families; the tie-free closed form is exact
  }
}

TEST(CorollaryD18, HeldWithTheLibraryNoisyGreedy) {
  const CheckResult r =
      check_corollary_d18(random_monotone_instances(2, 5), {0.0, 0.05, 0.3}, 2, 9, library_noisy_greedy);
  EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
  EXPECT_EQ(r.instances, 6 * 3 * 2);
}

TEST(CorollaryD18, ViolatedByAnOptimizerThatIgnoresTheGains) {
  const auto broken = [](const greedy::SetFunction& f, std::size_t k, double, std::uint64_t) { return first_k(f, k); };
  const CheckResult r = check_corollary_d18(worthless_prefix_instance(), {0.0, 0.01}, 1, 1, broken);
  EXPECT_EQ(r.outcome, Outcome::violated);
  EXPECT_EQ(r.violations, 2);
  ASSERT_TRUE(r.counterexample.has_value());
}

TEST(CorollaryD18, TightFamilyAtZeroNoiseComesWithinFourPercentOfTheOptTerm) {
  // k = 8, eps = 0: greedy reaches 1 - (7/8)^8 = 0.6564 of OPT against 1 - 1/e = 0.6321 (3.8% above),
  // the closest any greedy comes to the OPT term; 5% more fails.
  const std::vector<GreedyInstance> tight = {boosted_tight_family(8)};
  const CheckResult r = check_corollary_d18(tight, {0.0}, 1, 1, library_noisy_greedy);
  EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
  const double opt = std::pow(8.0, 9.0);
  EXPECT_TRUE(near(r.worst_slack, (nwf_factor(8) - (1 - kInvE)) * opt, Tol<double>::kValue)) << r.worst_slack;
  NoisyBoundConstants stronger;
  stronger.opt_factor *= 1.05;
  EXPECT_EQ(check_corollary_d18(tight, {0.0}, 1, 1, library_noisy_greedy, stronger).outcome, Outcome::violated);
}

TEST(CorollaryD18, ColumnsTwoPercentBelowTheOptTermAreViolatedUnlessItIsWeakened) {
  // k = 3, rows boosted so that the columns (57) are 0.98 (1 - 1/e) OPT.
  const double boost = 57.0 / (0.98 * (1 - kInvE)) / 81.0;
  const std::vector<GreedyInstance> below = {boosted_tight_family(3, boost)};
  const auto columns = [](const greedy::SetFunction& f, std::size_t k, double, std::uint64_t) { return first_k(f, k); };
  const CheckResult r = check_corollary_d18(below, {0.0}, 1, 1, columns);
  EXPECT_EQ(r.outcome, Outcome::violated);
  EXPECT_TRUE(near(r.worst_slack, -0.02 * 57.0 / 0.98, Tol<double>::kValue)) << r.worst_slack;
  NoisyBoundConstants weaker;
  weaker.opt_factor *= 0.95;
  EXPECT_EQ(check_corollary_d18(below, {0.0}, 1, 1, columns, weaker).outcome, Outcome::held);
}

TEST(CorollaryD18, NoiseTermPinnedFromBothSides) {
  // k = 1, OPT = 1, eps = 0.2: the bound is (1 - 1/e) - 0.2 (2 - 1/e). A set worth 2% of the noise
  // term above it holds and fails when the noise factor is 5% smaller; one 2% below fails and
  // holds when the noise factor is 5% larger.
  const double opt_term = 1 - kInvE, noise_term = 0.2 * (2 - kInvE);
  const auto first = [](const greedy::SetFunction& f, std::size_t k, double, std::uint64_t) { return first_k(f, k); };
  NoisyBoundConstants stronger, weaker;
  stronger.noise_factor *= 0.95;
  weaker.noise_factor *= 1.05;
  const auto above = two_element_instance(opt_term - 0.98 * noise_term);
  EXPECT_EQ(check_corollary_d18(above, {0.2}, 1, 1, first).outcome, Outcome::held);
  EXPECT_EQ(check_corollary_d18(above, {0.2}, 1, 1, first, stronger).outcome, Outcome::violated);
  const auto below = two_element_instance(opt_term - 1.02 * noise_term);
  EXPECT_EQ(check_corollary_d18(below, {0.2}, 1, 1, first).outcome, Outcome::violated);
  EXPECT_EQ(check_corollary_d18(below, {0.2}, 1, 1, first, weaker).outcome, Outcome::held);
}

TEST(CorollaryD18, AdversarialNoiseStaysFarFromTheNoiseTerm) {
  // The worst an oracle within +-eps can do leaves a slack of at least k (2 (1 - 1/k)^k - 1/e) eps
  // >= 0.13 k eps for k >= 2, i.e. 8% of the noise term k (2 - 1/e) eps (static_greedy_checks.hpp):
  // no correct noisy greedy can expose a noise factor 5% too small. Measured here on the tight
  // families and random instances at eps = 0.01..0.3 OPT / k.
  std::vector<GreedyInstance> instances = random_monotone_instances(3, 17);
  for (std::size_t k = 2; k <= 5; ++k) instances.push_back(boosted_tight_family(k));
  const std::vector<double> levels = {0.01, 0.05, 0.1, 0.3};
  const CheckResult r = check_corollary_d18(instances, levels, 1, 1, adversarial_noisy_greedy);
  EXPECT_EQ(r.outcome, Outcome::held) << r.key_number;
  double closest = 1e300;  // smallest slack / (k (2 - 1/e) eps) over the runs with k >= 2
  for (const GreedyInstance& instance : instances) {
    if (instance.k < 2) continue;
    greedy::ExhaustiveOptions options;
    options.k = instance.k;
    const double opt = greedy::exhaustive_optimum(*instance.f, options).value;
    for (const double level : levels) {
      const double eps = level * opt / double(instance.k);
      const double value = adversarial_noisy_greedy(*instance.f, instance.k, eps, 0).value;
      const double noise = double(instance.k) * (2 - kInvE) * eps;
      closest = std::min(closest, (value - ((1 - kInvE) * opt - noise)) / noise);
    }
  }
  EXPECT_GE(closest, (2 * 0.25 - kInvE) / (2 - kInvE) - Tol<double>::kValue) << closest;
  RecordProperty("closest_slack_over_noise_term", std::to_string(closest));  // 0.884 measured
}

}  // namespace
}  // namespace subevict::proofs_checks
