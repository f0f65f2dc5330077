#pragma once
/// \file
/// The budget rules of the adaptive methods that decide where a cache's memory goes before any
/// token is scored (docs/allocation.md "Adaptive policies"): PyramidKV's per-layer schedule and a
/// DuoAttention-style split of the heads into streaming and full ones. AdaKV, which moves slots
/// between heads at every step, is a shared cache (shared_simulator.hpp) with a floor.

#include <vector>

#include "greedy/eviction/process/head_group.hpp"

namespace subevict::greedy {

/// PyramidKV's per-layer budget, with kvpress's formula and names: for n tokens, a mean budget k
/// per head, a window W and a steepness β ≥ 1, the largest budget max = 2k − k/β and the smallest
/// min = k/β (if max ≥ n − W: max = n − W, min = 2k − max); layer l of L gets round(max − l (max −
/// min) / (L − 1)) (round half to even, as Python's round), a linear schedule whose mean is k. When
/// n ≥ max ≥ min ≥ W fails, or L = 1, every layer gets k (kvpress falls back to SnapKV's uniform
/// budget). Each result is clamped to [1, n]. Throws InputError (source "pyramidkv") for
/// L < 1, a layer outside [0, L), k outside [1, n], W < 0 or β < 1.
[[nodiscard]] int pyramid_layer_budget(int layer, int layers, int budget, int tokens, int window, double beta);

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

}  // namespace subevict::greedy
