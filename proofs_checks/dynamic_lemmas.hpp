#pragma once
/// \file
/// H2O's universal conditions (Defs D.23–D.28), Lemmas D.29 and D.30, Theorem D.32 and the errata
/// of theory.md §9 items 3 and 5, measured step by step along eviction trajectories on small heads
/// (exact opt_i by exhaustive search; proofs_checks/dynamic_family.hpp states the conventions).
///
/// Index translation: theory.md's 1-based step m is 0-based step i = m − 1. Lemma D.29/D.30 at
/// 1-based m concludes f_{S_m,m}(S_{m+1}) ≥ (1 − 1/e)(1 − θ)^{m+1}(1 − γ)^{m+1} opt_{m+1} − (m+1) ε₀;
/// at 0-based step i that is f_{S_i,i}(S_{i+1}) ≥ (1 − 1/e)(1 − θ)^{i+2}(1 − γ)^{i+2} opt_{i+1} −
/// (i + 2) ε₀, for i = 0..n−2.
///
/// Measured hypotheses: "the hypotheses hold up to step i" is read with the smallest constants that
/// make them hold on the realized trajectory: θ = max_{1≤j≤i} θ_j, γ = max_{j≤i} γ_j (condition 2
/// in the corrected direction, erratum 3), ε₀ = max_{j≤i} ε₀_j (ConditionTrace). The hypotheses
/// hold at step i when f_{S_j,j} is monotone along the trajectory for j ≤ i and θ, γ < 1. A step
/// where they hold and the conclusion fails is a counterexample.

#include <cstdint>
#include <string>
#include <vector>

#include "greedy/eviction/evaluation/simulator.hpp"
#include "proofs_checks/check.hpp"
#include "proofs_checks/dynamic_family.hpp"

namespace subevict::proofs_checks {

/// What the trajectory checks run on: small heads, a budget, the policy under test (the greedy
/// the lemmas are about) and the family's transform h.
struct TrajectorySetup {
  std::vector<SmallHead> heads;
  int budget = 3;
  greedy::PolicyFactory policy;
  Transform h;
  std::string h_name;    ///< for the notes, e.g. "sqrt(z+1)"
  std::uint64_t seed = 0;
};

/// The default setup of a check context: scaled_count(16, effort) heads cut from the context's
/// workload (heads_from_workload), head c keeping its first 10 + c mod 5 tokens, and as many random
/// Gaussian heads of the same lengths (d = 8), budget small_budget(context.budget_ratio, 12), H2O
/// Algorithm 2 with h(z) = sqrt(z + 1) (policy "h2o-alg2-sqrt") and the same h. Throws
/// std::invalid_argument when the workload is null or has fewer than 14 tokens.
[[nodiscard]] TrajectorySetup default_trajectory_setup(const CheckContext& context);

/// h2o.universal_conditions, a measurement (Kind::measurement): along each trajectory, the
/// monotonicity of f_{S_i,i} (D.23), θ (D.24), γ (D.28, both directions), ε₀ (tracked family f̃
/// against the exact family f, D.25/D.26) and opt_i (D.27). θ, γ, ε₀ are fitted as the smallest
/// values that make the conditions hold, so nothing here can fail; the result is `measured` with
/// the max θ, γ, ε₀ of both families, γ after the cache first fills, and the steps where no
/// constants in [0, 1) exist (monotonicity fails, θ_i ≥ 1 or γ_i ≥ 1: there Lemmas D.29/D.30
/// count their hypotheses as not met).
[[nodiscard]] CheckResult check_universal_conditions(const TrajectorySetup& setup);

/// The constants of Lemma D.29/D.30's conclusion at 0-based step i:
/// f_{S_i,i}(S_{i+1}) ≥ factor (1 − θ)^{i+o} (1 − γ)^{i+o} opt_{i+1} − (i + o) ε₀ with o = step_offset.
/// The defaults are the printed constants: 1 − 1/e, and o = 2 (theory.md's 1-based m + 1 at
/// m = i + 1). Tests pass wrong ones to see the checks turn red.
struct LemmaConstants {
  double factor = 1.0 - 0.36787944117144233;  ///< 1 − 1/e
  int step_offset = 2;
};

/// The right-hand side of Lemma D.29/D.30 at 0-based `step` with the measured θ, γ, ε₀ (0 in the
/// exact case) and opt_{i+1} = `opt_next`.
[[nodiscard]] double lemma_bound(int step, double theta, double gamma, double epsilon0, double opt_next,
                                 const LemmaConstants& constants = {});

/// h2o.lemma_d29 (exact case): f = the tracked family on the policy's own trajectory, ε₀ = 0.
///
/// How close the bound comes: on H2O trajectories γ ≥ 0.43 before the cache fills, so the bound
/// asks for little of opt (mean_bound_over_opt) and no trajectory of the default families comes
/// near it; the tests pin the constants through lemma_bound on closed-form values.
[[nodiscard]] CheckResult check_lemma_d29(const TrajectorySetup& setup, const LemmaConstants& constants = {});

/// h2o.lemma_d30 (approximate case): the policy runs on the tracked family f̃; the conclusion is
/// about the exact family f (Lemma D.31's full knowledge) with its own θ, γ, opt and the measured ε₀.
[[nodiscard]] CheckResult check_lemma_d30(const TrajectorySetup& setup, const LemmaConstants& constants = {});

/// h2o.theorem_d32: f(S̃_i) ≥ (1 − 1/e)(1 − α) opt_i − β for the exact family f at the tracked
/// greedy's caches S̃_i. The theorem's hypotheses θ, γ ≤ α/(10n) and ε₀ ≤ β/(10n) are read with the
/// measured values: α = 10n max(θ, γ), β = 10n ε₀ (n = tokens of the head), met when α < 1. Also
/// reports the realized smallest α (with β = 0) and β (with α = 0) that make the trajectory satisfy
/// the conclusion. `factor` replaces 1 − 1/e in the conclusion.
[[nodiscard]] CheckResult check_theorem_d32(const TrajectorySetup& setup, double factor = LemmaConstants{}.factor);

/// h2o.erratum_d28_direction (theory.md §9 item 3): Lemma D.29's conclusion with γ measured in
/// the printed direction (opt_i ≥ (1 − γ) opt_{i−1}) and in the corrected one (opt_i ≥ (1 − γ)
/// opt_{i+1}). An erratum (Kind::erratum): held (confirmed) when the printed reading gives at
/// least one counterexample and the corrected one none; violated when the corrected reading fails;
/// inconclusive when neither fails.
[[nodiscard]] CheckResult check_erratum_d28_direction(const TrajectorySetup& setup,
                                                      const LemmaConstants& constants = {});

}  // namespace subevict::proofs_checks
