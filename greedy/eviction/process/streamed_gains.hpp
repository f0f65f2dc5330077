#pragma once
/// \file
/// The gain matrix W of a head group (cache_schedule.hpp: the group's causal attention weights,
/// summed over its g query heads) streamed in tiles and never stored: memory O(g n d) where
/// TriangularGains needs n(n + 1)/2 entries (34 GB in float at n = 131072). Each pass over W
/// recomputes every tile (O(g n² d) flops, core/causal_weight_tiles.hpp), so a solver that needs
/// a few passes trades time for memory; streamed_flow.hpp is that solver.
///
/// Entries are exact causal attention in double (per head a_ij = exp(s_ij − L_i)), summed over the
/// group's heads in head order. They equal triangular_gain_matrix<double>(group)'s within the
/// tolerance of the two attention paths (core/causal_weight_tiles.hpp), not bit for bit.

#include <cstddef>
#include <functional>
#include <vector>

#include "core/causal_weight_tiles.hpp"
#include "core/cpu_path.hpp"
#include "core/exact_attention_rows.hpp"
#include "greedy/eviction/process/head_group.hpp"

namespace subevict::greedy {

/// One tile of W: rows [first_row, first_row + kRows), tokens [first_key, first_key + kKeys);
/// at(r, c) = W_{first_row + r, first_key + c}, 0 where the token is after the row or past n.
struct GainTile {
  static constexpr int kRows = CausalWeightTiles::kRowBlock;
  static constexpr int kKeys = CausalWeightTiles::kKeyChunk;
  int first_row = 0;
  int first_key = 0;
  const double* entries = nullptr;  ///< entries[c · kRows + r]
  [[nodiscard]] double at(int r, int c) const { return entries[std::size_t(c) * kRows + r]; }
};

class StreamedGains {
 public:
  /// The group's gains, with every head's normalizers computed (one O(g n² d) pass) on `threads`
  /// OpenMP threads (≥ 1). Throws as HeadGroup::validate and InputError (source "streamed gains")
  /// for threads < 1. Keeps views of the group's Q and K (their storage must outlive it).
  explicit StreamedGains(const HeadGroup& group, int threads = 1, CpuPath path = active_cpu_path());

  /// The group's gains with the normalizers of `exact` = group_exact_rows(group) (on `path`), which
  /// the simulator's metrics computed already: no construction pass (CausalWeightTiles' second
  /// constructor). Throws as the other constructor, and std::invalid_argument unless `exact` holds
  /// g heads of n rows.
  StreamedGains(const HeadGroup& group, const std::vector<ExactRows>& exact, int threads,
                CpuPath path = active_cpu_path());

  /// n.
  [[nodiscard]] int size() const { return n_; }
  /// g, the query heads summed into each entry.
  [[nodiscard]] int group_size() const { return int(heads_.size()); }
  /// The threads every pass uses.
  [[nodiscard]] int threads() const { return threads_; }

  /// One pass over W: visit(thread, tile) for every tile that holds an entry on or below the
  /// diagonal. Token chunks [first_key, first_key + kKeys) are dealt to the threads round-robin
  /// (thread ∈ [0, threads); fewer when called inside another OpenMP parallel region, which runs
  /// it on one), and a chunk's tiles come on its thread in ascending rows: every
  /// token's entries W_{i,j}, i = j, j + 1, ..., arrive in ascending order on one thread, so
  /// per-token state needs no locking and sums down a column are formed in one fixed order. A
  /// std::exception thrown by visit ends the pass and is rethrown. O(g n² d).
  void for_each_tile(const std::function<void(int, const GainTile&)>& visit) const;
  /// The passes for_each_tile has started (what a solver's time is made of; for tests and
  /// benchmarks). Not synchronized: passes over one object run one at a time.
  [[nodiscard]] std::size_t passes() const { return passes_; }

  /// W_ij (0 for j > i) by g dot products, equal to the tiles' entry within the paths'
  /// tolerance (for estimates that read a few entries). Precondition 0 ≤ i, j < n.
  [[nodiscard]] double entry(int i, int j) const;

  /// Σ_j W_jj by entry(j, j): every solver that uses it as the never-cached value takes this one
  /// number.
  [[nodiscard]] double diagonal_sum() const { return diagonal_sum_; }

  /// From now on W is restricted to the rows of `mask` (query_rows.hpp: W'_ij = W_ij where
  /// mask[i], else 0): every tile, entry and the diagonal sum are W''s. A tile whose row block
  /// holds no row of R is not computed (all 0), the others are computed whole and the other rows
  /// zeroed: a pass costs the attention of R's row blocks only. Throws std::invalid_argument unless
  /// mask has n entries.
  void restrict_to_rows(std::vector<char> mask);

 private:
  /// Checks the group and the threads; sets n_.
  void prepare(const HeadGroup& group);

  std::vector<CausalWeightTiles> heads_;
  int n_ = 0;
  int threads_ = 1;
  double diagonal_sum_ = 0.0;
  std::vector<char> rows_;  ///< empty: every row; else the mask of restrict_to_rows
  std::vector<char> row_blocks_;  ///< per block of GainTile::kRows rows: holds a row of rows_
  mutable std::size_t passes_ = 0;
};

}  // namespace subevict::greedy
