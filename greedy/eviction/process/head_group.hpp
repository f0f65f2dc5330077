#pragma once
/// \file
/// One KV head with the g query heads that read it: the unit the eviction simulator runs on
/// (theory.md §2, GQA/MQA). Views only: the Workload (or other storage) must outlive it.

#include <string>
#include <string_view>
#include <vector>

#include "core/workload.hpp"

namespace subevict::greedy {

/// A token position (0-based: token i arrives at step i).
using Token = int;

/// "No eviction at this step".
inline constexpr Token kNoEviction = -1;

/// How the g query heads of a KV head combine their attention weights into one score per
/// (query, key): sum, mean or max over the group. Applied to each weight before any accumulation
/// over queries (see each policy's comment for the exceptions).
enum class GroupAggregation { kSum, kMean, kMax };

/// "sum" / "mean" / "max".
[[nodiscard]] std::string to_string(GroupAggregation aggregation);

/// The inverse of to_string; throws InputError (source "aggregation") for other names.
[[nodiscard]] GroupAggregation parse_group_aggregation(std::string_view name);

/// The inputs of one (layer, KV head): the g query heads' Q (each tokens x head_dim), the shared
/// K and V (tokens x head_dim), and the score scale (s_ij = scale <q_i, k_j>). Views into float32
/// row-major storage owned elsewhere.
struct HeadGroup {
  std::vector<ConstHeadMap> q;
  ConstHeadMap k;
  ConstHeadMap v;
  double scale = 1.0;
  int layer = 0;    ///< informational (policies with per-layer rules read it, e.g. l2norm)
  int kv_head = 0;  ///< informational (seeds per head derive from it)
  /// The layer's attention mask (Workload::window): 0 global causal, W > 0 a sliding window of W
  /// keys (query i sees keys i − W < j ≤ i; a token leaves every cache after the last step that
  /// sees it, greedy/eviction/evaluation/simulator.hpp).
  int window = 0;

  /// n, the number of tokens (rows of k).
  [[nodiscard]] int tokens() const { return int(k.rows()); }
  /// d, the head dimension.
  [[nodiscard]] int head_dim() const { return int(k.cols()); }
  /// g, the number of query heads in the group.
  [[nodiscard]] int group_size() const { return int(q.size()); }

  /// Throws std::invalid_argument unless there is at least one query head, every Q, K and V has
  /// the same positive shape, scale is finite and > 0, and window >= 0.
  void validate() const;
};

/// The HeadGroup of (layer, kv_head) of `workload`: its query heads kv_head * g .. kv_head * g +
/// g - 1 (contiguous grouping, core/shape.hpp), scale workload.score_scale(), window
/// workload.window(layer). Throws
/// std::out_of_range for a bad layer or KV head.
[[nodiscard]] HeadGroup head_group(const Workload& workload, int layer, int kv_head);

/// The group restricted to its first `tokens` tokens (views of the same storage: rows are
/// contiguous), a group of its own since attention is causal; the group itself when tokens ≤ 0 or
/// ≥ n.
[[nodiscard]] HeadGroup first_tokens(const HeadGroup& group, int tokens);

}  // namespace subevict::greedy
