// Tests greedy/diagnostics/submodularity_ratio.hpp: γ ≥ 1 (within rounding) for every submodular family, a
// hand-computed supermodular case, sampled ≥ exact (it is an upper bound), bad input.
#include "greedy/diagnostics/submodularity_ratio.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <stdexcept>

#include "core/tolerance.hpp"
#include "greedy/functions/set_function.hpp"
#include "greedy/functions/weighted_coverage.hpp"
#include "tests/greedy/random_instances.hpp"

namespace subevict::greedy {
namespace {

/// f(S) = |S|^2 on n elements: Δ(x|L) = 2|L| + 1, Δ(S|L) = (|L| + |S|)^2 − |L|^2.
class Square final : public SetFunction {
 public:
  explicit Square(std::size_t n) : n_(n) {}
  std::size_t ground_size() const override { return n_; }
  double evaluate(std::span<const Element> set) const override {
    return double(set.size() * set.size());
  }
  std::unique_ptr<SetState> empty_state() const override {
    class State final : public SetState {
     public:
      explicit State(std::size_t n) : SetState(n) {}
      double value() const override { return double(size() * size()); }
      std::unique_ptr<SetState> clone() const override { return std::make_unique<State>(*this); }

     protected:
      double on_gain(Element) const override { return double(2 * size() + 1); }
      void on_add(Element) override {}
      void on_remove(Element) override {}
    };
    return std::make_unique<State>(n_);
  }
  std::string name() const override { return "square"; }

 private:
  std::size_t n_;
};

RC_GTEST_PROP(SubmodularityRatio, IsOneForSubmodularFamilies, ()) {
  const auto f = testing::random_submodular(6);
  const auto k = *rc::gen::inRange<std::size_t>(1, std::min<std::size_t>(f->ground_size(), 3) + 1);
  const SubmodularityRatio exact = submodularity_ratio_exact(*f, {k, std::nullopt});
  RC_ASSERT(exact.exact);
  RC_ASSERT(exact.gamma >= 1 - Tol<double>::sum(f->ground_size()));
  const SubmodularityRatio sampled =
      submodularity_ratio_sampled(*f, {k, std::nullopt, 200, *rc::gen::arbitrary<std::uint64_t>()});
  RC_ASSERT(!sampled.exact);
  RC_ASSERT(sampled.gamma >= exact.gamma);
}

TEST(SubmodularityRatio, SquareHasTheClosedFormMinimum) {
  // Minimum of k(2l + 1) / ((l + k)^2 − l^2) = (2l + 1) / (2l + k) over l ≤ 4 − k, 2 ≤ k ≤ 3:
  // l = 0, k = 3 gives 1/3.
  const Square f(4);
  const SubmodularityRatio r = submodularity_ratio_exact(f, {3, std::nullopt});
  EXPECT_TRUE(near(r.gamma, 1.0 / 3.0, Tol<double>::kValue));
  EXPECT_TRUE(r.l_set.empty());
  EXPECT_EQ(r.s_set.size(), 3u);
  // Restricting L to U = {0} cannot beat L = ∅.
  const SubmodularityRatio restricted = submodularity_ratio_exact(f, {3, std::vector<Element>{0}});
  EXPECT_TRUE(near(restricted.gamma, 1.0 / 3.0, Tol<double>::kValue));
  const SubmodularityRatio sampled = submodularity_ratio_sampled(f, {3, std::nullopt, 500, 1});
  EXPECT_GE(sampled.gamma, r.gamma - Tol<double>::kValue);
}

TEST(SubmodularityRatio, RejectsBadUniversesAndLargeInstances) {
  const Square f(4);
  EXPECT_THROW((void)submodularity_ratio_exact(f, {2, std::vector<Element>{4}}),
               std::invalid_argument);
  EXPECT_THROW((void)submodularity_ratio_exact(f, {2, std::vector<Element>{1, 1}}),
               std::invalid_argument);
  EXPECT_THROW((void)submodularity_ratio_exact(f, {5, std::nullopt}), std::invalid_argument);
  EXPECT_THROW((void)submodularity_ratio_exact(Square(40), {3, std::nullopt}),
               std::invalid_argument);
}

}  // namespace
}  // namespace subevict::greedy
