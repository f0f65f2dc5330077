#pragma once
/// \file
/// The report of a sweep: the rows of the results store as one CSV (sorted by job id), a Markdown
/// summary and two figures (mean retained mass vs budget per policy with OPT and Σ U_i; gap to the
/// optimum per preset and policy).
///
/// Aggregation: a budget's x value is its ratio of n (sizes are divided by the job's n); each
/// point is the plain mean over the jobs with that (policy, x), i.e. over presets, tokens, layers,
/// seeds and generator parameters alike. OPT and Σ U_i at x are means over the jobs that computed
/// them. The gap to the optimum of a job is OPT − policy (same units, ≥ 0 up to rounding).

#include <map>
#include <string>
#include <vector>

#include "core/plot.hpp"
#include "sweep/result_store.hpp"

namespace subevict::sweep {

/// The report files by name: sweep.csv, summary.md and the figures' data and gnuplot scripts
/// (core/plot.hpp): retained_vs_budget.{dat,gp} (budget_curve_figure) and, when some job computed
/// OPT, gap_to_optimum.{dat,gp} (one category per preset, one bar per policy: the mean of OPT −
/// policy over that preset's jobs, all budgets pooled). `rows` must be sorted by id.
[[nodiscard]] std::map<std::string, std::string> build_report(const std::vector<ResultRow>& rows);

/// The figure "retained_vs_budget", shared by the sweep report and `simulate`: mean retained mass
/// per step against budget / n on a log axis (tics at the budgets), one line per policy of
/// `policies` (in that order), then the bound curves OPT and sum U_i when `curves` has them.
/// `curves` maps a series ("OPT", "sum_U" or a policy) to its points (budget / n → mean retained
/// mass); `scope` (e.g. "mean over 12 jobs") ends the title.
[[nodiscard]] plot::Figure budget_curve_figure(const std::map<std::string, std::map<double, double>>& curves,
                                               const std::vector<std::string>& policies, const std::string& scope);

}  // namespace subevict::sweep
