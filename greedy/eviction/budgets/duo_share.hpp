#pragma once
/// \file
/// A DuoAttention-style share rule (docs/allocation.md "Adaptive policies"): a share of the heads
/// stream (sinks and recent keys), chosen by how little of their attention streaming loses on the
/// calibration queries; the other heads split the rest of the unit's total.

#include <string>
#include <vector>

#include "greedy/eviction/budgets/share_plan.hpp"
#include "greedy/eviction/budgets/share_rule.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"
#include "greedy/eviction/process/head_group.hpp"

namespace subevict::greedy {

/// How much of head `input`'s attention a streaming head (the first `sink` keys and the last
/// `recent` keys) would lose: the mean over the query heads and the queries i < calibration of
/// the full causal row's mass outside that pattern. 0 for a head that streaming keeps whole.
/// The calibration queries play the part of DuoAttention's calibration data. Throws InputError
/// (source "duo") for sink < 0, recent < 1 or calibration outside [1, n].
[[nodiscard]] double streaming_loss(const HeadGroup& input, int sink, int recent, int calibration);

/// DuoAttention's split: the round(ratio · H) heads (half to even) with the smallest losses become
/// streaming heads (ties to the lower index); true marks them. Throws InputError (source "duo")
/// for ratio outside [0, 1].
[[nodiscard]] std::vector<bool> streaming_heads(const std::vector<double>& losses, double ratio);

/// The budget each full head of a group gets when the group's m streaming heads keep `streaming`
/// slots each and the group holds `total` in all: ⌊(total − m · streaming) / (H − m)⌋ capped at n
/// (H − m full heads; slots left over stay unused). Throws InputError (source "duo") when it
/// would be < 1, or every head streams and m · streaming > total.
[[nodiscard]] int full_head_budget(long long total, int heads, int streaming_count, int streaming, int tokens);

/// Duo's plan over units of heads (indices into `losses`, one loss per head; all 0 stand in before
/// the losses are known): in each unit the streaming_heads of its losses keep sink_size +
/// recent_size slots (at most n), the others full_head_budget of the unit's total, unit size · k.
/// The note says "m of H heads stream (S slots)". Throws InputError (source "duo") as those two do.
[[nodiscard]] SharePlan duo_plan(const ShareRule& rule, const std::vector<std::vector<int>>& units,
                               const std::vector<double>& losses, int k, int tokens);

/// What a streaming head of `rule` runs: streamingllm with the rule's sinks.
[[nodiscard]] PolicySpec duo_streaming_spec(const ShareRule& rule);

}  // namespace subevict::greedy
