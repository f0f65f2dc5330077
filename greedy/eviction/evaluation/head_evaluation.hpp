#pragma once
/// \file
/// One (layer, KV head, budget) evaluation: every named policy's simulation, the exact offline
/// optimum (min-cost flow) and the per-step oracle Σ_i U_i (theory.md §§2, 5). The unit of work
/// shared by `subevict simulate` (one workload, many heads and budgets) and `subevict sweep`
/// (one job per grid cell).
///
/// Budgets as users write them: a value in (0, 1) is a ratio of the sequence length n
/// (k = max(1, round(ratio n))); a value ≥ 1 must be an integer and is an absolute size.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/workload.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"
#include "greedy/eviction/policies/eviction_policy.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"
#include "greedy/eviction/evaluation/mass_order.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/optimum/implicit_flow.hpp"
#include "greedy/eviction/optimum/step_oracle.hpp"

namespace subevict::greedy {

/// What to compute beside the policies: nothing, the oracle Σ_i U_i only, the oracle and the exact
/// offline optimum OPT_irreversible, or the oracle and a certified interval [value, upper bound]
/// around OPT whose relative width is at most the requested gap (implicit_flow.hpp).
enum class OptimumMode { kNone, kOracle, kFlow, kCertified };

/// "none" / "oracle" / "flow" / "certified"; parse throws InputError(source, field, ...) for
/// other names (field: how the caller's input names the mode, e.g. "--optimum").
[[nodiscard]] std::string to_string(OptimumMode mode);
[[nodiscard]] OptimumMode parse_optimum_mode(const std::string& name, const std::string& source,
                                             const std::string& field = "optimum");

/// What budget_from_value accepts, in words (for error messages).
inline constexpr const char* kBudgetExpectation =
    "a ratio in (0, 1) of the sequence length or an integer size in [1, 2147483647]";

/// A user budget value: a ratio in (0, 1) or an integer in [1, INT_MAX]. Throws
/// InputError(source, "budget", kBudgetExpectation, value) for anything else (≤ 0, non-finite, a
/// non-integer ≥ 1, an integer too large for a cache size).
[[nodiscard]] Budget budget_from_value(double value, const std::string& source);

/// One budget value as users write it ("0.2", "64", " 1e2 "): the whole text, spaces around it
/// aside, is a number (std::stod) that budget_from_value accepts. Returns it; throws
/// InputError(source, field, kBudgetExpectation, text) otherwise (not a number, trailing text,
/// out of double's range, or a value budget_from_value refuses: ≤ 0, inf, nan, 2.5, 3e9).
[[nodiscard]] double parse_budget_value(const std::string& text, const std::string& source,
                                        const std::string& field = "budget");

/// A comma-separated list of budget values ("0.05,0.1,64"), each read by parse_budget_value;
/// empty items are skipped, so "" gives an empty list (the caller decides whether that is allowed).
[[nodiscard]] std::vector<double> parse_budget_list(const std::string& text, const std::string& source,
                                                    const std::string& field = "budget");

/// A policy by command-line name: the registry's names (policy_registry.hpp) or "lookahead" with
/// window `horizon`. Throws InputError for an unknown name or a horizon < 1.
[[nodiscard]] std::unique_ptr<EvictionPolicy> make_named_policy(const std::string& name, int horizon);

/// Up to this many tokens the optimum stores the gains at all (float beyond kDoubleGainsTokens:
/// 2.1 GB at 32768); beyond, it streams them (streamed_flow.hpp: memory O(g n d), one
/// recomputation of the attention per pass) and the oracle, which sorts whole rows of the stored
/// gains, is not computed (has_oracle false).
inline constexpr int kStoredGainsTokens = 32768;

struct HeadEvaluationOptions {
  int budget = 1;                         ///< k (absolute, ≥ 1)
  std::uint64_t seed = 0;                 ///< seed of randomized policies
  int horizon = 16;                       ///< window of the lookahead policy
  OptimumMode optimum = OptimumMode::kFlow;
  /// The relative gap at which kCertified stops (finite, > 0).
  double relative_gap = 1e-4;
  /// Heads of more tokens than this stream their gains for the optimum (default kStoredGainsTokens;
  /// a test lowers it to compare both ways on one head).
  int stored_gains_tokens = kStoredGainsTokens;
  /// Keep the oracle's chosen sets (StepOracle::chosen) of every budget (stored gains only).
  bool oracle_sets = false;
  /// Compute the per-step oracle beside an optimum of mode kFlow or kCertified on stored gains
  /// (false: has_oracle false, for a caller that reads the optimum alone; mode kOracle and
  /// oracle_sets compute it regardless).
  bool oracle = true;
  /// Heads of more tokens than this store float gains (default kDoubleGainsTokens; a test lowers it
  /// to run the float path on a small head).
  int double_gains_tokens = -1;
  /// Called after every round of the optimum's column generation, every budget in turn (may be
  /// empty): how a caller shows that a head whose rounds take minutes (streamed gains) is alive.
  std::function<void(const ImplicitFlowRound&)> on_optimum_round;
  /// Called with what the head is doing as each part starts ("exact rows", "optimum") and, while
  /// a policy runs, with its label, budget and steps done (SimulationOptions::on_steps); may be
  /// empty. How a caller shows that a head whose parts take minutes is alive.
  std::function<void(const std::string&)> on_progress;
  /// Schedules (last_step per token, cache_schedule.hpp) to value on the stored gains, per budget
  /// (empty, or one list per budget): HeadEvaluation::schedule_step_mass. How a caller that ran
  /// its policies without metrics gets their retained mass from the gains the optimum needs
  /// anyway. Stored gains only (evaluate_head_budgets refuses them on streamed gains).
  std::vector<std::vector<std::vector<int>>> schedules{};
  /// Threads (≥ 1) the exact rows of the policies' metrics and the passes of streamed gains run on
  /// (group_exact_rows, StreamedGains): a caller that evaluates
  /// fewer heads than it has cores at once gives each head the rest (one long head, the whole
  /// machine). With 2 or more, policies and an optimum, the policies run on a thread of their own
  /// beside the optimum. Results do not depend on it.
  int threads = 1;
  /// Query rows R (query_rows.hpp; empty: every row). When given, the oracle, the optimum and the
  /// schedules' step masses are those of the row-restricted gains W' (W'_ij = W_ij for i ∈ R, else
  /// 0) on every path (stored double, stored float, streamed): the optimum is the most mass an
  /// irreversible cache keeps on R's rows, its value and step_mass count R's rows only (0 on the
  /// others), and the oracle is U_i on R's rows, 0 on the others (an upper bound on any schedule's
  /// R-mass; its chosen sets are the full rows' choice on every row, step_oracle.hpp
  /// restrict_to_rows). The policies' traces are unchanged
  /// (full rows). Indices in [0, n), any order, duplicates merged; evaluate_head_budgets throws
  /// InputError("evaluate_head", "optimum_rows", ...) otherwise.
  std::vector<int> optimum_rows{};
};

/// Up to this many tokens the optimum stores the gains in double (8 bytes per entry of the lower
/// triangle: 1.07 GB at 16384); beyond, in float (implicit_flow.hpp: exact for the float-rounded
/// gains, the schedule's value recomputed from them).
inline constexpr int kDoubleGainsTokens = 16384;

/// The evaluation of one (layer, KV head) at one budget. Masses in `traces` are sums over the g
/// query heads (Trace::total_retained_mass); `optimum.value` and `oracle.total` are on the group's
/// summed attention, i.e. on the same scale.
struct HeadEvaluation {
  int layer = 0, kv_head = 0, heads = 1, tokens = 0, budget = 0;
  std::vector<Trace> traces;  ///< one per policy, in the order given
  bool has_optimum = false;   ///< optimum holds OPT (flow mode and the solver proved optimality)
  /// optimum holds a feasible schedule and a certified upper bound (certified mode; also set
  /// with has_optimum): OPT ∈ [optimum.value, optimum.upper_bound].
  bool has_interval = false;
  bool has_oracle = false;    ///< oracle holds Σ_i U_i (any mode but none)
  ScheduleSummary optimum;
  StepOracle oracle;
  /// Seconds this (layer, KV head) spent on its gains, oracle and optimum for all its budgets
  /// together (the same value in each budget's evaluation); 0 in mode none.
  double optimum_seconds = 0.0;
  /// The optimum and oracle ran on float-rounded gains (stored, beyond kDoubleGainsTokens tokens):
  /// compare them with the policies' double masses at mass_order_slack(true).
  bool float_gains = false;
  /// The per-step retained mass (sum over the group's query heads) of each schedule of
  /// HeadEvaluationOptions::schedules at this budget, on the same gains as the optimum (restricted
  /// to HeadEvaluationOptions::optimum_rows when given: 0 on the other rows).
  std::vector<Eigen::VectorXd> schedule_step_mass{};
};

/// Simulates every policy of `policies` on (layer, kv_head) of `workload` with budget k, then the
/// oracle and the optimum as `options.optimum` asks (evaluate_head_budgets with one budget).
/// Throws as make_named_policy, simulate, step_oracle and implicit_flow_optimum do.
[[nodiscard]] HeadEvaluation evaluate_head(const Workload& workload, int layer, int kv_head,
                                           const std::vector<std::string>& policies,
                                           const HeadEvaluationOptions& options);

/// evaluate_head with parameterized policies (policy_spec.hpp); `options.horizon` is unused (each
/// spec carries its own) and each trace's `policy` is its spec's label().
[[nodiscard]] HeadEvaluation evaluate_head(const Workload& workload, int layer, int kv_head,
                                           const std::vector<PolicySpec>& policies,
                                           const HeadEvaluationOptions& options);

/// evaluate_head for every budget of `budgets` (absolute, ≥ 1; `options.budget` is ignored), in
/// that order: the policies are simulated per budget, while the gains are stored once
/// (triangular_gain_matrix: double up to kDoubleGainsTokens tokens, float up to
/// kStoredGainsTokens), the oracle of every budget comes from one sort per row (step_oracles), and
/// the optimum of every budget from one implicit_flow_optima call; beyond kStoredGainsTokens the
/// optimum comes from streamed_flow_optima (one thread per head) and there is no oracle. Throws
/// InputError for an invalid gap or budget.
[[nodiscard]] std::vector<HeadEvaluation> evaluate_head_budgets(const Workload& workload, int layer, int kv_head,
                                                                const std::vector<PolicySpec>& policies,
                                                                const std::vector<int>& budgets,
                                                                const HeadEvaluationOptions& options);

/// Mean over the steps of a trace's output relative error (0 for an empty trace).
[[nodiscard]] double mean_output_error(const Trace& trace);

/// Mean over the steps of a trace's total variation 1 − r_i (0 for an empty trace).
[[nodiscard]] double mean_total_variation(const Trace& trace);

}  // namespace subevict::greedy
