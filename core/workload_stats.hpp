#pragma once
/// \file
/// Measured structure of a workload's exact causal attention, per (layer, query head): the
/// statistics `subevict workload inspect` prints and the tests assert on. Nothing is assumed
/// about how the workload was made.

#include <functional>
#include <vector>

#include "core/workload.hpp"

namespace subevict {

/// HeadStatistics::sink_token_rate: a key whose far attention is at least this share of the
/// strongest key's is attended like a sink. On SmolLM2-135M's layers 3, 5, 8 and 10 (GPL-3 text,
/// 2048 tokens, mean over heads of the sorted values) the 13 strongest keys sit at 0.42-1 of the
/// strongest, the next two at 0.27-0.39, the rest below 0.27 (bench/results/twin_fit.md).
inline constexpr double kSinkTokenFloor = 0.35;

/// Settings of the measurement (all positions 0-based).
struct InspectOptions {
  double tau = 0.01;         ///< sparsity threshold relative to the row maximum
  int sinks = 4;             ///< the first `sinks` tokens count as sink positions
  int recent_window = 32;    ///< the last `recent_window` keys a query sees (itself included)
  /// The wider recent window of wide_recent_mass (keys; at most tokens / 2 are used), where the
  /// shape of recency beyond recent_window shows: what a recent window of a few hundred keys keeps.
  int wide_recent_window = 256;
  double top_fraction = 0.1; ///< for the heavy-hitter shares
  int first_token_from = 64; ///< first_token_mass averages rows i >= min(this, tokens / 2)
  int late_rows = 64;        ///< late_first_token_mass averages the last min(this, tokens / 2) rows
  double sink_head_threshold = 0.3;  ///< a head is a sink head when late_first_token_mass exceeds it
  int block_rows = 256;      ///< rows per GEMM block (memory 8 * block_rows * tokens bytes)
  int threads = 0;           ///< heads measured in parallel (0: OpenMP default)
  /// The layers and query heads measured (inspect_workload measures every pair of the two), each
  /// ascending and in range; empty: every layer, every query head.
  std::vector<int> layers, q_heads;
  /// Called after each measured head with (heads done, heads in all), from one thread at a time.
  std::function<void(int, int)> progress;
};

/// Statistics of one (layer, query head). Definitions, with a the exact causal attention under the
/// layer's mask (Workload::window: on a sliding-window layer of W keys a_ij = 0 for j <= i - W, and
/// "visible" means i - W < j <= i; on a global layer every j <= i is visible):
///   sparsity          fraction of visible entries with a_ij < tau * max_j a_ij
///   sink_mass         mean over queries i >= sinks of sum_{j < sinks} a_ij
///   recent_mass       mean over queries i >= recent_window of the mass on the last
///                     recent_window keys (j > i - recent_window)
///   wide_recent_mass  the same over the last W = min(wide_recent_window, n / 2) keys, queries i >= W
///   power_law_*       fit_power_law of the accumulated attention sum_i a_ij over non-sink tokens,
///                     ranks 1..tokens/2 (H2O's accumulated-attention plot)
///   heavy_share       top_share(top_fraction) of the mean attention received per observing query,
///                     sum_i a_ij / (the number of queries that see j: n - j, or min(n - j, W)),
///                     over the "middle" tokens j in [sinks, n - recent_window)
///                     (dividing by n - j removes the advantage of early tokens; excluding the
///                     recent window removes recency)
///   norm_attention_spearman  Spearman correlation of ||k_j|| and that mean received attention
///                     over the same middle tokens (the L2-norm paper's statistic)
///   first_token_mass  mean over queries i >= min(first_token_from, n/2) of a_i0 (StreamingLLM's
///                     attention sink on the first token)
///   late_first_token_mass  mean of a_i0 over the last min(late_rows, n/2) queries; the head is a
///                     sink head when it exceeds sink_head_threshold
///   received_top_share  top_share(top_fraction) of the plain column sums sum_i a_ij over all
///                     tokens (sinks and recent window included)
///   recency_slope     how fast the scores fall with distance, in logits per doubling of it (a
///                     measure of the scores, not of the attention: no competition between keys,
///                     so it does not depend on the length): over queries i >= F - 1 + sinks, the
///                     mean score on the keys at distances i - j in [a, 2a) minus the mean score
///                     on those at [F/2, F), over log2(F/2 / a), where F = min(wide_recent_window,
///                     n / 2, the layer's window) and a = max(1, F / 32) (integer divisions): with
///                     F = 256 the distances [8, 16) against [128, 256), four doublings; 0 when
///                     F < 4 or no query qualifies
///   low_norm_share    share of those column sums on the ceil(top_fraction n) keys of lowest
///                     ||k_j|| (ties to the earlier key): the mass a key-norm ranking (L2-norm
///                     eviction's) would keep if it kept that many keys for the whole run
///   sink_token_rate   the share of the keys j in [sinks, n - W) (W as in wide_recent_mass) that
///                     are attended like sinks: whose far attention f_j, the mean of a_ij /
///                     max_j' a_ij' (the weight against the row's largest) over the queries
///                     i >= j + recent_window that see j, is at least kSinkTokenFloor times the
///                     largest f over keys [0, n - W) (the first key included); 0 where no key has
///                     a far query. Against each row's largest weight, not its sum, so a later
///                     sink that shares its rows with more sinks counts as the first one does.
///                     Real models' early layers attend to a dozen later tokens alike with the
///                     first one (LlmLikeParams::sink_token_rate generates them).
struct HeadStatistics {
  int layer = 0, q_head = 0, kv_head = 0;
  int window = 0;  ///< the layer's mask: 0 global, W a sliding window of W keys
  double sparsity = 0;
  double sink_mass = 0;
  double recent_mass = 0;
  double power_law_exponent = 0;
  double power_law_r2 = 0;
  double heavy_share = 0;
  double norm_attention_spearman = 0;
  double first_token_mass = 0;
  double late_first_token_mass = 0;
  double received_top_share = 0;
  double wide_recent_mass = 0;
  double low_norm_share = 0;
  double recency_slope = 0;
  double sink_token_rate = 0;
};

/// Calls visit(name, member) with a pointer to each measured statistic of HeadStatistics, in
/// declaration order: the one list the mean and the JSON output are built from.
template <class Visit>
void for_each_statistic(Visit visit) {
  visit("sparsity", &HeadStatistics::sparsity);
  visit("sink_mass", &HeadStatistics::sink_mass);
  visit("recent_mass", &HeadStatistics::recent_mass);
  visit("power_law_exponent", &HeadStatistics::power_law_exponent);
  visit("power_law_r2", &HeadStatistics::power_law_r2);
  visit("heavy_share", &HeadStatistics::heavy_share);
  visit("norm_attention_spearman", &HeadStatistics::norm_attention_spearman);
  visit("first_token_mass", &HeadStatistics::first_token_mass);
  visit("late_first_token_mass", &HeadStatistics::late_first_token_mass);
  visit("received_top_share", &HeadStatistics::received_top_share);
  visit("wide_recent_mass", &HeadStatistics::wide_recent_mass);
  visit("low_norm_share", &HeadStatistics::low_norm_share);
  visit("recency_slope", &HeadStatistics::recency_slope);
  visit("sink_token_rate", &HeadStatistics::sink_token_rate);
}

/// The statistics of one layer: the mean over its query heads of every HeadStatistics field
/// (layer set, q_head = kv_head = -1) and the share of its heads that are sink heads.
struct LayerStatistics {
  int layer = 0;
  int heads = 0;
  HeadStatistics mean;
  double sink_head_rate = 0;  ///< share of heads with late_first_token_mass > sink_head_threshold
};

/// InputError (source "inspect", naming the option and its command-line flag if any) unless tau in [0, 1],
/// sinks >= 0, recent_window >= 1, wide_recent_window >= 1, top_fraction in (0, 1],
/// first_token_from >= 0, late_rows >= 1, sink_head_threshold in [0, 1], block_rows >= 1 and threads >= 0.
void check_inspect_options(const InspectOptions& opt);

/// Statistics of one head. Requires tokens > sinks + recent_window + 2 (std::invalid_argument) and
/// options that check_inspect_options accepts (InputError).
/// Cost O(tokens^2 * head_dim).
HeadStatistics inspect_head(const Workload& w, int layer, int q_head, const InspectOptions& opt = {});

/// Statistics of every (layer, query head) pair of opt.layers x opt.q_heads (every layer and
/// query head for an empty list), in layer-major order. Throws std::out_of_range for an index
/// outside the workload. opt.progress counts the pairs measured.
std::vector<HeadStatistics> inspect_workload(const Workload& w, const InspectOptions& opt = {});

/// Mean of each statistic over heads (layer = q_head = kv_head = -1; window the heads' common
/// window, -1 when they differ).
HeadStatistics mean_statistics(const std::vector<HeadStatistics>& heads);

/// One LayerStatistics per layer that occurs in `heads`, in increasing layer order.
/// `sink_head_threshold` as in InspectOptions.
std::vector<LayerStatistics> per_layer_statistics(const std::vector<HeadStatistics>& heads,
                                                  double sink_head_threshold = 0.3);

/// Share of `heads` whose late_first_token_mass exceeds `sink_head_threshold` (0 when empty).
double sink_head_rate(const std::vector<HeadStatistics>& heads, double sink_head_threshold = 0.3);

}  // namespace subevict
