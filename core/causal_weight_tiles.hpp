#pragma once
/// \file
/// Exact causal attention weights of one query head, produced tile by tile and never stored
/// whole: a_ij = exp(s_ij − L_i), s_ij = scale <q_i, k_j>, L_i = log Σ_{j ≤ i} exp(s_ij)
/// (theory.md §1). For contexts where the n × n matrix (or its triangle) does not fit in memory:
/// the offline optimum's streamed passes (greedy/eviction/process/streamed_gains.hpp) recompute
/// each tile when they need it.
///
/// The normalizers L_i are computed once, at construction, by one pass over the same tiles with a
/// running maximum (L_i = m_i + log Σ_j exp(s_ij − m_i), rescaled chunk by chunk), so every weight
/// a later tile returns uses the very scores the normalizer saw: every exponent is ≤ 0, and the
/// weights are a deterministic function of (q, k, scale, path), identical on every call.
///
/// Two code paths (core/cpu_path.hpp): the AVX2 + FMA score kernel (attention_avx2.hpp
/// score_tile_avx2) and the portable Eigen product; they agree within exact_rows_tolerance's
/// log_normalizer bound on L_i and a relative 2 · that bound on each weight.

#include <functional>
#include <vector>

#include "core/cpu_path.hpp"
#include "core/workload.hpp"

namespace subevict {

class CausalWeightTiles {
 public:
  /// Query rows per tile (8 panels of 8).
  static constexpr int kRowBlock = 64;
  /// Keys per tile (64 tiles of 6): 192 KB of packed keys at d = 64, 384 KB at d = 128.
  static constexpr int kKeyChunk = 384;

  /// The head's weights, with every L_i computed (one O(n² d) pass, on `threads` OpenMP threads,
  /// 0: the OpenMP default). Throws std::invalid_argument unless q and k are both n × d with
  /// n, d ≥ 1, and InputError for path kAvx2Fma without cpu_supports_avx2_fma(). Keeps views of q
  /// and k (they must outlive it) and n · d packed doubles. Preconditions: finite inputs,
  /// scale > 0.
  CausalWeightTiles(const ConstHeadMap& q, const ConstHeadMap& k, double scale, int threads = 1,
                    CpuPath path = active_cpu_path());

  /// The head's weights with the normalizers given instead of computed (no construction pass):
  /// L_i for i < n as exact_attention_rows computes them on the same path (from the same scores,
  /// summed in another order). A tile clamps every exponent at 0, so a normalizer that rounding
  /// leaves an ulp below its row's largest score gives that weight 1. Throws as the other
  /// constructor, and std::invalid_argument unless log_normalizer holds n finite values.
  CausalWeightTiles(const ConstHeadMap& q, const ConstHeadMap& k, double scale, std::vector<double> log_normalizer,
                    CpuPath path = active_cpu_path());

  /// Σ_{i ∈ [first_row, n)} a_ij for every key j < n: the column sums of the head's causal weights
  /// over the query rows from first_row on, in one pass over the score tiles of those rows (each
  /// row's scores are computed once: its maximum m_i, its exps, their sum, and each weight
  /// exp(s_ij − m_i) · (1 / Σ_j exp(s_ij − m_i)) added to its key's sum in ascending row order). No
  /// normalizers are computed beforehand. On the AVX2 path within a relative 2 ·
  /// exact_rows_tolerance(n, d, M).log_normalizer + gamma(n) of the portable path's sums (the
  /// same quantities summed in another order, FMA, exp within 2 ulp). Throws as the constructor,
  /// and std::invalid_argument unless 0 ≤ first_row ≤ n. Cost O((n − first_row) n d), memory one
  /// row block's scores (kRowBlock · n doubles).
  [[nodiscard]] static std::vector<double> column_sums(const ConstHeadMap& q, const ConstHeadMap& k, double scale,
                                                       int first_row, CpuPath path = active_cpu_path());

  /// One block of exact causal rows as for_each_row_block passes it: rows [first_row, first_row +
  /// rows), keys [0, keys) with keys = first_row + rows; a_ij = exps[(j · kRowBlock) + (i −
  /// first_row)] · inverse_total[i − first_row], the exps exactly 0 for j > i. Views valid during
  /// the visit only.
  struct RowBlock {
    int first_row = 0, rows = 0, keys = 0;
    const double* exps = nullptr;           ///< [key][row], kRowBlock rows per key
    const double* inverse_total = nullptr;  ///< 1 / Σ_j exp(s_ij − m_i) per row of the block
  };

  /// Calls visit(block) for the row blocks covering rows [first_row, n), in ascending order (the
  /// first block starts at the kRowBlock multiple at or below first_row, so it may hold earlier
  /// rows), each row's scores computed once (column_sums's pass and arithmetic). Throws as
  /// column_sums. Cost O((n − first_row) n d), memory kRowBlock · n doubles.
  static void for_each_row_block(const ConstHeadMap& q, const ConstHeadMap& k, double scale, int first_row,
                                 const std::function<void(const RowBlock&)>& visit,
                                 CpuPath path = active_cpu_path());

  /// n.
  [[nodiscard]] int size() const { return n_; }

  /// The weights of rows [first_row, first_row + kRowBlock) and keys [first_key, first_key +
  /// kKeyChunk): out[c · kRowBlock + r] = a_{first_row + r, first_key + c}, exactly 0 where the key
  /// is after the row or either index is ≥ n. `scratch` is the caller's (one per thread).
  /// Preconditions: first_row a multiple of kRowBlock, first_key of kKeyChunk, both in [0, n),
  /// out holds kRowBlock · kKeyChunk doubles.
  void tile(int first_row, int first_key, std::vector<double>& scratch, double* out) const;

  /// L_i for i = 0..n−1.
  [[nodiscard]] const std::vector<double>& log_normalizer() const { return log_normalizer_; }

  /// a_ij for one entry (0 when j > i), by one portable dot product: equal to the tile's entry
  /// within the paths' tolerance, not bit for bit (for estimates that need a few entries).
  /// Precondition: 0 ≤ i, j < n.
  [[nodiscard]] double weight(int i, int j) const;

 private:
  /// The views, checked and packed, without normalizers (column_sums computes its own per row).
  CausalWeightTiles(const ConstHeadMap& q, const ConstHeadMap& k, double scale, CpuPath path);
  /// Checks the shapes and the path, packs the keys (AVX2 path).
  void prepare();
  /// Raw scaled scores of a tile into out (same layout as tile), −inf where the key is after the
  /// row or past n.
  void scores(int first_row, int first_key, std::vector<double>& scratch, double* out) const;

  ConstHeadMap q_, k_;
  double scale_;
  CpuPath path_;
  int n_, d_;
  std::vector<double> packed_keys_;  // AVX2 path: [tile of 6 keys][p < d][6], n rounded up to a chunk
  std::vector<double> log_normalizer_;
};

}  // namespace subevict
