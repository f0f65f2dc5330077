#pragma once
/// \file
/// The identity of one (layer, KV head): a SHA-256 of everything its attention depends on, written
/// beside results computed from the group (the budget curves of budget_curve.csv) so that they are
/// applied to that group only.

#include <string>

#include "greedy/eviction/process/head_group.hpp"

namespace subevict::greedy {

/// The SHA-256 (64 lowercase hex digits) of, in order: g, n and d as little-endian int32; each
/// query head's Q (n x d float32, little-endian, row-major), the group's query heads in order;
/// K; V; the score scale as a little-endian IEEE double; the window as a little-endian int32. Two
/// groups agree when their tensors, scale and window are bit for bit the same, whichever workload
/// (or how many of its layers) holds them. Reading a head of n tokens and g + 2 tensors: about
/// 4 (g + 2) n d bytes at a few hundred MB/s.
[[nodiscard]] std::string head_group_sha256(const HeadGroup& group);

}  // namespace subevict::greedy
