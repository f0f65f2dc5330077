#pragma once
/// \file
/// The budgets a static share rule (uniform, pyramidkv, duo; share_rule.hpp) gives each head of a
/// share study before any token is scored, and the check that every head's policy accepts its
/// budget. AdaKV moves slots between heads at every step and has no static plan (adakv_share.hpp).

#include <string>
#include <utility>
#include <vector>

#include "core/workload.hpp"
#include "greedy/eviction/budgets/share_rule.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"

namespace subevict::greedy {

/// The heads of a share study: (layer, KV head) layer-major, and its units, each a list of indices
/// into `heads` that share one total (a layer, or the whole model).
struct ShareHeads {
  std::vector<std::pair<int, int>> heads;
  std::vector<std::vector<int>> units;
};

/// One static rule's budgets per head, which heads stream (duo) and what the rule did.
struct SharePlan {
  std::vector<int> budgets;
  std::vector<bool> streaming;
  std::string note;
};

/// The plan of `rule` (not adakv) for the heads of `shares` with mean budget k per head on a workload
/// of shape `shape`: uniform keeps k everywhere, pyramidkv follows pyramidkv_plan, duo duo_plan.
/// `losses` (per head, streaming_loss) decide duo's streaming heads; without them the first heads
/// of each unit stand in (the same budgets, so that the plan can be checked before any work).
[[nodiscard]] SharePlan static_share_plan(const ShareRule& rule, const ShareHeads& shares, const Shape& shape, int k,
                                          const std::vector<double>* losses);

/// The policy a head of `plan` runs: duo's streaming heads their sinks and recent keys, the others
/// `scorer`.
[[nodiscard]] PolicySpec planned_policy(const SharePlan& plan, std::size_t head, const ShareRule& rule,
                                        const PolicySpec& scorer);

/// Refuses a plan whose budget some head's policy rejects (a pyramid layer of budget 1, a full
/// head below a scorer's window): InputError(source, rules_field, ...) naming the rule, the head
/// and the budget.
void check_share_plan(const SharePlan& plan, const ShareRule& rule, const std::vector<PolicySpec>& scorers,
                      const ShareHeads& shares, int tokens, const std::string& source, const std::string& rules_field,
                      const std::string& policies_field);

}  // namespace subevict::greedy
