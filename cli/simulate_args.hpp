#pragma once
/// \file
/// The options of `subevict simulate` as given on the command line (cli/simulate_command.cpp), and
/// the two readings every part of the command shares: a budget value as a cache size rule, a
/// number as the outputs write it.
///
/// Budgets: a value in (0, 1) is a ratio of the sequence length n (k = max(1, round(ratio n))); a
/// value >= 1 must be an integer and is an absolute size.

#include <cstdint>
#include <string>
#include <vector>

#include "core/number_text.hpp"
#include "greedy/eviction/evaluation/head_evaluation.hpp"

namespace subevict::cli {

/// Every option of `subevict simulate`, unchecked (cli/simulate_inputs.hpp reads and checks them).
struct SimulateArgs {
  std::string preset;
  std::string workload;
  int tokens = 0;
  std::string layers = "0";    ///< a layer set (core/index_set.hpp)
  std::string heads = "all";   ///< a KV head set
  std::string budget = "0.2";  ///< as typed, so that an error names it
  std::string budgets;
  std::string policies = "h2o,local,streamingllm,l2norm,tova,random";
  std::string optimum = "flow";
  double gap = 1e-4;     ///< --optimum certified: the relative gap at which each budget stops
  int budget_curve = 0;  ///< > 0: OPT(k) for every k = 1..K per head
  std::uint64_t seed = 0;
  int horizon = 16;
  int threads = 0;
  std::string output;
  std::string json;
  bool no_plots = false;
  bool quiet = false;
  bool allow_nonfinite = false;
  bool list_policies = false;
  std::string backend;                 ///< empty: the fastest available
  std::vector<std::string> decisions;  ///< recorded schedules (docs/eviction.md "Recorded decisions")
  bool decisions_to_process = false;
  bool schedules = false;
  std::string share;        ///< "", "layer" or "model": adaptive budget rules (cli/share_run.hpp)
  std::string share_rules;  ///< empty: the scope's default rules
  std::string curves;       ///< a budget_curve.csv for --share's static optimum
  double shared_seconds = 600.0;  ///< --share: the column generation's time limit
};

/// The budget value `v` (a ratio in (0, 1) or an integer size) as a Budget; throws InputError
/// naming "simulate" for any other value.
inline greedy::Budget simulate_budget(double v) { return greedy::budget_from_value(v, "simulate"); }

/// `x` as simulate writes numbers into its CSV files, tables and titles: 10 significant digits.
inline std::string simulate_number(double x) { return significant_digits(x, 10); }

}  // namespace subevict::cli
