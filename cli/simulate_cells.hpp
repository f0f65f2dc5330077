#pragma once
/// \file
/// The work of `subevict simulate`: every selected (layer, KV head) evaluated at every budget, its
/// policies (reference or batched), recorded schedules, optimum and oracle, as one Cell per
/// (head, budget), and each head's budget curve.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cli/simulate_args.hpp"
#include "core/workload.hpp"
#include "greedy/eviction/budgets/budget_curve.hpp"
#include "greedy/eviction/evaluation/head_evaluation.hpp"
#include "greedy/eviction/evaluation/recorded_decisions.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"
#include "greedy/eviction/process/recorded_schedule.hpp"
#include "greedy/eviction/process/schedule_overlap.hpp"
#include "kernels/backend.hpp"
#include "kernels/batched_simulation.hpp"

namespace subevict::cli {

/// The recorded schedules of --decisions, evaluated at the main budget only.
struct RecordedInputs {
  std::vector<greedy::DecisionsFile> files;
  std::vector<std::string> labels;  ///< "recorded:STEM", distinct
  double budget = 0.0;              ///< the main budget value
  greedy::ScheduleAdmission admission = greedy::ScheduleAdmission::kExact;
};

/// Batched traces of the five batched policies by (policy label, budget value), on a non-reference backend.
using BatchedRuns = std::map<std::pair<std::string, double>, kernels::BatchedSimulation>;

/// One (layer, KV head, budget) cell: every policy's trace, the optimum and the oracle.
struct Cell : greedy::HeadEvaluation {
  double budget_value = 0.0;  ///< as given
  /// Per trace, its overlap with the optimum's schedule (--schedules with the optimum; else empty).
  std::vector<greedy::ScheduleOverlap> overlaps;
  /// Recorded traces that --decisions-to-process changed: label -> tokens whose t_j changed.
  std::map<std::string, int> converted;
  /// Wall seconds of the cell's (layer, KV head), all budgets and the budget curve together.
  double head_seconds = 0.0;
};

/// Every batched policy of `specs` (kernels::is_batched_policy) at every budget of `budgets` on
/// every head of `w`, run by `backend`; empty on the reference backend, whose simulator runs them
/// per head instead. Precondition: each budget value is valid for the workload's tokens.
BatchedRuns run_batched(const Workload& w, const std::vector<greedy::PolicySpec>& specs,
                        const std::vector<double>& budgets, kernels::Backend backend);

/// Runs the selected heads on `args.threads` workers (>= 1), one head at a time per worker, every
/// budget of a head in one evaluation (its optimum from one implicit_flow_optima call, or
/// streamed_flow_optima beyond greedy::kStoredGainsTokens), with progress on stderr unless
/// args.quiet. Returns the cells in the order (head, budget): each cell's traces are those of
/// `specs` in their order (from `batched` where it holds the policy, else simulated), then at the
/// main budget the recorded schedules of `recorded`. With --budget-curve K, also each head's
/// OPT(k) for k = 1..K into `curves` (one per head, in the order of `heads`; else empty).
/// Precondition: `budgets` is non-empty, every value valid for the workload's tokens.
std::vector<Cell> run_cells(const Workload& w, const std::vector<std::pair<int, int>>& heads,
                            const std::vector<double>& budgets, const std::vector<greedy::PolicySpec>& specs,
                            const SimulateArgs& args, const BatchedRuns& batched, const RecordedInputs& recorded,
                            std::vector<greedy::BudgetCurve>& curves);

}  // namespace subevict::cli
