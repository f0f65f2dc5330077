#include "proofs_checks/dynamic_checks.hpp"

#include <algorithm>
#include <cmath>

#include "core/attention.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "proofs_checks/dynamic_lemmas.hpp"
#include "proofs_checks/dynamic_submodularity.hpp"
#include "proofs_checks/function_check.hpp"
#include "proofs_checks/offline_gap.hpp"
#include "proofs_checks/shared_cache.hpp"
#include "proofs_checks/perturbed_increments.hpp"
#include "proofs_checks/sparsity_claim.hpp"
#include "proofs_checks/zero_padding_erratum.hpp"

namespace subevict::proofs_checks {
namespace {

const Workload& workload_of(const CheckContext& context) { return context_workload(context, "dynamic checks"); }

/// k = max(1, ceil(ratio · n)), capped at n.
int full_budget(const CheckContext& context, int tokens) {
  return std::clamp(int(std::ceil(context.budget_ratio * tokens)), 1, tokens);
}

/// Full-length H2O trajectories on `count` heads of the workload (at most 512 tokens each).
TrajectorySetup workload_setup(const CheckContext& context, int count) {
  const Workload& w = workload_of(context);
  TrajectorySetup setup;
  setup.heads = heads_from_workload(w, std::min(w.shape().tokens, 512), count, context.layers);
  setup.budget = full_budget(context, setup.heads.front().tokens());
  setup.policy = [] { return greedy::make_policy("h2o-alg2-sqrt"); };
  setup.h = transform_of(greedy::Concave::kSqrt);
  setup.h_name = "sqrt(z+1)";
  setup.seed = context.seed;
  return setup;
}

const std::vector<std::string> kSmallFamilies = {"LLM-like workload (first 10-14 tokens of spread heads)",
                                                 "random small (Gaussian Q, K, V, 10-14 tokens, d = 8)"};
const std::string kLemmaHypotheses =
    "f_{S_j,j} monotone along the trajectory and theta, gamma < 1, with theta, gamma, eps0 the smallest values "
    "that make D.24, D.28 (corrected: opt_j >= (1-gamma) opt_{j+1}) and the approximate condition hold for j <= i; "
    "S_{i+1} chosen by H2O Algorithm 2 (h(z) = sqrt(z+1))";

}  // namespace

std::vector<std::unique_ptr<Check>> dynamic_checks() {
  std::vector<std::unique_ptr<Check>> checks;
  checks.push_back(make_check(
      {"h2o.def41_submodularity", "H2O, Definition 4.1 / D.4 with Definition D.1",
       "Random triples tested against submodularity (Def D.1) of the H2O dynamic family f_{S,i}(T) = "
       "h(sum_{s in T} acc_{i,s}) along H2O trajectories. A concave non-decreasing h of a non-negative modular "
       "function is submodular, so this cannot fail: it measures the implementation's rounding.",
       "h concave non-decreasing (sqrt(z+1)); acc the tracked accumulated attention of the trajectory",
       "violating triples (gain(x|X) < gain(x|Y) for X subset of Y, x not in Y) of those tested, and the "
       "Clopper-Pearson 95% upper bound on their rate",
       {"LLM-like workload"}, "proofs_checks/dynamic_submodularity.cpp", Kind::measurement},
      [](const CheckContext& c) {
        return check_def41_submodularity(workload_setup(c, scaled_count(4, c.effort)), 8, scaled_count(250, c.effort));
      }));
  checks.push_back(make_check(
      {"h2o.universal_conditions", "H2O, Definitions D.23-D.28",
       "The constants theta, gamma, eps0 of the universal monotone condition, dynamic conditions 1 and 2 and the "
       "approximate condition along H2O trajectories, fitted as the smallest values that make the conditions hold "
       "(so they cannot fail; Lemmas D.29/D.30 and Theorem D.32 test what they imply).",
       "a trajectory of H2O Algorithm 2; opt_i of D.27 by exhaustive search over the previous cache X and Y",
       "the smallest theta with f_{S_i,i}(S_i) >= (1-theta) f_{S_{i-1},i-1}(S_i), gamma with opt_i >= (1-gamma) "
       "opt_{i+1} (and in the printed direction), eps0 with f >= f~ - eps0, for the tracked and the exact family; "
       "steps where f_{S_i,i} is not monotone or no theta, gamma in [0, 1) exist",
       kSmallFamilies, "proofs_checks/dynamic_lemmas.cpp", Kind::measurement},
      [](const CheckContext& c) { return check_universal_conditions(default_trajectory_setup(c)); }));
  checks.push_back(make_check(
      {"h2o.lemma_d29", "H2O, Lemma D.29",
       "Exact case: H2O's greedy keeps f_{S_i,i}(S_{i+1}) >= (1-1/e)(1-theta)^{i+1}(1-gamma)^{i+1} opt_{i+1}.",
       kLemmaHypotheses + "; f the tracked family, eps0 = 0",
       "f_{S_i,i}(S_{i+1}) >= (1-1/e)(1-theta)^{i+1}(1-gamma)^{i+1} opt_{i+1} at every step (1-based i)",
       kSmallFamilies, "proofs_checks/dynamic_lemmas.cpp"},
      [](const CheckContext& c) { return check_lemma_d29(default_trajectory_setup(c)); }));
  checks.push_back(make_check(
      {"h2o.lemma_d30", "H2O, Lemma D.30",
       "Approximate case: H2O's greedy run on the tracked family keeps the exact family within "
       "(1-1/e)(1-theta)^{i+1}(1-gamma)^{i+1} opt_{i+1} - (i+1) eps0.",
       kLemmaHypotheses + "; f the exact (full-knowledge) family, f~ the tracked one",
       "f_{S_i,i}(S_{i+1}) >= (1-1/e)(1-theta)^{i+1}(1-gamma)^{i+1} opt_{i+1} - (i+1) eps0 at every step",
       kSmallFamilies, "proofs_checks/dynamic_lemmas.cpp"},
      [](const CheckContext& c) { return check_lemma_d30(default_trajectory_setup(c)); }));
  checks.push_back(make_check(
      {"h2o.theorem_d32", "H2O, Theorem 4.4 / D.32",
       "H2O's cache S~_i satisfies f(S~_i) >= (1-1/e)(1-alpha) opt_i - beta.",
       "theta, gamma <= alpha/(10n), eps0 <= beta/(10n) with the measured theta, gamma, eps0, and alpha < 1",
       "f(S~_i) >= (1-1/e)(1-alpha) opt_i - beta at every step; also the realized smallest alpha and beta",
       kSmallFamilies, "proofs_checks/dynamic_lemmas.cpp"},
      [](const CheckContext& c) { return check_theorem_d32(default_trajectory_setup(c)); }));
  checks.push_back(make_check(
      {"h2o.lemma_d19", "H2O, Lemma D.19",
       "How much a uniform eps/(2n) error in the increments of the dynamic family f_{S_i,i} costs the greedy "
       "eviction step against the exact one. The run draws the errors within the lemma's bound and evicts by "
       "the perturbed argmax itself, so the lemma's conclusion follows from how the instances are made (one line: "
       "f(S~) >= f~(S~) - eps/2 >= f~(G \\ {v}) - eps/2 >= f(G \\ {v}) - eps): a measurement of the slack, "
       "not a test of the eviction process.",
       "f~_{S_i,i} = f_{S_i,i} + E_i with |E_i(T) - E_{i-1}(T)| <= eps/(2n) for every T (E_{-1} = 0; verified on "
       "every error used), eps = 0.1, n = tokens of the head, f the tracked H2O family (h(z) = sqrt(z+1)); "
       "adversarial and random errors; S~_i = argmax_v f~_{S~_i,i}(G~_i \\ {v}) at each eviction step",
       "the slack f_{S~_i,i}(S~_i) - max_{v in G~_i} f_{S~_i,i}(G~_i \\ {v}) + eps over the eviction steps",
       kSmallFamilies, "proofs_checks/perturbed_increments.cpp", Kind::measurement},
      [](const CheckContext& c) {
        return verdict_as_measurement(check_lemma_d19(
            default_trajectory_setup(c), {adversarial_perturbation(), random_perturbation()}, perturbed_argmax(), 0.1));
      }));
  checks.push_back(make_check(
      {"h2o.claim_d34", "H2O, Definition D.33 and Claim D.34",
       "If the attention rows are (alpha, tau, k)-good with a non-empty S0, the union of the supports of n samples "
       "exceeds S0 by at most alpha k n. tau, S0 and alpha are fixed on calibration queries before n later test "
       "queries are read; n is the most test rows with alpha k n < reach(n), the tokens outside S0 the rows can attend "
       "to, since the union never holds more and the bound cannot fail elsewhere (no such n >= 1: vacuous).",
       "calibration rows (queries n/2 <= i < 3n/4) fix tau = the smallest threshold at which every calibration "
       "row's support supp_tau(x) = {j : x_j >= tau} has at most k tokens, S0 = the tokens in the support of at "
       "least 95% of the calibration rows, alpha = max |supp_tau \\ S0| / k over them; S0 non-empty",
       "|union over the n test rows of supp_tau(x) \\ S0| <= alpha k n, n the most test rows with alpha k n < reach(n)",
       {"LLM-like workload (exact attention rows of the last half of the queries)"}, "proofs_checks/sparsity_claim.cpp"},
      [](const CheckContext& c) {
        const Workload& w = workload_of(c);
        return check_claim_d34(attention_row_samples(w, scaled_count(4, c.effort), c.layers),
                               full_budget(c, w.shape().tokens));
      }));
  checks.push_back(make_check(
      {"h2o.greedy_vs_offline_optimum", "theory.md §5 (offline optimum of the irreversible process)",
       "How close each causal policy comes to the exact offline optimum of the irreversible process, and how close "
       "that optimum comes to the per-step reversible oracle. The chain policy <= OPT_irreversible <= sum_i U_i <= "
       "n g holds by definition (OPT maximises over every schedule a policy can produce; the oracle drops the "
       "irreversibility), so breaks of it are reported as a sanity count, not a verdict.",
       "policies h2o, local, streamingllm, tova, l2norm, random (or those of verify --policy) at budget k = "
       "ceil(ratio n), no prefill, the first min(n, 1024) tokens of ceil(3 effort) (layer, KV head) pairs of the "
       "checked layers; OPT_irreversible by the LEMON flow",
       "mean policy / OPT_irreversible per policy, OPT_irreversible / sum_i U_i, sum_i U_i / (n g), and the "
       "(policy, head) pairs where the chain breaks beyond rounding",
       {"LLM-like workload"}, "proofs_checks/offline_gap.cpp", Kind::measurement},
      [](const CheckContext& c) {
        const Workload& w = workload_of(c);
        const Shape& s = w.shape();
        const std::vector<int> layers = checked_layers(c);
        const int pairs = int(layers.size()) * s.kv_heads;  // (layer, KV head) pairs of the checked layers
        const int count = std::min(scaled_count(3, c.effort), pairs);
        std::vector<int> heads;
        for (int h = 0; h < count; ++h) {
          const int pair = int((long long)h * pairs / count);
          heads.push_back(layers[std::size_t(pair / s.kv_heads)] * s.kv_heads + pair % s.kv_heads);
        }
        const int tokens = std::min(s.tokens, kMaxOfflineTokens);
        const int k = offline_comparison_budget(s.tokens, c.budget_ratio);
        const std::vector<NamedPolicy> policies = c.policies.empty() ? comparison_policies(k) : spec_policies(c.policies);
        return check_greedy_vs_offline(w, heads, k, policies, flow_optimum(), c.seed, tokens);
      }));
  checks.push_back(make_check(
      {"allocation.uniform_static_shared", "theory.md §5 (offline optimum; allocation across heads)",
       "How much a layer gains when its cache budget is split across its KV heads optimally (each head a fixed "
       "budget) and when one cache is shared by the heads over time. The order uniform <= static <= shared holds by "
       "definition (a uniform split is one static allocation, a static allocation one schedule of the shared "
       "cache), so breaks of it are reported as a sanity count, not a verdict.",
       "budget k = ceil(ratio n) per KV head, total k H per layer, the first min(n, 256) tokens of ceil(2 effort) "
       "checked layers; static allocation exact over the heads' budget curves, shared cache by the LEMON flow",
       "mean static / uniform and shared / static over layers, and the layers where the order breaks beyond "
       "rounding",
       {"LLM-like workload"}, "proofs_checks/shared_cache.cpp", Kind::measurement},
      [](const CheckContext& c) {
        const Workload& w = workload_of(c);
        const std::vector<int> checked = checked_layers(c);
        const int count = std::min(scaled_count(2, c.effort), int(checked.size()));
        std::vector<int> layers;
        for (int l = 0; l < count; ++l) layers.push_back(checked[std::size_t((long long)l * int(checked.size()) / count)]);
        const int tokens = std::min(w.shape().tokens, kMaxSharedTokens);
        const int k = std::clamp(int(std::ceil(c.budget_ratio * tokens)), 1, tokens);
        return check_shared_cache(w, layers, k, exact_shared_optimum(), tokens);
      }));
  checks.push_back(make_check(
      {"h2o.erratum_d28_direction", "theory.md §9 item 3 (H2O Definition D.28)",
       "Definition D.28 prints opt_i >= (1-gamma) opt_{i-1}; Lemmas D.29/D.30 need opt_i >= (1-gamma) opt_{i+1}.",
       "H2O trajectories; gamma measured in each direction",
       "Lemma D.29 fails with the printed gamma on some step and holds with the corrected gamma on every step",
       kSmallFamilies, "proofs_checks/dynamic_lemmas.cpp", Kind::erratum},
      [](const CheckContext& c) { return check_erratum_d28_direction(default_trajectory_setup(c)); }));
  checks.push_back(make_check(
      {"h2o.erratum_zero_padding", "theory.md §9 item 4 (H2O Definitions 2.2 / D.10)",
       "Zero-padding evicted keys leaves them weight exp(0)/Z; evicted positions must carry exactly zero weight.",
       "rows of the workload's heads at H2O caches after the first eviction",
       "zero padding puts weight on evicted positions (printed form fails); the library's tracked attention gives "
       "them exactly 0 and equals a|_G / r(G)",
       {"LLM-like workload"}, "proofs_checks/zero_padding_erratum.cpp", Kind::erratum},
      [](const CheckContext& c) {
        const TrajectorySetup setup = workload_setup(c, scaled_count(4, c.effort));
        return check_erratum_zero_padding(setup.heads, setup.budget, setup.policy, 16, &tracked_attention);
      }));
  return checks;
}

}  // namespace subevict::proofs_checks
