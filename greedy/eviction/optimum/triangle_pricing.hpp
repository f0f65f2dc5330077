#pragma once
/// \file
/// The pricing pass over stored gains (TriangularGains) shared by the two solvers that keep the
/// eviction network's token arcs implicit: the column generation (implicit_flow.hpp) and the
/// budget curve by successive shortest paths (shortest_path_curve.hpp). Both price the arc
/// R_j → D_e (token j cached on steps j..e−1) against integer potentials of D_0..D_n and R_j, in the
/// integer costs of column_generation.hpp, and evaluate the Lagrangian certificate's token term in
/// the same walk down column j, skipping blocks of kPricingBlock steps that provably hold neither
/// a violated arc nor a lower term (price_token).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "greedy/eviction/optimum/column_generation.hpp"
#include "greedy/eviction/process/triangular_gains.hpp"

namespace subevict::greedy::column_generation {

/// Pricing skips whole blocks of steps e ∈ [b·B, (b + 1)·B) when a bound shows that no arc in them
/// can be added or lower a token's Lagrangian term (price_token).
inline constexpr int kPricingBlock = 64;

/// Blocks of steps 0..n − 1 (the last may be partial).
[[nodiscard]] inline int block_count(int n) { return (n + kPricingBlock - 1) / kPricingBlock; }

/// The last step of block b (n − 1 for the last block).
[[nodiscard]] inline int block_end(int b, int n) { return std::min((b + 1) * kPricingBlock, n) - 1; }

/// The scaled, shifted costs of one instance (ArcCosts) and per token the running sums C_j at the
/// last step of every block after the one holding j + 1 (block_earned[block_offset[j] + m] ends
/// block (j + 1)/B + 1 + m), the exact doubles a walk down the column reaches there.
struct CostScale {
  ArcCosts costs;
  std::vector<std::size_t> block_offset;
  std::vector<double> block_earned;
};

/// The instance's CostScale. O(n²) time, O(n²/B) memory.
template <class Scalar>
[[nodiscard]] CostScale cost_scale(const TriangularGains<Scalar>& gains);

/// Per block of steps 0..n − 1, the largest of the potentials pot[e] (pricing's block bound).
/// Precondition: pot has at least n entries.
[[nodiscard]] std::vector<std::int64_t> block_max_potential(const std::vector<std::int64_t>& pot, int n);

/// The largest entry below the diagonal (0 when there is none).
template <class Scalar>
[[nodiscard]] double largest_entry(const TriangularGains<Scalar>& gains);

/// Guessed prices of one slot of the cache after step i, for starting arcs: p_i = the total-th
/// largest of the entries W^h_{i+1, j} (j ≤ i) over the heads, what one slot of S_i is worth to a
/// cache of `total` entries that could take tokens back (0 while every token fits, H (i + 1) ≤
/// total). One head with total = k is the single-head guess. Precondition: heads non-empty, all
/// of one n, total ≥ 1. O(H n²).
template <class Scalar>
[[nodiscard]] std::vector<double> slot_prices(const std::vector<const TriangularGains<Scalar>*>& heads,
                                              long long total);

/// Token j's starting arcs (LifetimeGuess): the never-cached arc and its best lifetime against the
/// prices σ p for LifetimeGuess's scales σ, sorted by step, for its shift.
template <class Scalar>
[[nodiscard]] std::vector<TokenArc> guessed_token_arcs(const TriangularGains<Scalar>& gains, int j,
                                                       const std::vector<double>& prices, double shift);

/// What a pricing pass keeps per token: the `keep` (1..kMaxArcsPerToken) most negative reduced
/// costs; when `lagrangian`, the token's Lagrangian term (else TokenPrice::lagrangian is left 0
/// and blocks are skipped on the reduced-cost bound alone); when `least_other`, a lower bound on
/// the reduced costs of the arcs outside `restricted` (which must then be sorted by step): the
/// least over the arcs walked and the skipped blocks' bounds.
struct PricingKeep {
  int keep = 1;
  bool lagrangian = true;
  bool least_other = false;
};

/// Prices every arc R_j → D_e (e ∈ (j, n)) against pot (D_0..D_n; max_pot = block_max_potential)
/// and pot_r (R_j): reduced cost integer_cost(shift_j − C_j(e)) + pot_r − pot[e], exactly as a
/// solver holding these integer costs forms it, keeping what `keep` asks, and evaluates
/// min_{e ∈ [j, n]} (y_e − C_j(e)) at y (C_j(n) = C_j(n − 1)), seeded with the token's restricted
/// arcs (`restricted`, any order, the never-cached arc e = j among them or not). Exact with skipped
/// blocks (the definition's comment says why); counts every block's decision in `blocks`.
/// O(n − j) at worst.
template <class Scalar>
[[nodiscard]] TokenPrice price_token(const TriangularGains<Scalar>& gains, int j, const CostScale& scale,
                                     const std::vector<std::int64_t>& pot, const std::vector<std::int64_t>& max_pot,
                                     std::int64_t pot_r, const std::vector<double>& y,
                                     const std::vector<TokenArc>& restricted, const PricingKeep& keep,
                                     PricingBlocks& blocks);

/// solve_budget's PriceAll on stored gains: price_token for every token against the input's
/// potentials and restricted arcs, the pass's block decisions written to *blocks when not null
/// (reset at the start of each pass). The returned function refers to gains, scale and blocks.
template <class Scalar>
[[nodiscard]] PriceAll price_every_token(const TriangularGains<Scalar>& gains, const CostScale& scale,
                                         PricingBlocks* blocks);

}  // namespace subevict::greedy::column_generation
