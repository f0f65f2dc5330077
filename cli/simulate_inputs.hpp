#pragma once
/// \file
/// The inputs of `subevict simulate`, read from its options and checked before any work: the
/// policies, budgets, recorded schedules and --share rules (cheap, before the workload), then the
/// workload itself, generated or read, with the selected layers and KV heads.

#include <vector>

#include "cli/simulate_args.hpp"
#include "cli/simulate_cells.hpp"
#include "core/workload.hpp"
#include "greedy/eviction/budgets/share_rule.hpp"
#include "greedy/eviction/evaluation/head_evaluation.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"
#include "kernels/backend.hpp"

namespace subevict::cli {

/// What the options ask for, read and checked without the workload.
struct SimulateInputs {
  std::vector<greedy::PolicySpec> specs;  ///< --policies, in order
  greedy::OptimumMode optimum = greedy::OptimumMode::kFlow;
  std::vector<greedy::ShareRule> share_rules;  ///< --share's rules (empty without --share)
  kernels::Backend backend = kernels::Backend::kReference;
  double main_budget = 0.0;     ///< --budget
  std::vector<double> budgets;  ///< --budget and --budgets, ascending, distinct
  RecordedInputs recorded;      ///< --decisions, read
};

/// The workload and the selection to run on it.
struct SimulateWorkload {
  Workload w;
  std::vector<int> layers;   ///< --layers, ascending
  std::vector<int> kv;       ///< --heads, ascending
};

/// Reads and checks every option that does not need the workload, in the order an error names the
/// first bad one: throws CLI::RequiredError without -o, InputError for a bad or missing input, a
/// --json directory that does not exist, a bad optimum, gap, budget curve, thread count, horizon,
/// policy, --share option (or a --share-only option without --share), an unavailable backend, a
/// bad budget, or --decisions files that are unreadable or share a name.
SimulateInputs read_simulate_inputs(const SimulateArgs& args);

/// Reads the --workload file or generates the --preset workload (on `inputs.backend`; the
/// reference generates only the selected KV heads), with progress on stderr unless args.quiet, and
/// checks it against the request: throws InputError for layers or heads outside the workload,
/// --tokens that contradict the file, non-finite attention in the selection (with
/// --allow-nonfinite), a budget a policy rejects, recorded schedules that do not fit, a budget
/// curve longer than the workload, or what needs the stored gains beyond
/// greedy::kStoredGainsTokens tokens.
SimulateWorkload load_simulate_workload(const SimulateArgs& args, const SimulateInputs& inputs);

}  // namespace subevict::cli
