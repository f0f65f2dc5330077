#pragma once
/// \file
/// The softmax-regression family of the registry (theory.md §7 and §9 items 1–2): Lemma D.47
/// (strong convexity), Lemma D.48 (Hessian Lipschitz), Theorem D.49 (approximate Newton) and the
/// errata in Lemma D.44's gradient and Algorithm 4's update sign.
///
/// Each check is a free function of the instances AND the implementation under test (a Hessian,
/// a gradient, a solver or an update rule), so a test can pass a broken implementation and see the
/// check fail; the registered checks pass the library's (softmax_regression/).

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "proofs_checks/check.hpp"
#include "softmax_regression/instances.hpp"
#include "softmax_regression/solver.hpp"

namespace subevict::proofs_checks {

namespace sr = subevict::softmax_regression;

/// A Hessian of the full loss L under test: ∇²L(x) (d x d).
using HessianFunction = std::function<sr::Matrix(const sr::Problem&, const sr::Vector& x)>;
/// A gradient of L_exp under test: ∇L_exp(x) (d).
using GradientFunction = std::function<sr::Vector(const sr::Problem&, const sr::Vector& x)>;
/// A solver of the full loss under test, started at x0; `x_star` is the exact minimiser, passed so
/// that the solver can record |x_t − x*| in its trace (IterationRecord::distance_to_x_star).
using SolverFunction =
    std::function<sr::Summary(const sr::Problem&, const sr::Vector& x0, const sr::Vector& x_star)>;
/// A Newton-type update rule under test: x_{t+1} from x_t, the Hessian H and the gradient g.
using UpdateFunction =
    std::function<sr::Vector(const sr::Vector& x, const sr::Matrix& H, const sr::Vector& g)>;

/// Instances that satisfy Lemma D.47's hypotheses (n = 40, d = 5, R = 10, l = 1, |A| = 1),
/// seeds seed, seed + 1, ... O(count n d^2).
std::vector<sr::Instance> lemma_instances(int count, std::uint64_t seed);

/// h2o.lemma_d47: at `samples` points of the radius-R ball (softmax_regression/lemma_checks.hpp
/// ball_point, origin first), λ_min(hessian(x)) ≥ l, on every instance whose w condition
/// (min w_i² ≥ 20 + l/σ_min(A)²) holds; instances without it are measured and reported
/// (outside_hypotheses_min_margin) but never counted as violations. Slack = λ_min − l.
CheckResult check_lemma_d47(const std::vector<sr::Instance>& instances, int samples, std::uint64_t seed,
                            const HessianFunction& hessian);

/// h2o.lemma_d48: over `pairs` pairs per instance (half independent ball points, half a point and
/// a neighbour at distance 1e-3 R), ln(|H(x) − H(y)|_2 / |x − y|) ≤ 2 ln n + 40 R²; hypothesis
/// |A|_2 ≤ R. Slack = the looseness in e-folds. Series "lemma_d48_looseness" against R.
CheckResult check_lemma_d48(const std::vector<sr::Instance>& instances, int pairs, std::uint64_t seed,
                            const HessianFunction& hessian);

/// Instances for Theorem D.49 (n = 2000, d = 6, R = 10, l = 1, |A| = 1, x0 = 0).
std::vector<sr::Instance> newton_instances(int count, std::uint64_t seed);

/// h2o.theorem_d49: x* by the library's exact Newton; the solver under test, from x0, must reach
/// |x_T − x*| ≤ 1e-8 max(1, |x*|) and contract at every step while |x_t − x*| is above 1e-11
/// max(1, |x*|) (|x_{t+1} − x*| < |x_t − x*|). Hypotheses as checked: |A| ≤ R, R ≥ 10, b ≥ 0,
/// |b|_1 ≤ 1, the w condition, |x*| ≤ R; the start-neighbourhood condition M |x0 − x*| ≤ 0.1 l
/// with M = n² exp(40 R²) is measured (start_neighbourhood_gap, e-folds) but not required: it asks
/// for |x0 − x*| < e^{-4000}, below the resolution of a double. Slack = 1 − the largest per-step
/// ratio (−1 when the run did not converge). Series "newton_convergence" (log10 |x_t − x*|).
CheckResult check_theorem_d49(const std::vector<sr::Instance>& instances, const SolverFunction& solver);

/// Small problems with random points for the gradient erratum (n = 10, d = 4, |A| = 3, R = 3).
std::vector<sr::Instance> gradient_instances(int count, std::uint64_t seed);

/// h2o.erratum_d44_gradient (theory.md §9 item 1): at `points` ball points per instance where the
/// two forms differ by more than finite differences resolve (2 |<c, f>| |A^T f|_∞ > 1000
/// Tol::grad(): the hypothesis), `corrected` must pass and `printed` must fail the
/// finite-difference check of ∇L_exp (softmax_regression/finite_difference.hpp, tolerance
/// Tol<double>::grad()). A point where the corrected form fails or the printed one passes is a
/// violation.
CheckResult check_erratum_d44_gradient(const std::vector<sr::Instance>& instances, int points,
                                       std::uint64_t seed, const GradientFunction& printed,
                                       const GradientFunction& corrected);

/// Instances for the update-sign erratum (n = 400, d = 6, R = 1, |A| = 3, x0 on the radius-R
/// sphere).
std::vector<sr::Instance> update_instances(int count, std::uint64_t seed);

/// h2o.erratum_alg4_sign (theory.md §9 item 2): with the exact Hessian and gradient of the full
/// loss, one `printed` update from x0 must increase L, and `corrected` updates from x0 must
/// decrease L at the first step and reach |∇L| ≤ 1e-8 max(1, |∇L(x0)|) within 50 steps.
/// Series "algorithm4_sign": L per iteration of both rules on the first instance.
CheckResult check_erratum_alg4_sign(const std::vector<sr::Instance>& instances,
                                    const UpdateFunction& printed, const UpdateFunction& corrected);

/// The library's approximate Newton (Algorithm 4, corrected sign) as a SolverFunction.
sr::Summary library_approximate_newton(const sr::Problem& problem, const sr::Vector& x0,
                                       const sr::Vector& x_star);

/// The registered checks h2o.lemma_d47, h2o.lemma_d48, h2o.theorem_d49,
/// h2o.erratum_d44_gradient, h2o.erratum_alg4_sign.
std::vector<std::unique_ptr<Check>> softmax_regression_checks();

}  // namespace subevict::proofs_checks
