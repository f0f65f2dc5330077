#pragma once
/// \file
/// Shapes of attention workloads. Indices are 0-based in code (1-based in theory.md).

#include <cstddef>
#include <string>

namespace subevict {

/// Sizes of one attention workload: `layers` layers, each with `q_heads` query heads sharing
/// `kv_heads` key/value heads (MHA: equal; GQA: q_heads a multiple of kv_heads; MQA: kv_heads = 1),
/// over `tokens` positions with vectors of `head_dim` entries.
struct Shape {
  int layers = 1;
  int q_heads = 1;
  int kv_heads = 1;
  int tokens = 1;
  int head_dim = 1;

  /// Query heads per KV head (g in theory.md §2). Requires a valid shape.
  int group_size() const { return q_heads / kv_heads; }
  /// The KV head that query head `q_head` reads (query heads are grouped contiguously, as in
  /// Hugging Face's repeat_kv).
  int kv_head_of(int q_head) const { return q_head / group_size(); }
  /// Number of floats in Q (layers * q_heads * tokens * head_dim).
  std::size_t q_elements() const;
  /// Number of floats in K, and in V (layers * kv_heads * tokens * head_dim).
  std::size_t kv_elements() const;
  /// "MHA", "GQA" or "MQA".
  std::string attention_kind() const;

  /// Throws std::invalid_argument naming the offending field unless every size is positive,
  /// kv_heads divides q_heads, and the element counts fit in 2^40 (a guard against absurd sizes).
  void validate() const;

  friend bool operator==(const Shape&, const Shape&) = default;
};

/// "layers=2 q_heads=32 kv_heads=8 tokens=1024 head_dim=128".
std::string to_string(const Shape& shape);

}  // namespace subevict
