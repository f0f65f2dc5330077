#include "proofs_checks/dynamic_checks.hpp"

#include <algorithm>
#include <cmath>

#include "core/attention.hpp"
#include "greedy/policy_registry.hpp"
#include "proofs_checks/dynamic_lemmas.hpp"
#include "proofs_checks/dynamic_submodularity.hpp"
#include "proofs_checks/function_check.hpp"
#include "proofs_checks/offline_gap.hpp"
#include "proofs_checks/sparsity_claim.hpp"
#include "proofs_checks/zero_padding_erratum.hpp"

namespace subevict::proofs_checks {
namespace {

/// Longest prefix of a head the offline-optimum comparison solves (the flow has O(n²) arcs).
constexpr int kMaxOfflineTokens = 1024;

const Workload& workload_of(const CheckContext& context) { return context_workload(context, "dynamic checks"); }

/// k = max(1, ceil(ratio · n)), capped at n.
int full_budget(const CheckContext& context, int tokens) {
  return std::clamp(int(std::ceil(context.budget_ratio * tokens)), 1, tokens);
}

/// Full-length H2O trajectories on `count` heads of the workload (at most 512 tokens each).
TrajectorySetup workload_setup(const CheckContext& context, int count) {
  const Workload& w = workload_of(context);
  TrajectorySetup setup;
  setup.heads = heads_from_workload(w, std::min(w.shape().tokens, 512), count);
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
       "The H2O dynamic family f_{S,i}(T) = h(sum_{s in T} acc_{i,s}) is submodular at every step of an H2O trajectory.",
       "h concave non-decreasing (sqrt(z+1)); acc the tracked accumulated attention of the trajectory",
       "gain(x|X) >= gain(x|Y) for X subset of Y, x not in Y (random triples; violation rate with Clopper-Pearson 95%)",
       {"LLM-like workload"}, "proofs_checks/dynamic_submodularity.cpp"},
      [](const CheckContext& c) {
        return check_def41_submodularity(workload_setup(c, scaled_count(4, c.effort)), 8, scaled_count(250, c.effort));
      }));
  checks.push_back(make_check(
      {"h2o.universal_conditions", "H2O, Definitions D.23-D.28",
       "Along H2O trajectories the dynamic family satisfies the universal monotone condition, dynamic conditions 1 "
       "and 2 and the approximate condition, with constants theta, gamma, eps0 that are measured here.",
       "a trajectory of H2O Algorithm 2; opt_i of D.27 by exhaustive search over the previous cache X and Y",
       "f_{S_i,i} monotone; f_{S_i,i}(S_i) >= (1-theta) f_{S_{i-1},i-1}(S_i); opt_i >= (1-gamma) opt_{i+1}; "
       "f >= f~ - eps0, with theta, gamma in [0, 1)",
       kSmallFamilies, "proofs_checks/dynamic_lemmas.cpp"},
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
       "A uniform eps/(2n) error in the dynamic family's increments costs greedy at most eps.",
       "gains perturbed by at most eps/(2n) (eps = 0.1), f = f_{S_i,i} on {0..i} along H2O trajectories, monotone submodular",
       "f(S~) >= (1-1/e) OPT_k - eps, OPT_k by exhaustive search",
       kSmallFamilies, "proofs_checks/dynamic_submodularity.cpp"},
      [](const CheckContext& c) { return check_lemma_d19(default_trajectory_setup(c), default_noisy_greedy(), 0.1); }));
  checks.push_back(make_check(
      {"h2o.claim_d34", "H2O, Definition D.33 and Claim D.34",
       "If the attention rows are (alpha, tau, k)-good, the union of the supports of n samples exceeds S0 by at "
       "most alpha k n.",
       "S0 = the tokens in every sample's support supp_tau(x) = {j : x_j >= tau}, tau = 0.01; alpha = max |supp \\ S0| / k",
       "|union of supp_tau \\ S0| <= alpha k n", {"LLM-like workload (attention rows of the second half of the queries)"},
       "proofs_checks/sparsity_claim.cpp"},
      [](const CheckContext& c) {
        const Workload& w = workload_of(c);
        return check_claim_d34(attention_row_samples(w, scaled_count(4, c.effort)), 0.01,
                               full_budget(c, w.shape().tokens), smallest_good_alpha());
      }));
  checks.push_back(make_check(
      {"h2o.greedy_vs_offline_optimum", "theory.md §5 (offline optimum of the irreversible process)",
       "Every causal policy is bounded by the exact offline optimum, which is bounded by the per-step reversible "
       "oracle and by n.",
       "policies h2o, local, streamingllm, tova, l2norm, random at budget k = ceil(ratio n), no prefill, the first "
       "min(n, 1024) tokens of ceil(3 effort) (layer, KV head) pairs",
       "policy <= OPT_irreversible (LEMON flow) <= sum_i U_i <= n g; ratios policy / OPT reported",
       {"LLM-like workload"}, "proofs_checks/offline_gap.cpp"},
      [](const CheckContext& c) {
        const Workload& w = workload_of(c);
        const Shape& s = w.shape();
        const int count = std::min(scaled_count(3, c.effort), s.layers * s.kv_heads);
        std::vector<int> heads;
        for (int h = 0; h < count; ++h) heads.push_back(int((long long)h * s.layers * s.kv_heads / count));
        const int tokens = std::min(s.tokens, kMaxOfflineTokens);
        const int k = full_budget(c, tokens);
        return check_greedy_vs_offline(w, heads, k, comparison_policies(k), flow_optimum(), c.seed, tokens);
      }));
  checks.push_back(make_check(
      {"h2o.erratum_d28_direction", "theory.md §9 item 3 (H2O Definition D.28)",
       "Definition D.28 prints opt_i >= (1-gamma) opt_{i-1}; Lemmas D.29/D.30 need opt_i >= (1-gamma) opt_{i+1}.",
       "H2O trajectories; gamma measured in each direction",
       "Lemma D.29 fails with the printed gamma on some step and holds with the corrected gamma on every step",
       kSmallFamilies, "proofs_checks/dynamic_lemmas.cpp"},
      [](const CheckContext& c) { return check_erratum_d28_direction(default_trajectory_setup(c)); }));
  checks.push_back(make_check(
      {"h2o.erratum_zero_padding", "theory.md §9 item 4 (H2O Definitions 2.2 / D.10)",
       "Zero-padding evicted keys leaves them weight exp(0)/Z; evicted positions must carry exactly zero weight.",
       "rows of the workload's heads at H2O caches after the first eviction",
       "zero padding puts weight on evicted positions (printed form fails); the library's tracked attention gives "
       "them exactly 0 and equals a|_G / r(G)",
       {"LLM-like workload"}, "proofs_checks/zero_padding_erratum.cpp"},
      [](const CheckContext& c) {
        const TrajectorySetup setup = workload_setup(c, scaled_count(4, c.effort));
        return check_erratum_zero_padding(setup.heads, setup.budget, setup.policy, 16, &tracked_attention);
      }));
  checks.push_back(make_check(
      {"h2o.erratum_d29_stray_term", "theory.md §9 item 5 (H2O Lemma D.29, proof)",
       "The exact-case proof of Lemma D.29 carries a stray -i eps0 term; the bound holds without it.",
       kLemmaHypotheses + "; exact case (eps0 = 0)",
       "f_{S_i,i}(S_{i+1}) >= (1-1/e)(1-theta)^{i+1}(1-gamma)^{i+1} opt_{i+1} with no -i eps0 term",
       kSmallFamilies, "proofs_checks/dynamic_lemmas.cpp"},
      [](const CheckContext& c) { return check_erratum_d29_stray_term(default_trajectory_setup(c)); }));
  return checks;
}

}  // namespace subevict::proofs_checks
