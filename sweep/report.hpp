#pragma once
/// \file
/// The report of a sweep: the rows of the results store as one CSV (sorted by job id), a Markdown
/// summary and gnuplot data and script for two plots (mean retained mass vs budget per policy with
/// OPT and Σ U_i; gap to the optimum per preset and policy).
///
/// Aggregation: a budget's x value is its ratio of n (sizes are divided by the job's n); each
/// point is the plain mean over the jobs with that (policy, x), i.e. over presets, tokens, layers,
/// seeds and generator parameters alike. OPT and Σ U_i at x are means over the jobs that computed
/// them. The gap to the optimum of a job is OPT − policy (same units, ≥ 0 up to rounding).

#include <map>
#include <string>
#include <vector>

#include "sweep/result_store.hpp"

namespace subevict::sweep {

/// The report files by name: sweep.csv, summary.md, retained_vs_budget.dat, gap_to_optimum.dat and
/// plots.gp (which writes retained_vs_budget.{svg,png} and gap_to_optimum.{svg,png} when run by
/// gnuplot in the directory holding the .dat files). `rows` must be sorted by id.
[[nodiscard]] std::map<std::string, std::string> build_report(const std::vector<ResultRow>& rows);

}  // namespace subevict::sweep
