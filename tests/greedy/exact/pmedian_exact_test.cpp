// Tests greedy/exact/pmedian_lagrangian.hpp, greedy/exact/pmedian_local_search.hpp and
// greedy/exact/pmedian_branch_and_bound.hpp: against exhaustive enumeration of the p-subsets on
// random small graphs (the Lagrangian bound never exceeds a node's optimum, reduced-cost fixing
// never removes a set better than the incumbent, the search returns the optimum), and against the
// published optima of OR-Library pmed1..pmed5 (Beasley 1985, tests/data/orlib-pmed/pmedopt.txt).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>

#include "core/input_error.hpp"
#include "greedy/exact/pmedian_branch_and_bound.hpp"
#include "greedy/exact/pmedian_lagrangian.hpp"
#include "greedy/exact/pmedian_local_search.hpp"

namespace subevict::greedy {
namespace {

/// A random connected graph on 2..9 vertices (a random spanning path plus random extra edges) with
/// integral costs 1..20, or dyadic costs (multiples of 1/8) when `integral` is false; shortest-path
/// distances.
PMedianInstance random_instance(bool integral) {
  const auto n = *rc::gen::inRange<std::size_t>(2, 10);
  PMedianInstance instance;
  instance.n = n;
  instance.p = *rc::gen::inRange<std::size_t>(1, n + 1);
  const auto cost = [&] {
    return integral ? double(*rc::gen::inRange(1, 21)) : *rc::gen::inRange(1, 161) / 8.0;
  };
  Eigen::MatrixXd d = Eigen::MatrixXd::Constant(Eigen::Index(n), Eigen::Index(n),
                                                std::numeric_limits<double>::infinity());
  d.diagonal().setZero();
  const auto order = *rc::gen::container<std::vector<int>>(n, rc::gen::arbitrary<int>());
  std::vector<Element> path(n);
  for (Element i = 0; i < n; ++i) path[i] = i;
  std::sort(path.begin(), path.end(), [&](Element a, Element b) {
    return order[a] < order[b] || (order[a] == order[b] && a < b);
  });
  const auto set_edge = [&](Element i, Element j, double c) {
    d(Eigen::Index(i), Eigen::Index(j)) = c;
    d(Eigen::Index(j), Eigen::Index(i)) = c;
  };
  for (std::size_t t = 1; t < n; ++t) set_edge(path[t - 1], path[t], cost());
  const auto extra = *rc::gen::inRange<std::size_t>(0, n * (n - 1) / 2 + 1);
  for (std::size_t e = 0; e < extra; ++e) {
    const auto i = *rc::gen::inRange<Element>(0, n);
    const auto j = *rc::gen::inRange<Element>(0, n);
    if (i != j) set_edge(i, j, cost());
  }
  floyd_warshall(d);
  instance.distance = d;
  return instance;
}

/// Random decisions: each vertex undecided, in or out, with at most p in.
std::vector<Decision> random_decisions(const PMedianInstance& instance) {
  std::vector<Decision> decisions(instance.n, Decision::kUndecided);
  std::size_t in = 0;
  for (Decision& d : decisions) {
    const int pick = *rc::gen::inRange(0, 4);
    if (pick == 1 && in < instance.p) {
      d = Decision::kIn;
      ++in;
    } else if (pick == 2) {
      d = Decision::kOut;
    }
  }
  return decisions;
}

/// Calls `visit` with every non-empty set of at most p vertices that respects `decisions`
/// (all fixed-in vertices, no fixed-out one), by plain enumeration of the subsets.
void for_each_node_set(const PMedianInstance& instance, const std::vector<Decision>& decisions,
                       const std::function<void(const std::vector<Element>&)>& visit) {
  const std::size_t n = instance.n;
  for (unsigned mask = 1; mask < (1u << n); ++mask) {
    std::vector<Element> set;
    bool ok = true;
    for (Element j = 0; j < n; ++j) {
      const bool member = (mask >> j) & 1u;
      if (member) set.push_back(j);
      if ((member && decisions[j] == Decision::kOut) ||
          (!member && decisions[j] == Decision::kIn)) {
        ok = false;
      }
    }
    if (ok && set.size() <= instance.p) visit(set);
  }
}

/// The smallest p-median value over the sets of for_each_node_set (+infinity when there are none).
double node_optimum(const PMedianInstance& instance, const std::vector<Decision>& decisions) {
  double best = std::numeric_limits<double>::infinity();
  for_each_node_set(instance, decisions, [&](const std::vector<Element>& set) {
    best = std::min(best, pmedian_value(instance, set));
  });
  return best;
}

std::vector<double> random_multipliers(const PMedianInstance& instance) {
  std::vector<double> lambda(instance.n);
  const double top = instance.distance.maxCoeff() + 1.0;
  for (double& x : lambda) x = *rc::gen::inRange(0, 1001) / 1000.0 * top;
  return lambda;
}

RC_GTEST_PROP(PMedianLagrangian, BoundNeverExceedsTheNodeOptimum, ()) {
  const PMedianInstance instance = random_instance(*rc::gen::arbitrary<bool>());
  const std::vector<Decision> decisions = random_decisions(instance);
  const double optimum = node_optimum(instance, decisions);
  RC_PRE(optimum < std::numeric_limits<double>::infinity());
  const PMedianLagrangian lagrangian(instance);
  LagrangianSolution solution;
  lagrangian.solve(random_multipliers(instance), decisions, solution);
  RC_ASSERT(solution.value <= optimum + 1e-9);
  // After subgradient optimisation towards a feasible value, still a lower bound.
  std::vector<double> lambda = lagrangian.initial_multipliers();
  const SubgradientResult result =
      lagrangian.optimise(lambda, decisions, optimum + 5.0, false, {}, solution);
  RC_ASSERT(result.bound <= optimum + 1e-9);
  RC_ASSERT(solution.value == result.bound);
  if (result.solved) RC_ASSERT(lagrangian.value(solution.chosen) == optimum);
}

RC_GTEST_PROP(PMedianLagrangian, FixingKeepsEverySetBelowTheCutoff, ()) {
  const bool integral = *rc::gen::arbitrary<bool>();
  const PMedianInstance instance = random_instance(integral);
  const std::vector<Decision> decisions = random_decisions(instance);
  const double optimum = node_optimum(instance, decisions);
  RC_PRE(optimum < std::numeric_limits<double>::infinity());
  // An incumbent at or above the node optimum, so that the optimum is a set worth keeping.
  const double upper = optimum + *rc::gen::inRange(0, 4) + (integral ? 1.0 : 0.125);
  const PMedianLagrangian lagrangian(instance);
  LagrangianSolution solution;
  std::vector<double> lambda = random_multipliers(instance);
  if (*rc::gen::arbitrary<bool>()) {
    lagrangian.optimise(lambda, decisions, upper, integral, {}, solution);
  } else {
    lagrangian.solve(lambda, decisions, solution);
  }
  const double cutoff = pruning_cutoff(upper, integral);
  const LagrangianFixing fixing = reduced_cost_fixing(solution, decisions, cutoff);
  std::size_t kept = 0;
  for_each_node_set(instance, decisions, [&](const std::vector<Element>& set) {
    if (pmedian_value(instance, set) >= cutoff) return;
    ++kept;
    for (Element j : fixing.in) RC_ASSERT(std::count(set.begin(), set.end(), j) == 1);
    for (Element j : fixing.out) RC_ASSERT(std::count(set.begin(), set.end(), j) == 0);
  });
  RC_ASSERT(kept > 0);  // the node optimum is below the cutoff
  RC_TAG(fixing.in.size() + fixing.out.size() > 0 ? "fixed some" : "fixed none");
}

RC_GTEST_PROP(PMedianBranchAndBound, EqualsExhaustiveSearch, ()) {
  const bool integral = *rc::gen::arbitrary<bool>();
  const PMedianInstance instance = random_instance(integral);
  const double optimum = node_optimum(instance, std::vector<Decision>(instance.n));
  PMedianSearchOptions options;
  options.reduced_cost_fixing = *rc::gen::arbitrary<bool>();
  // Few steps (weak bounds) and a poor start force branching.
  options.root.iterations = *rc::gen::element(1, 2, 3, 200);
  options.node.iterations = *rc::gen::element(1, 2, 50);
  if (*rc::gen::arbitrary<bool>()) {
    options.initial_set = {0};
    options.local_search = false;
  }
  const PMedianSearchResult result = pmedian_branch_and_bound(instance, options);
  RC_ASSERT(result.optimal);
  // Dyadic costs may all happen to be integers.
  const Eigen::ArrayXXd d = instance.distance.array();
  RC_ASSERT(result.integral == (d == d.round()).all());
  RC_TAG(integral ? "integral costs" : "dyadic costs");
  RC_ASSERT(result.value == optimum);
  RC_ASSERT(result.lower_bound == optimum);
  RC_ASSERT(result.set.size() <= instance.p);
  RC_ASSERT(pmedian_value(instance, result.set) == optimum);
  RC_ASSERT(result.root_bound <= optimum + 1e-9);
  RC_TAG(result.nodes > 1 ? "branched" : "closed at the root");
}

RC_GTEST_PROP(PMedianBranchAndBound, StoppedEarlyTheBoundsStillHold, ()) {
  const PMedianInstance instance = random_instance(true);
  const double optimum = node_optimum(instance, std::vector<Decision>(instance.n));
  PMedianSearchOptions options;
  options.node_limit = *rc::gen::inRange<std::uint64_t>(1, 4);
  options.root.iterations = *rc::gen::inRange(1, 20);
  options.node.iterations = 1;
  options.initial_set = {0};
  options.local_search = false;
  const PMedianSearchResult result = pmedian_branch_and_bound(instance, options);
  RC_ASSERT(result.lower_bound <= optimum);
  RC_ASSERT(result.value >= optimum);
  RC_ASSERT(pmedian_value(instance, result.set) == result.value);
  if (result.optimal) RC_ASSERT(result.value == optimum);
  RC_ASSERT(result.lower_bound == std::ceil(result.lower_bound));  // rounded up: integral data
  RC_TAG(result.optimal ? "closed" : "stopped");
}

RC_GTEST_PROP(VertexSubstitution, EndsAtALocalOptimumNoWorseThanItsStart, ()) {
  const PMedianInstance instance = random_instance(*rc::gen::arbitrary<bool>());
  std::vector<Element> set = pmedian_greedy(instance);
  RC_ASSERT(set.size() == instance.p);
  const double start = pmedian_value(instance, set);
  const double value = vertex_substitution(instance, set);
  RC_ASSERT(value <= start);
  RC_ASSERT(value == pmedian_value(instance, set));
  RC_ASSERT(std::is_sorted(set.begin(), set.end()));
  for (std::size_t s = 0; s < set.size(); ++s) {
    for (Element c = 0; c < instance.n; ++c) {
      if (std::count(set.begin(), set.end(), c) != 0) continue;
      std::vector<Element> swapped = set;
      swapped[s] = c;
      RC_ASSERT(pmedian_value(instance, swapped) >= value);
    }
  }
}

TEST(PMedianBranchAndBound, RefusesAnInvalidInitialSet) {
  PMedianInstance instance;
  instance.n = 3;
  instance.p = 1;
  instance.distance = Eigen::MatrixXd::Zero(3, 3);
  PMedianSearchOptions options;
  options.initial_set = {3};
  EXPECT_THROW((void)pmedian_branch_and_bound(instance, options), InputError);
  options.initial_set = {0, 1};
  EXPECT_THROW((void)pmedian_branch_and_bound(instance, options), InputError);
  PMedianInstance no_medians = instance;
  no_medians.p = 0;
  EXPECT_THROW((void)pmedian_branch_and_bound(no_medians), InputError);
  std::vector<Element> repeated{1, 1};
  EXPECT_THROW(vertex_substitution(instance, repeated), InputError);
  std::vector<Element> empty;
  EXPECT_THROW(vertex_substitution(instance, empty), InputError);
}

class PMedianOrLibrary : public ::testing::TestWithParam<std::string> {};

TEST_P(PMedianOrLibrary, ReproducesThePublishedOptimum) {
  const std::string dir = SUBEVICT_SOURCE_DIR "/tests/data/orlib-pmed";
  const PMedianInstance instance = read_pmedian(dir + "/" + GetParam() + ".txt");
  const double published = read_pmedian_optima(dir + "/pmedopt.txt").at(GetParam());
  const PMedianSearchResult result = pmedian_branch_and_bound(instance);
  EXPECT_TRUE(result.optimal);
  EXPECT_TRUE(result.integral);
  EXPECT_EQ(result.set.size(), instance.p);
  EXPECT_EQ(result.value, published);
  EXPECT_EQ(result.lower_bound, published);
  EXPECT_EQ(pmedian_value(instance, result.set), published);
}

INSTANTIATE_TEST_SUITE_P(Small, PMedianOrLibrary,
                         ::testing::Values("pmed1", "pmed2", "pmed3", "pmed4", "pmed5"));

}  // namespace
}  // namespace subevict::greedy
