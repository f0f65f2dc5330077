#pragma once
/// \file
/// Every eviction policy by its stable command-line name, with one parameter struct.
///
/// Names (rules in greedy/policies/*.hpp and docs/eviction.md):
///   h2o              H2O as deployed (real-drop cache): heavy + recent split
///   h2o-alg1         H2O Algorithm 1: evict the smallest accumulated score
///   h2o-alg2-linear  H2O Algorithm 2, F(T) = h(Σ_{s∈T} acc_s) with h(z) = z
///   h2o-alg2-sqrt    ... h(z) = sqrt(z + 1)
///   h2o-alg2-log     ... h(z) = log(z + 1)
///   h2o-flexgen      H2O's FlexGen code: heavy-hitter pruning at prefill, argmin per decode step
///   h2o-oracle       ORACLE: whole-sequence accumulated attention (future queries included)
///   local            recent window only
///   streamingllm     attention sinks + recent window
///   sparse-strided   Sparse Transformer strided pattern as a cache
///   sparse-fixed     Sparse Transformer fixed pattern as a cache
///   random           seeded uniform eviction
///   l2norm           keep the lowest key norms (no attention)
///   tova             evict the lowest attention from the current query
///   snapkv           SnapKV observation-window scores (prefill compression)
///   h2o-noisy        H2O Algorithm 1 with scores perturbed by seeded noise |η| ≤ ε
/// kvpress's names (NVIDIA/kvpress evaluation registry; docs/eviction.md "kvpress's names"):
///   knorm               = l2norm with no skipped layers (KnormPress)
///   streaming_llm       = streamingllm (StreamingLLMPress; key n_sink)
///   observed_attention  mean attention received over the queries that saw the token
///   keydiff             evict the key most similar (cosine) to the mean normalized key
///   leverage            evict the smallest ridge leverage score of the centred keys
///   expected_attention  expected attention under a Gaussian fit of the queries, times ‖v‖
///   lagkv               key/value spread relative to the next partition's range, ranked
///   cur                 squared key and value norms normalized in local windows (CurDKV)
///   cap                 capacity scores: value leverage weighted by key-query alignment (CapPress)
///   compactor           key leverage blended with non-causal chunked attention (CompactorPress)

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "greedy/eviction/policies/eviction_policy.hpp"

namespace subevict::greedy {

/// Pooling of SnapKV's observation scores along the token axis.
enum class Pooling { kNone, kMax, kAvg };

/// How cur combines the key and value leverages (kvpress CURPress's leverage_type).
enum class CurLeverage { kKey, kValue, kKvAvg, kKvProduct };

/// Parameters of all policies; each policy reads only its own (listed per field).
struct PolicyParams {
  /// h2o, h2o-oracle: heavy-hitter share of the budget k, a ratio of k: heavy = floor(heavy_ratio
  /// * k), recent = k − heavy (H2O's 20% = 10% heavy + 10% recent is heavy_ratio 0.5).
  double heavy_ratio = 0.5;
  /// h2o, h2o-oracle: absolute heavy size; when ≥ 0 it overrides heavy_ratio (recent = k − heavy
  /// unless `recent` is also given; heavy + recent must equal k, else reset() throws InputError).
  int heavy = -1;
  /// h2o, h2o-oracle: absolute recent size; when ≥ 0 it overrides the split (heavy = k − recent
  /// unless `heavy` is also given).
  int recent = -1;
  /// streamingllm, streaming_llm, expected_attention, lagkv, cur, cap: sink tokens (the first
  /// positions), never evicted, 0 ≤ sinks < k (kvpress's key n_sink).
  int sinks = 4;
  /// sparse-strided, sparse-fixed: the stride / block length l ≥ 1.
  int stride = 16;
  /// sparse-strided: the local window (0: the stride l).
  int window = 0;
  /// sparse-fixed: summary positions c per block (the last c positions of each block), 1 ≤ c ≤ l.
  int summary = 1;
  /// snapkv: the observation window w ≥ 1 (the last w prompt queries).
  int observation_window = 8;
  /// snapkv: pooling over the token axis and its kernel (odd, ≥ 1; 1 means no pooling). None by
  /// default: every streaming result before pooling acted in streaming was unpooled, and stays so
  /// (kvpress's SnapKVPress is pooling=avg, kernel=5; the SnapKV paper's max).
  Pooling pooling = Pooling::kNone;
  int pooling_kernel = 5;
  /// h2o-noisy: the noise bound ε ≥ 0 (|η| ≤ ε, η uniform in [−ε, ε]).
  double epsilon = 0.01;
  /// expected_attention: the ε of (p + ε) ‖v‖; 0 is ExpectedAttentionPress's default (kvpress's
  /// evaluation registry passes 1e-2: `expected_attention:epsilon=0.01`).
  double expected_epsilon = 0.0;
  /// leverage, compactor: the ridge λ > 0 of (XᵀX + λI)⁻¹.
  double ridge = 1e-2;
  /// expected_attention: the covariance term of the expected logit, the ‖v‖ factor.
  bool use_covariance = true;
  bool use_vnorm = true;
  /// lagkv: the partition length L >= 2 and kvpress's cross_scoring (raw scores instead of ranks).
  int lag_size = 128;
  bool cross_scoring = false;
  /// cur: the combination, the local-window normalization and its window w >= 1.
  CurLeverage cur_leverage = CurLeverage::kKvProduct;
  bool use_local_approximation = true;
  int local_window_size = 16;
  /// cap: the temperature τ of the alignment weights and the ε of the capacity matrix.
  double tau = 5.0;
  double cap_epsilon = 1e-6;
  /// expected_attention, cap: the future positions F ≥ 0 over which kvpress averages the RoPE
  /// matrix that rotates the pre-RoPE query statistics (used where the workload stores pre-RoPE
  /// tensors; 0: no rotation).
  int n_future_positions = 512;
  /// compactor: the protected first and last tokens (a + b ≤ k), the chunk C ≥ 1 of its
  /// non-causal attention (non_causal_attention's too), and the weight β of the leverage (negative: the compression ratio).
  int sink_size_start = 8;
  int sink_size_end = 4;
  int chunk_size = 256;
  double blending = -1.0;
  /// l2norm: layers in which nothing is compressed (the paper skips the first two).
  std::vector<int> skipped_layers = {0, 1};
};

/// "none" / "max" / "avg"; parse throws InputError (source "pooling") for other names.
[[nodiscard]] std::string to_string(Pooling pooling);
[[nodiscard]] Pooling parse_pooling(std::string_view name);

/// "key" / "value" / "kv_avg" / "kv_product"; parse throws InputError (source "leverage_type").
[[nodiscard]] std::string to_string(CurLeverage leverage);
[[nodiscard]] CurLeverage parse_cur_leverage(std::string_view name);

/// The stable names above, in that order.
[[nodiscard]] std::vector<std::string> policy_names();

/// A new policy by name. Throws InputError (source "policy", listing the accepted names) for an
/// unknown name, and for parameters out of the ranges above.
[[nodiscard]] std::unique_ptr<EvictionPolicy> make_policy(std::string_view name,
                                                          const PolicyParams& params = {});

}  // namespace subevict::greedy
