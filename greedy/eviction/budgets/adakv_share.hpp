#pragma once
/// \file
/// AdaKV's share rule (docs/allocation.md "Adaptive policies"): one cache of a unit's total shared
/// by its heads at every step, evicting the smallest scores over them, each head keeping at least
/// ⌊α k⌋ (the safeguard). It has no static plan: the shared simulator runs it.

#include <vector>

#include "core/exact_attention_rows.hpp"
#include "core/progress.hpp"
#include "greedy/eviction/budgets/share_study.hpp"
#include "greedy/eviction/process/head_group.hpp"

namespace subevict::greedy {

/// AdaKV's floor per head: ⌊alpha_safeguard · k⌋.
[[nodiscard]] int adakv_floor(const ShareRule& rule, int k);

/// AdaKV with `scorer` on every unit of `study`, one unit after another (the heads of a step on
/// options.threads workers): per head its retained mass and mean occupancy, per unit its peak; one
/// progress unit per unit. `exact` holds group_exact_rows of every head of `groups`.
[[nodiscard]] ShareRuleRun adakv_run(const ShareRule& rule, const PolicySpec& scorer, const ShareStudy& study,
                                     const std::vector<HeadGroup>& groups,
                                     const std::vector<std::vector<ExactRows>>& exact,
                                     const ShareStudyOptions& options, Progress& progress);

}  // namespace subevict::greedy
