// Tests greedy/diagnostics/curvature.hpp: c ∈ [0, 1] for every submodular family, 0 for modular functions,
// closed forms for coverage and budget-additive cases.
#include "greedy/diagnostics/curvature.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "core/tolerance.hpp"
#include "greedy/functions/budget_additive.hpp"
#include "greedy/functions/modular.hpp"
#include "greedy/functions/weighted_coverage.hpp"
#include "tests/greedy/random_instances.hpp"

namespace subevict::greedy {
namespace {

RC_GTEST_PROP(Curvature, LiesInTheUnitIntervalForSubmodularFamilies, ()) {
  const auto f = testing::random_submodular(10);
  const Curvature c = total_curvature(*f);
  const double tol = Tol<double>::sum(f->ground_size());
  RC_ASSERT(c.curvature >= -tol);
  RC_ASSERT(c.curvature <= 1 + tol);
}

TEST(Curvature, ClosedForms) {
  EXPECT_EQ(total_curvature(Modular({1.0, 2.0, 0.0})).curvature, 0.0);
  // Two sets sharing item 0 (weight 3) with private items of weight 1 and 2:
  // Δ(0 | {1}) / f({0}) = 1 / 4, Δ(1 | {0}) / f({1}) = 2 / 5: c = 3 / 4 at element 0.
  const WeightedCoverage coverage({3.0, 1.0, 2.0},
                                  std::vector<std::vector<std::size_t>>{{0, 1}, {0, 2}});
  const Curvature c = total_curvature(coverage);
  EXPECT_TRUE(near(c.curvature, 0.75, Tol<double>::kValue));
  EXPECT_EQ(c.argmin, 0u);
  // min(3, w0 + w1) with w = (2, 2): Δ(j | other) = 1, f({j}) = 2: c = 1/2.
  EXPECT_TRUE(
      near(total_curvature(BudgetAdditive({2.0, 2.0}, 3.0)).curvature, 0.5, Tol<double>::kValue));
  // Nothing with a positive singleton value.
  const Curvature zero = total_curvature(Modular({0.0, 0.0}));
  EXPECT_EQ(zero.curvature, 0.0);
  EXPECT_EQ(zero.argmin, 2u);
}

}  // namespace
}  // namespace subevict::greedy
