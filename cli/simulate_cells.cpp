// `subevict simulate`: the evaluation of every selected (layer, KV head) at every budget
// (cli/simulate_cells.hpp).

#include "cli/simulate_cells.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>

#include "core/number_text.hpp"
#include "core/parallel_units.hpp"
#include "core/progress.hpp"
#include "greedy/eviction/process/head_group.hpp"

namespace subevict::cli {
namespace {

using greedy::Trace;

/// "(layer L, KV head H`rest`)": a progress note on a head.
std::string head_note(int layer, int kv, const std::string& rest) {
  return "(layer " + std::to_string(layer) + ", KV head " + std::to_string(kv) + rest + ")";
}

/// The evaluation options every head shares; with fewer heads than workers, each head's streamed
/// passes take the idle ones.
greedy::HeadEvaluationOptions evaluation_options(const SimulateArgs& args, std::size_t heads) {
  greedy::HeadEvaluationOptions options;
  options.seed = args.seed;
  options.horizon = args.horizon;
  options.optimum = greedy::parse_optimum_mode(args.optimum, "simulate");
  options.relative_gap = args.gap;
  options.threads = std::max(1, std::max(1, args.threads) / std::max(1, int(heads)));
  return options;
}

/// Sets the callbacks that note on `progress` what a head of streamed gains (rounds of minutes) is doing.
void watch_streamed_head(greedy::HeadEvaluationOptions& options, Progress& progress, int layer, int kv) {
  options.on_progress = [&progress, layer, kv](const std::string& what) {
    progress.advance(0, head_note(layer, kv, ": " + what));
  };
  options.on_optimum_round = [&progress, layer, kv](const greedy::ImplicitFlowRound& r) {
    progress.advance(0, head_note(layer, kv,
                                  ": optimum round " + std::to_string(r.round) + ", relative gap " +
                                      significant_digits((r.upper_bound - r.value) / r.upper_bound, 2) + ", " +
                                      significant_digits(r.seconds, 3) + " s"));
  };
}

/// Puts the cell's traces in the order of `specs`: the batched run's trace where `batched` holds
/// the policy at the cell's budget, else the next of the simulated ones (cell.traces, in order).
void order_traces(Cell& cell, const std::vector<greedy::PolicySpec>& specs, const BatchedRuns& batched) {
  std::vector<Trace> ordered;
  std::size_t from_rest = 0;
  for (const auto& spec : specs) {
    const auto it = batched.find({spec.label(), cell.budget_value});
    if (it != batched.end()) {
      ordered.push_back(it->second.trace(cell.layer, cell.kv_head));
      ordered.back().policy = spec.label();
    } else {
      ordered.push_back(std::move(cell.traces[from_rest++]));
    }
  }
  cell.traces = std::move(ordered);
}

/// Appends the trace of every recorded schedule at budget k = `size`, noting the ones converted.
void add_recorded(Cell& cell, const Workload& w, const RecordedInputs& recorded, int size, std::uint64_t seed) {
  greedy::SimulationOptions sim;
  sim.budget = size;
  sim.seed = seed;
  for (std::size_t f = 0; f < recorded.files.size(); ++f) {
    greedy::RecordedRun run = greedy::simulate_recorded(w, cell.layer, cell.kv_head, recorded.files[f],
                                                        recorded.labels[f], sim, recorded.admission);
    if (run.admitted.converted) cell.converted[recorded.labels[f]] = run.admitted.changed_tokens;
    cell.traces.push_back(std::move(run.trace));
  }
}

/// Each trace's overlap with the optimum's schedule (streamed gains: no dense n x n matrix at any length).
void add_overlaps(Cell& cell, const Workload& w) {
  const greedy::HeadGroup group = greedy::head_group(w, cell.layer, cell.kv_head);
  for (const Trace& t : cell.traces) {
    cell.overlaps.push_back(greedy::schedule_overlap(group, t.last_step(), cell.optimum.last_step));
  }
}

/// OPT(k) for k = 1..args.budget_curve on (layer, kv), reported on `progress` in chunks of K/16
/// points, so that a long curve on one head shows it is alive.
greedy::BudgetCurve head_curve(const Workload& w, int layer, int kv, const SimulateArgs& args,
                               const greedy::HeadEvaluationOptions& options, Progress& progress) {
  const long long curve = args.budget_curve;
  const long long curve_chunk = std::max(1LL, curve / 16);
  long long reported = 0;
  const auto report = [&](int done) {
    if (done - reported < curve_chunk && done < curve) return;
    progress.advance(done - reported, head_note(layer, kv, ": curve to k = " + std::to_string(done)));
    reported = done;
  };
  return greedy::optimum_budget_curve(w, layer, kv, args.budget_curve,
                                      options.optimum == greedy::OptimumMode::kCertified ? args.gap : 0.0, report,
                                      options.threads);
}

}  // namespace

BatchedRuns run_batched(const Workload& w, const std::vector<greedy::PolicySpec>& specs,
                        const std::vector<double>& budgets, kernels::Backend backend) {
  BatchedRuns batched;
  if (backend == kernels::Backend::kReference) return batched;
  for (const auto& spec : specs) {
    if (!kernels::is_batched_policy(spec.name)) continue;
    for (double b : budgets) {
      kernels::BatchedOptions options;
      options.policy = kernels::parse_batched_policy(spec.name);
      options.budget = simulate_budget(b).resolve(w.shape().tokens, 0);
      options.params = spec.params;
      batched.emplace(std::pair{spec.label(), b}, kernels::simulate_batched(w, options, backend));
    }
  }
  return batched;
}

std::vector<Cell> run_cells(const Workload& w, const std::vector<std::pair<int, int>>& heads,
                            const std::vector<double>& budgets, const std::vector<greedy::PolicySpec>& specs,
                            const SimulateArgs& args, const BatchedRuns& batched, const RecordedInputs& recorded,
                            std::vector<greedy::BudgetCurve>& curves) {
  const int n = w.shape().tokens;
  std::vector<Cell> cells(heads.size() * budgets.size());
  curves.assign(args.budget_curve > 0 ? heads.size() : 0, greedy::BudgetCurve{});
  std::vector<int> sizes;  // k per budget value
  for (double b : budgets) sizes.push_back(simulate_budget(b).resolve(n, 0));
  std::vector<greedy::PolicySpec> rest;  // the policies the reference simulator runs (batched: all budgets or none)
  for (const auto& spec : specs) {
    if (!batched.count({spec.label(), budgets.front()})) rest.push_back(spec);
  }
  const greedy::HeadEvaluationOptions options = evaluation_options(args, heads.size());
  // With a budget curve a unit is a group or one curve point.
  const long long curve = args.budget_curve;
  Progress progress("simulate", (long long)heads.size() * (1 + curve),
                    curve > 0 ? "units (head groups and curve points)" : "(layer, KV head) groups", args.quiet);
  parallel_for(int(heads.size()), std::max(1, args.threads), [&](int h) {
    const auto start = std::chrono::steady_clock::now();
    const auto [layer, kv] = heads[std::size_t(h)];
    greedy::HeadEvaluationOptions head_options = options;
    if (n > options.stored_gains_tokens) watch_streamed_head(head_options, progress, layer, kv);
    std::vector<greedy::HeadEvaluation> evaluations =
        greedy::evaluate_head_budgets(w, layer, kv, rest, sizes, head_options);
    for (std::size_t b = 0; b < budgets.size(); ++b) {
      Cell& cell = cells[std::size_t(h) * budgets.size() + b];
      cell.budget_value = budgets[b];
      static_cast<greedy::HeadEvaluation&>(cell) = std::move(evaluations[b]);
      order_traces(cell, specs, batched);
      if (cell.budget_value == recorded.budget) add_recorded(cell, w, recorded, sizes[b], args.seed);
      if (args.schedules && cell.has_optimum) add_overlaps(cell, w);
    }
    if (args.budget_curve > 0) curves[std::size_t(h)] = head_curve(w, layer, kv, args, options, progress);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (std::size_t b = 0; b < budgets.size(); ++b) cells[std::size_t(h) * budgets.size() + b].head_seconds = seconds;
    progress.advance(1, head_note(layer, kv, ", " + significant_digits(seconds, 3) + " s"));
  });
  return cells;
}

}  // namespace subevict::cli
