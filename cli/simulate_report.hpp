#pragma once
/// \file
/// What `subevict simulate` prints on stdout: the policy list of --list-policies, and after a run
/// the headline table of mean retained mass at the main budget and the notes on converted
/// recorded schedules.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/simulate_args.hpp"
#include "cli/simulate_cells.hpp"
#include "core/shape.hpp"

namespace subevict::cli {

/// Every policy with its parameters and defaults (--list-policies).
void print_policies();

/// The run's summary: the workload, selection and budgets; per series of `doc`'s "aggregate" at
/// `main_budget`, its mean retained mass with policy / OPT (a value where OPT is exact on every
/// cell of `cells`, else the certified interval) and the heads it did not compress; whether the
/// order policy <= OPT <= sum U <= n holds ("checked for the parts computed" unless --optimum
/// flow); "wrote `written`"; then each recorded schedule evaluated after conversion.
void print_simulate_report(const Shape& shape, const std::vector<int>& layers, const std::vector<int>& kv,
                           const std::vector<double>& budgets, double main_budget, const std::vector<Cell>& cells,
                           const nlohmann::json& doc, const std::string& optimum, const std::string& written);

}  // namespace subevict::cli
