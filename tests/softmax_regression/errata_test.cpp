// Tests softmax_regression/errata.hpp (theory.md §9 items 1 and 2): the printed forms fail where
// the corrected forms pass.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>

#include "core/tolerance.hpp"
#include "softmax_regression/approximate_newton.hpp"
#include "softmax_regression/errata.hpp"
#include "softmax_regression/finite_difference.hpp"
#include "softmax_regression/instances.hpp"
#include "tests/softmax_regression/test_support.hpp"

namespace subevict::softmax_regression {
namespace {

const double kFd = Tol<double>::grad();

RC_GTEST_PROP(Errata, PrintedLemmaD44GradientFailsTheFiniteDifferenceCheck, ()) {
  const auto r = testing::random_problem(2.0);
  const Point pt = evaluate_point(r.problem, r.x);
  // The printed and corrected forms differ by 2 <c, f> A^T f; skip draws where that is below
  // what finite differences can resolve.
  const double gap = 2 * std::fabs(pt.c.dot(pt.f)) *
                     (r.problem.A.transpose() * pt.f).cwiseAbs().maxCoeff();
  RC_PRE(gap > 1e3 * kFd);
  const auto L = [&](const Vector& x) { return loss(r.problem, LossKind::kExp, x); };
  RC_ASSERT(check_gradient(L, gradient(r.problem, LossKind::kExp, r.x), r.x, kFd).passed);
  RC_ASSERT(!check_gradient(L, printed_lemma_d44_gradient(r.problem, r.x), r.x, kFd).passed);
}

TEST(Errata, PrintedAlgorithm4UpdateIncreasesTheLossWhereTheCorrectedOneConverges) {
  for (std::uint64_t seed : {1, 2, 3}) {
    InstanceSpec spec;
    spec.n = 2000;
    spec.d = 6;
    spec.parameters.R = 1;
    spec.norm_A = 3;
    spec.seed = seed;
    spec.violation = Violation::kFarStart;
    const Instance inst = make_instance(spec);
    ApproximateNewtonOptions options;
    options.stop.max_iterations = 50;
    const Summary corrected = approximate_newton(inst.problem, LossKind::kFull, inst.x0, options);
    EXPECT_EQ(corrected.status, Status::kConverged) << corrected.message;
    options.printed_sign = true;
    options.stop.max_iterations = 3;
    const Summary printed = approximate_newton(inst.problem, LossKind::kFull, inst.x0, options);
    ASSERT_GE(printed.trace.size(), 2u);
    EXPECT_GT(printed.trace[1].loss, printed.trace[0].loss);
    EXPECT_LT(corrected.trace[1].loss, corrected.trace[0].loss);
    // The same on one explicit step with the exact Hessian.
    const Vector g = gradient(inst.problem, LossKind::kFull, inst.x0);
    const Matrix H = hessian(inst.problem, LossKind::kFull, inst.x0);
    const double before = loss(inst.problem, LossKind::kFull, inst.x0);
    EXPECT_GT(loss(inst.problem, LossKind::kFull, printed_algorithm4_update(inst.x0, H, g)), before);
    EXPECT_LT(loss(inst.problem, LossKind::kFull, corrected_algorithm4_update(inst.x0, H, g)),
              before);
  }
}

}  // namespace
}  // namespace subevict::softmax_regression
