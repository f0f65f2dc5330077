// Tests greedy/exact/branch_and_bound.hpp and greedy/exact/facility_location_bound.hpp against exhaustive
// enumeration: every bound combination on every submodular family, the Lagrangian plug-in on
// facility location, the limits (upper bound ≥ OPT when stopped early), and refusals.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <stdexcept>

#include "core/tolerance.hpp"
#include "greedy/functions/attention_fidelity.hpp"
#include "greedy/exact/branch_and_bound.hpp"
#include "greedy/exact/exhaustive.hpp"
#include "greedy/exact/facility_location_bound.hpp"
#include "greedy/optimizers/lazy_greedy.hpp"
#include "tests/greedy/random_instances.hpp"

namespace subevict::greedy {
namespace {

/// Checks `result` against exhaustive search: same optimal value, a feasible set whose value is
/// the reported one.
void check_against_exhaustive(const SetFunction& f, std::size_t k, const Selection& result) {
  const double tol = Tol<double>::sum(f.ground_size());
  const Selection opt = exhaustive_optimum(f, {k});
  RC_ASSERT(result.optimal);
  RC_ASSERT(result.set.size() <= k);
  RC_ASSERT(near(result.value, opt.value, tol));
  RC_ASSERT(near(result.value, f.evaluate(result.set), tol));
  RC_ASSERT(result.upper_bound == result.value);
}

RC_GTEST_PROP(BranchAndBound, EqualsExhaustiveWithEveryBoundCombination, ()) {
  const auto f = testing::random_submodular(10);
  const auto k = *rc::gen::inRange<std::size_t>(0, f->ground_size() + 1);
  BranchAndBoundOptions options;
  options.pairwise_bound = *rc::gen::arbitrary<bool>();
  options.pairwise_first_elements = *rc::gen::inRange<std::size_t>(1, 12);
  if (*rc::gen::arbitrary<bool>()) options.initial_set = lazy_greedy(*f, {k}).set;
  check_against_exhaustive(*f, k, branch_and_bound(*f, k, options));
}

/// Forwards a node to the plug-in but drops the sets it offers, so that the plug-in's bound and
/// fixings are exercised without its primal heuristic finding the optimum first.
class WithoutOffers final : public NodeBound {
 public:
  explicit WithoutOffers(NodeBound& inner) : inner_(&inner) {}
  NodeBoundResult bound(BranchAndBoundNode& node) override {
    View view(node);
    return inner_->bound(view);
  }

 private:
  class View final : public BranchAndBoundNode {
   public:
    explicit View(BranchAndBoundNode& node) : node_(&node) {}
    const SetState& state() const override { return node_->state(); }
    std::span<const Decision> decisions() const override { return node_->decisions(); }
    std::size_t k() const override { return node_->k(); }
    double incumbent() const override { return node_->incumbent(); }
    double tolerance() const override { return node_->tolerance(); }
    bool root() const override { return node_->root(); }
    double offer(std::span<const Element>) override { return node_->incumbent(); }

   private:
    BranchAndBoundNode* node_;
  };
  NodeBound* inner_;
};

RC_GTEST_PROP(BranchAndBound, LagrangianBoundEqualsExhaustiveOnFacilityLocation, ()) {
  const auto n = *rc::gen::inRange<std::size_t>(1, 13);
  const auto clients = *rc::gen::inRange<Eigen::Index>(1, 16);
  Eigen::MatrixXd sim(clients, Eigen::Index(n));
  for (Eigen::Index i = 0; i < sim.size(); ++i) sim.data()[i] = testing::dyadic();
  const FacilityLocation f(sim);
  const auto k = *rc::gen::inRange<std::size_t>(1, n + 1);
  FacilityLocationBoundOptions bound_options;
  bound_options.root_iterations = *rc::gen::inRange(1, 200);
  bound_options.node_iterations = *rc::gen::inRange(1, 50);
  FacilityLocationBound lagrangian(f, bound_options);
  WithoutOffers without_offers(lagrangian);
  BranchAndBoundOptions options;
  options.node_bound = &lagrangian;
  if (*rc::gen::arbitrary<bool>()) options.node_bound = &without_offers;
  options.pairwise_bound = *rc::gen::arbitrary<bool>();
  check_against_exhaustive(f, k, branch_and_bound(f, k, options));
}

RC_GTEST_PROP(BranchAndBound, StoppedEarlyItStillBoundsOpt, ()) {
  const auto f = testing::random_submodular(10);
  const auto k = *rc::gen::inRange<std::size_t>(1, f->ground_size() + 1);
  BranchAndBoundOptions options;
  options.node_limit = *rc::gen::inRange<std::uint64_t>(1, 4);
  const Selection result = branch_and_bound(*f, k, options);
  const Selection opt = exhaustive_optimum(*f, {k});
  const double tol = Tol<double>::sum(f->ground_size()) * std::max(1.0, opt.value);
  RC_ASSERT(result.nodes <= options.node_limit);
  RC_ASSERT(result.value <= opt.value + tol);
  RC_ASSERT(result.upper_bound >= opt.value - tol);
  if (result.optimal) RC_ASSERT(near(result.value, opt.value, tol));
}

TEST(BranchAndBound, SolvesAKnownInstanceAndReportsTheSearch) {
  // Greedy takes 0 (gain 6) then 1 or 2 (gain 3): 9; the optimum {1, 2} covers 10.
  Eigen::MatrixXd sim(4, 3);
  sim << 3, 5, 0,  //
      3, 0, 5,     //
      0, 0, 0,     //
      0, 0, 0;
  const FacilityLocation f(sim);
  const Selection result = branch_and_bound(f, 2);
  EXPECT_TRUE(result.optimal);
  EXPECT_EQ(result.set, (std::vector<Element>{1, 2}));
  EXPECT_EQ(result.value, 10.0);
  EXPECT_GT(result.nodes, 0u);
  EXPECT_GT(result.oracle_calls, 0u);
}

TEST(BranchAndBound, RefusesNonSubmodularFunctionsAndBadInitialSets) {
  const AttentionFidelity fidelity(Eigen::MatrixXd::Ones(1, 3), Eigen::MatrixXd::Ones(3, 2));
  EXPECT_THROW((void)branch_and_bound(fidelity, 2), std::invalid_argument);
  const FacilityLocation f(Eigen::MatrixXd::Ones(2, 3));
  BranchAndBoundOptions options;
  options.initial_set = {0, 0};
  EXPECT_THROW((void)branch_and_bound(f, 2, options), std::invalid_argument);
  options.initial_set = {0, 1, 2};
  EXPECT_THROW((void)branch_and_bound(f, 2, options), std::invalid_argument);
}

}  // namespace
}  // namespace subevict::greedy
