#pragma once
/// \file
/// One KV head with the g query heads that read it: the unit the eviction simulator runs on
/// (theory.md §2, GQA/MQA). Views only: the Workload (or other storage) must outlive it.

#include <string>
#include <string_view>
#include <vector>

#include "core/rotary.hpp"
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
  /// The g query heads' Q and the K before RoPE, where the workload stores them
  /// (Workload::has_pre_rope; empty q_pre and a 0 × 0 k_pre otherwise), and the layer's RoPE
  /// (meaningful only with them): q[h].row(i) = R(i) q_pre[h].row(i), the same for k.
  std::vector<ConstHeadMap> q_pre{};
  ConstHeadMap k_pre{nullptr, 0, 0};
  Rotary rotary{};

  /// True when the group holds its pre-RoPE Q and K and its Rotary.
  [[nodiscard]] bool has_pre_rope() const { return !q_pre.empty(); }
  /// Query head h's queries before RoPE where the group has them, else its (post-RoPE) queries:
  /// what kvpress's scorers that project hidden states read (get_prerope_query_states).
  [[nodiscard]] const ConstHeadMap& queries_before_rope(std::size_t h) const { return has_pre_rope() ? q_pre[h] : q[h]; }
  /// The keys before RoPE where the group has them, else its keys (get_prerope_key_states).
  [[nodiscard]] const ConstHeadMap& keys_before_rope() const { return has_pre_rope() ? k_pre : k; }
  /// kvpress's average RoPE matrix of the `count` positions after a prompt of `seen` tokens
  /// (core/rotary.hpp average_rotation), which maps pre-RoPE query statistics to the keys' frame;
  /// the identity when the group has no pre-RoPE tensors (its queries are already rotated).
  [[nodiscard]] Eigen::MatrixXd future_rotation(int seen, int count) const;

  /// n, the number of tokens (rows of k).
  [[nodiscard]] int tokens() const { return int(k.rows()); }
  /// d, the head dimension.
  [[nodiscard]] int head_dim() const { return int(k.cols()); }
  /// g, the number of query heads in the group.
  [[nodiscard]] int group_size() const { return int(q.size()); }

  /// Throws std::invalid_argument unless there is at least one query head, every Q, K and V has
  /// the same positive shape, scale is finite and > 0, and window >= 0; with pre-RoPE tensors,
  /// unless there is one q_pre per Q, q_pre and k_pre have K's shape and the rotary is valid.
  void validate() const;
};

/// The HeadGroup of (layer, kv_head) of `workload`: its query heads kv_head * g .. kv_head * g +
/// g - 1 (contiguous grouping, core/shape.hpp), scale workload.score_scale(), window
/// workload.window(layer), and their pre-RoPE Q and K and the layer's Rotary where the workload
/// has them. Throws
/// std::out_of_range for a bad layer or KV head.
[[nodiscard]] HeadGroup head_group(const Workload& workload, int layer, int kv_head);

/// The group restricted to its first `tokens` tokens (views of the same storage: rows are
/// contiguous), a group of its own since attention is causal; the group itself when tokens ≤ 0 or
/// ≥ n.
[[nodiscard]] HeadGroup first_tokens(const HeadGroup& group, int tokens);

}  // namespace subevict::greedy
