#pragma once
/// \file
/// The Workload: Q, K, V of every (layer, head), the input of every experiment.

#include <Eigen/Core>
#include <map>
#include <string>
#include <vector>

#include "core/rotary.hpp"
#include "core/shape.hpp"

namespace subevict {

/// Row-major float matrix (tokens x head_dim), the layout of one head's Q, K or V.
using RowMatrixf = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using HeadMap = Eigen::Map<RowMatrixf>;
using ConstHeadMap = Eigen::Map<const RowMatrixf>;

/// Q, K and V as float32, each stored contiguously and row-major as [layer][head][token][dim]
/// (Q over q_heads, K and V over kv_heads). Memory is owned by the Workload (host memory).
/// `metadata` carries free-form provenance (generator, preset, seed, source model, scale).
class Workload {
 public:
  Workload() = default;
  /// Zero-filled tensors of the given shape; throws std::invalid_argument if the shape is invalid.
  explicit Workload(const Shape& shape);

  const Shape& shape() const { return shape_; }

  /// One head's queries as a tokens x head_dim map into this Workload's storage.
  /// Preconditions: 0 <= layer < layers, 0 <= q_head < q_heads (checked, std::out_of_range).
  ConstHeadMap q(int layer, int q_head) const;
  HeadMap q(int layer, int q_head);
  /// One KV head's keys (0 <= kv_head < kv_heads).
  ConstHeadMap k(int layer, int kv_head) const;
  HeadMap k(int layer, int kv_head);
  /// One KV head's values (0 <= kv_head < kv_heads).
  ConstHeadMap v(int layer, int kv_head) const;
  HeadMap v(int layer, int kv_head);

  /// Whole tensors, [layer][head][token][dim].
  const std::vector<float>& q_data() const { return q_; }
  const std::vector<float>& k_data() const { return k_; }
  const std::vector<float>& v_data() const { return v_; }
  std::vector<float>& q_data() { return q_; }
  std::vector<float>& k_data() { return k_; }
  std::vector<float>& v_data() { return v_; }

  /// Softmax temperature folded into the scores: s_ij = scale * <q_i, k_j>. Defaults to
  /// 1/sqrt(head_dim); an importer sets it when the model scales differently.
  double score_scale() const;
  void set_score_scale(double scale) { score_scale_ = scale; }

  /// The attention mask of `layer` (theory.md §1): 0 for global causal attention (query i sees
  /// keys 0..i), W >= 1 for a sliding window of W keys (query i sees keys j with i - W < j <= i).
  /// Every layer is global unless set_windows says otherwise. Precondition: 0 <= layer < layers
  /// (std::out_of_range).
  int window(int layer) const;
  /// Every layer's window (size layers), all 0 when no layer has one.
  std::vector<int> windows() const;
  /// True when some layer attends over a sliding window.
  bool has_windows() const { return !windows_.empty(); }
  /// Sets each layer's window. Throws std::invalid_argument unless windows.size() == layers and
  /// every entry is >= 0 (0: global).
  void set_windows(const std::vector<int>& windows);

  /// True when the workload also holds Q and K before RoPE (exporters of rotary models write them,
  /// core/workload_io.hpp) with each layer's Rotary: q = R(i) q_pre row by row, the same for k.
  bool has_pre_rope() const { return !q_pre_.empty(); }
  /// One head's queries / keys before RoPE, laid out as q / k. Preconditions: has_pre_rope()
  /// (std::logic_error otherwise) and the ranges of q / k (std::out_of_range).
  ConstHeadMap q_pre(int layer, int q_head) const;
  ConstHeadMap k_pre(int layer, int kv_head) const;
  /// The whole pre-RoPE tensors, [layer][head][token][dim] (empty without them).
  const std::vector<float>& q_pre_data() const { return q_pre_; }
  const std::vector<float>& k_pre_data() const { return k_pre_; }
  /// Layer `layer`'s RoPE. Preconditions: has_pre_rope() and 0 <= layer < layers.
  const Rotary& rotary(int layer) const;
  /// Every layer's RoPE (size layers; empty without pre-RoPE tensors).
  const std::vector<Rotary>& rotaries() const { return rotaries_; }
  /// Sets the pre-RoPE Q and K (sized as q_data() and k_data()) and one Rotary per layer, each
  /// valid for head_dim; throws std::invalid_argument otherwise. Does not check that they agree
  /// with Q and K (the exporters' tests do).
  void set_pre_rope(std::vector<float> q_pre, std::vector<float> k_pre, std::vector<Rotary> rotaries);
  /// Drops the pre-RoPE tensors and rotaries (the scorers then use Q and K, docs/eviction.md).
  void clear_pre_rope();


  std::map<std::string, std::string> metadata;

  friend bool operator==(const Workload& a, const Workload& b);

 private:
  std::size_t offset(int layer, int head, int heads, const char* tensor) const;

  Shape shape_{};
  std::vector<float> q_, k_, v_;
  double score_scale_ = 0.0;  // 0 means 1/sqrt(head_dim)
  std::vector<int> windows_;  // empty: every layer global
  std::vector<float> q_pre_, k_pre_;  // empty: no pre-RoPE tensors
  std::vector<Rotary> rotaries_;      // one per layer with the pre-RoPE tensors
};

/// The first `tokens` tokens of every head of `w` (its pre-RoPE Q and K too), with its score scale,
/// windows, rotaries and metadata: the
/// workload a causal model gives on that prefix of its text. Throws std::invalid_argument unless
/// 1 <= tokens <= w.shape().tokens.
Workload first_tokens(const Workload& w, int tokens);

}  // namespace subevict
