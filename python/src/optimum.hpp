#pragma once
/// \file
/// The offline optimum and the per-step oracle as the bindings see them: the one place that calls
/// the solvers of greedy/eviction/optimum/ (optimum_binding.cpp), so that a change of the solver's
/// API or a new result field (a budget curve, a certificate) is made here alone.

#include <vector>

#include "bindings.hpp"
#include "core/workload.hpp"
#include "greedy/eviction/evaluation/head_evaluation.hpp"
#include "greedy/eviction/optimum/step_oracle.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"

namespace subevict::python {

/// The per-step oracle and (modes flow and certified) the offline optimum of (layer, kv_head) at
/// each budget k, exactly as `subevict simulate` computes them: greedy::evaluate_head_budgets
/// without policies (its traces are empty); `relative_gap` is where mode certified stops;
/// `oracle_sets` keeps the oracle's chosen sets; `schedules` (empty, or one list per budget) are
/// valued on the same gains (HeadEvaluation::schedule_step_mass); `optimum_rows` (empty: every
/// row) restricts the gains of oracle, optimum and schedules to those query rows
/// (HeadEvaluationOptions::optimum_rows); `oracle` false skips the per-step oracle beside an optimum
/// (HeadEvaluationOptions::oracle). Call without the GIL.
std::vector<greedy::HeadEvaluation> head_optima(const Workload& workload, int layer, int kv_head,
                                                const std::vector<int>& budgets, greedy::OptimumMode mode,
                                                double relative_gap, bool oracle_sets = false,
                                                std::vector<std::vector<std::vector<int>>> schedules = {},
                                                std::vector<int> optimum_rows = {}, bool oracle = true);

/// {'status', 'total', 'upper_bound', 'step_mass', 'last_step', 'arcs', 'nodes', 'seconds',
/// 'message'}: every mass divided by `scale` (the group size g for `simulate`'s per-query-head
/// units, 1 for the raw objective). Needs the GIL.
nb::dict schedule_dict(greedy::ScheduleSummary&& summary, double scale);

/// {'total', 'per_step', 'chosen' (when kept)}, masses divided by `scale`. Needs the GIL.
nb::dict oracle_dict(greedy::StepOracle&& oracle, double scale);

}  // namespace subevict::python
