#pragma once
/// \file
/// PyramidKV's share rule (docs/allocation.md "Adaptive policies"): a linear per-layer schedule of
/// budgets whose mean is k, with kvpress's formula and names, and its plan over a study's heads.

#include <string>
#include <utility>
#include <vector>

#include "greedy/eviction/budgets/share_plan.hpp"
#include "greedy/eviction/budgets/share_rule.hpp"

namespace subevict::greedy {

/// PyramidKV's per-layer budget, with kvpress's formula and names: for n tokens, a mean budget k
/// per head, a window W and a steepness β ≥ 1, the largest budget max = 2k − k/β and the smallest
/// min = k/β (if max ≥ n − W: max = n − W, min = 2k − max); layer l of L gets round(max − l (max −
/// min) / (L − 1)) (round half to even, as Python's round), a linear schedule whose mean is k. When
/// n ≥ max ≥ min ≥ W fails, or L = 1, every layer gets k (kvpress falls back to SnapKV's uniform
/// budget). Each result is clamped to [1, n]. Throws InputError (source "pyramidkv") for
/// L < 1, a layer outside [0, L), k outside [1, n], W < 0 or β < 1.
[[nodiscard]] int pyramid_layer_budget(int layer, int layers, int budget, int tokens, int window, double beta);


/// Each head's budget under `rule` (pyramidkv): pyramid_layer_budget of its layer among `layers`
/// for mean k and n tokens (no head streams), with a note ("layer budgets A .. B", or kvpress's
/// fallback to k).
[[nodiscard]] SharePlan pyramidkv_plan(const ShareRule& rule, const std::vector<std::pair<int, int>>& heads, int layers,
                                       int k, int tokens);

}  // namespace subevict::greedy
