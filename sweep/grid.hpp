#pragma once
/// \file
/// Experiment grids: a TOML file whose lists span workloads, policies, budgets and optimum
/// settings; their cartesian product is the list of jobs (docs/sweeps.md states the format).
///
///   [workload]            presets (strings, required), tokens (0: the preset's default),
///                         layers (an integer: a count, the first L layers, 0: all of the model's;
///                         a string: a layer set such as "0,14,20-29", core/index_set.hpp), seeds;
///                         each a value or a list
///   [workload.params]     any LLM-like generator parameter (core/generator.hpp), a value or list
///   [policy]              names (required), horizon (lookahead's window, one integer)
///   [budget]              ratios in (0, 1] of the sequence length, sizes in [1, tokens];
///                         at least one value in all
///   [optimum]             modes: "flow" (OPT and Σ U_i), "oracle" (Σ U_i), "none"; default flow
///
/// Validation happens before any job runs; every error is an InputError naming the file, the
/// table and the key.

#include <string>
#include <vector>

#include "sweep/job.hpp"

namespace subevict::sweep {

/// The jobs of the grid in `text` (read from `source`, the name used in errors), deduplicated and
/// sorted by id. Throws InputError for TOML syntax errors (with the line), unknown tables or keys,
/// values of the wrong type, empty lists, unknown presets, policies or optimum modes, layer counts
/// above a preset's layers, layer sets that parse_index_set rejects against any preset's layers,
/// invalid generator parameters, and budgets outside their range for any of the grid's token counts.
/// Throws std::logic_error if two different parameter strings hash to one id.
[[nodiscard]] std::vector<Job> parse_grid(const std::string& text, const std::string& source);

/// parse_grid of the file at `path`; throws InputError if it cannot be read.
[[nodiscard]] std::vector<Job> read_grid(const std::string& path);

/// The jobs of shard `index` of `count`: those whose position in `jobs` (sorted by id) is
/// congruent to `index` modulo `count`. Throws std::invalid_argument unless 0 ≤ index < count.
[[nodiscard]] std::vector<Job> shard_jobs(const std::vector<Job>& jobs, int index, int count);

/// Parses "i/N" (0 ≤ i < N); throws InputError naming `--shard` otherwise.
[[nodiscard]] std::pair<int, int> parse_shard(const std::string& text);

}  // namespace subevict::sweep
