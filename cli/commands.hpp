#pragma once
/// \file
/// Registration of the subevict subcommands. Each add_* function adds one subcommand to `app`
/// whose callback does the work; errors propagate as exceptions that main() turns into one line.

#include <CLI/CLI.hpp>

namespace subevict::cli {

/// `subevict workload generate|inspect|fit`.
void add_workload_command(CLI::App& app);

/// `subevict workload fit` under the `workload` subcommand: a real workload's per-layer
/// statistics fitted by the generator (core/profile_fit.hpp), written as a profile.
void add_workload_fit(CLI::App& workload);

/// `subevict verify`: runs the registry of checks (proofs_checks) on the built-in LLM-like workload
/// or an imported one; prints a table and writes report/ (report.md, results.json, plots).
void add_verify_command(CLI::App& app);

/// `subevict optimum`: greedy against the optimum or a certified bound (facility location from a
/// similarity .npy or an OR-Library p-median file, weighted coverage from an incidence .npy).
void add_optimum_command(CLI::App& app);

/// `subevict regress`: sparse softmax regression by exact or approximate Newton or gradient
/// descent, on a generated instance or on the user's A, b, w (.npy).
void add_regress_command(CLI::App& app);

/// `subevict simulate`: eviction policies per (layer, KV head) on a generated or imported
/// workload against the exact offline optimum (min-cost flow) and the per-step oracle; CSV, JSON
/// and gnuplot plots.
void add_simulate_command(CLI::App& app);

/// `subevict allocate`: the optimal static split of a total cache budget over KV heads from the
/// exact budget curves of `simulate --budget-curve K` (per head, per layer or into two classes).
void add_allocate_command(CLI::App& app);

/// `subevict sweep` and `subevict sweep report`: experiment grids from TOML into a resumable
/// SQLite store, sharded over mpirun ranks or --shard i/N; CSV, Markdown and plots.
void add_sweep_command(CLI::App& app);

}  // namespace subevict::cli
