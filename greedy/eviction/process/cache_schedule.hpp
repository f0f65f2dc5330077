#pragma once
/// \file
/// Cache schedules of the irreversible eviction process (theory.md §2 and §5) and the objective
/// every offline solver maximizes. Steps and tokens are 0-based: token j arrives at step j.
///
/// A schedule gives every token j its last cached step t_j ∈ [j − 1, n − 1]: j belongs to the
/// cache S_i exactly for i ∈ [j, t_j] (t_j = j − 1: evicted on arrival, never cached). Query i
/// attends over G_i = S_{i−1} ∪ {i}; the objective is Σ_i Σ_{j ∈ G_i} W_ij for a non-negative
/// lower-triangular gain matrix W (the attention matrix A, optionally weighted per token and
/// summed over a GQA group: see gain_matrix()).

#include <Eigen/Core>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "greedy/eviction/process/head_group.hpp"

namespace subevict::greedy {

/// W (n × n) from the causal attention matrices of the g query heads of one KV head:
/// W_ij = w_j Σ_h A^(h)_ij, with w = token_weights (e.g. ‖v_j‖ for the value-norm-weighted
/// objective) or all ones when token_weights is empty. The objective is linear in W, so the
/// GQA-summed and weighted optima are the plain optimum of this W. Throws InputError unless there
/// is at least one head, all heads are square of one size, entries are finite and ≥ 0, and
/// token_weights is empty or of length n with finite entries ≥ 0. O(g n²).
Eigen::MatrixXd gain_matrix(const std::vector<Eigen::MatrixXd>& heads,
                            const Eigen::VectorXd& token_weights = {});

/// gain_matrix of one (layer, KV head): the exact causal attention of each of the group's query
/// heads (core/attention.hpp causal_attention, scale group.scale), summed, times ‖v_j‖ per token
/// when weight_by_value_norm. O(g n² d) time, 16 n² bytes of memory.
Eigen::MatrixXd gain_matrix(const HeadGroup& group, bool weight_by_value_norm = false);

/// Throws InputError(source, ...) unless `gains` is square with finite entries ≥ 0 and exactly 0
/// above the diagonal. O(n²).
void validate_gains(const Eigen::MatrixXd& gains, const std::string& source);

/// Throws InputError(source, "budget", ...) unless budget ≥ 0.
void validate_budget(int budget, const std::string& source);

/// validate_gains and validate_budget with `solver` as the source; returns n.
int validate_instance(const Eigen::MatrixXd& gains, int budget, const std::string& solver);

/// How an offline solver ended.
enum class ScheduleStatus {
  kOptimal,   ///< `value` is proven maximal (up to `upper_bound - value`)
  kFeasible,  ///< a feasible schedule without a proof of optimality (heuristics, limits hit)
  kFailed,    ///< no schedule: the solver failed (its message says why)
};

/// "optimal" / "feasible" / "failed".
std::string to_string(ScheduleStatus status);

/// The result of every offline solver (flow, dynamic programming, integer program, lookahead).
struct ScheduleSummary {
  ScheduleStatus status = ScheduleStatus::kFailed;
  /// Objective Σ_i Σ_{j ∈ G_i} W_ij of `last_step`, recomputed from the schedule (schedule_value).
  double value = 0.0;
  /// A proven upper bound on the optimum: `value` for exact solvers without a dual certificate,
  /// the LP dual bound for the flow solver, +infinity for heuristics.
  double upper_bound = std::numeric_limits<double>::infinity();
  /// t_j per token (see the file comment); empty when status is kFailed.
  std::vector<int> last_step;
  /// r_i = Σ_{j ∈ G_i} W_ij per step (schedule_step_mass); sums to `value`.
  Eigen::VectorXd step_mass;
  /// Size of the model solved: arcs (flow), cache states (dynamic programming), variables
  /// (integer program), flow solves (lookahead).
  std::uint64_t model_size = 0;
  /// Branch-and-bound nodes (integer program) or pivots where the solver reports them, else 0.
  std::uint64_t nodes = 0;
  /// Wall-clock seconds, model building included.
  double seconds = 0.0;
  /// Why the solver failed or stopped early; empty otherwise.
  std::string message;
};

/// |S_i| for i = 0..n−1 under `last_step`. Precondition: last_step[j] ∈ [j − 1, n − 1]
/// (std::invalid_argument otherwise). O(n).
std::vector<int> cache_sizes(const std::vector<int>& last_step);

/// True when every t_j ∈ [j − 1, n − 1] and |S_i| ≤ budget for every step i. O(n).
bool is_feasible_schedule(const std::vector<int>& last_step, int budget);

/// r_i = Σ_{j ∈ G_i} W_ij, G_i = {i} ∪ {j < i : t_j ≥ i − 1}. Preconditions: gains n × n,
/// last_step of length n with t_j ∈ [j − 1, n − 1] (std::invalid_argument). O(n²).
Eigen::VectorXd schedule_step_mass(const Eigen::MatrixXd& gains, const std::vector<int>& last_step);

/// Σ_i r_i: the objective of the schedule (same preconditions and cost as schedule_step_mass).
double schedule_value(const Eigen::MatrixXd& gains, const std::vector<int>& last_step);

/// The schedule of a sequence of caches: sets[i] = S_i (any order, tokens ≤ i). t_j is the last
/// i with j ∈ S_i, or j − 1 when j is in no S_i. Throws std::invalid_argument for a token > i in
/// S_i or a cache that takes back an evicted token. O(Σ |S_i|).
std::vector<int> schedule_from_caches(const std::vector<std::vector<int>>& sets);

/// The schedule on a layer with a sliding window of `window` keys (> 0): every token leaves once
/// no later query sees it, t_j = min(t_j, j + window − 2) (query j + window − 1 is its last);
/// unchanged for window 0. It changes no step's mass (the dropped entries have weight 0). Throws
/// std::invalid_argument for window < 0.
std::vector<int> drop_outside_window(std::vector<int> last_step, int window);

/// True when `last_step` follows the process rules of theory.md §2 exactly: feasible, and
/// |S_i| = min(i + 1, budget) at every step (nothing evicted while the cache is not full; once
/// full exactly one token of G_i leaves per step). O(n).
/// With a sliding window of `window` keys (> 0) token i + 1 − W leaves at step i first, without
/// an eviction (simulator.hpp), so the rules are: t_j ≤ j + W − 2 and |S_i| = min(v_i, budget),
/// v_i = i + 1 − max(0, i + 2 − W) the arrived tokens query i + 1 sees.
bool is_process_schedule(const std::vector<int>& last_step, int budget, int window = 0);

/// A process schedule (is_process_schedule) that keeps every token at least as long as the
/// feasible schedule `last_step` does (S'_i ⊇ S_i at every step, so its step masses are ≥ for
/// any gains ≥ 0): S'_{i} = G'_i while |G'_i| ≤ budget, else G'_i minus its token with the
/// earliest t_j (ties: lowest index), which is never in S_i. This is why the flow relaxation
/// (caches at most `budget`, any number of evictions per step) and the process have the same
/// optimum. With a sliding window of `window` keys (> 0), G'_i first loses token i + 1 − W (it
/// leaves the window, not an eviction), and `last_step` must already end there (t_j ≤ j + W − 2,
/// drop_outside_window). Precondition: is_feasible_schedule(last_step, budget) and that bound
/// (std::invalid_argument). O(n log budget).
std::vector<int> to_process_schedule(const std::vector<int>& last_step, int budget, int window = 0);

/// The result for n = 0 tokens: optimal, value and upper bound 0, empty schedule.
ScheduleSummary empty_schedule_summary();

/// Fills step_mass and value of `summary` from its last_step (the recomputation every solver does
/// as a check of its own bookkeeping). Precondition: as schedule_step_mass.
void finish_summary(const Eigen::MatrixXd& gains, ScheduleSummary& summary);

}  // namespace subevict::greedy
