#pragma once
/// \file
/// `subevict simulate --share layer|model`: the library's share study (greedy/eviction/budgets/
/// share_study.hpp: adaptive budget rules, each with every scoring policy given, against three
/// optima of the same total budget; docs/allocation.md) on the selected layers, formatted.

#include <cstdint>
#include <string>
#include <vector>

#include "core/workload.hpp"
#include "greedy/eviction/budgets/share_rule.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"

namespace subevict::cli {

struct ShareRequest {
  bool model = false;  ///< the scope: the whole model (true) or each layer (false)
  std::vector<greedy::ShareRule> rules;
  std::vector<greedy::PolicySpec> scorers;  ///< ranking policies
  int budget = 1;                           ///< k, the mean per KV head
  std::string budget_text;                  ///< as given, for the report
  std::string curves;                       ///< a budget_curve.csv to read the curves from (else computed)
  /// Where the shared optimum needs the column generation (the explicit network does not fit):
  /// stop after the round that passes this many seconds, with its certified interval; 0: no limit.
  double shared_seconds = 600.0;
  int threads = 1;
  bool quiet = false;
  std::uint64_t seed = 0;
  std::string output, json;
};

/// Runs greedy::share_study on every KV head of `layers` of `w`, writes share.csv and results.json
/// into request.output (and request.json) and prints the totals. Precondition: every scorer
/// accepts the budget k (simulate checks each policy at its budgets). Throws share_study's
/// InputError (naming simulate's flags) before any work, and nothing is written then.
void run_share(const Workload& w, const std::vector<int>& layers, const ShareRequest& request);

}  // namespace subevict::cli
