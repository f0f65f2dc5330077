#include "greedy/eviction/optimum/triangle_pricing.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <limits>

namespace subevict::greedy::column_generation {
template <class Scalar>
CostScale cost_scale(const TriangularGains<Scalar>& gains) {
  const int n = gains.size();
  const int blocks = block_count(n);
  CostScale out;
  std::vector<double> shift(n);
  out.block_offset.resize(static_cast<std::size_t>(n) + 1, 0);
  for (int j = 0; j < n; ++j) {
    const int first = (j + 1) / kPricingBlock;  // the block walked step by step
    out.block_offset[j + 1] = out.block_offset[j] + static_cast<std::size_t>(std::max(0, blocks - 1 - first));
  }
  out.block_earned.resize(out.block_offset[n]);
  for (int j = 0; j < n; ++j) {
    const Scalar* column = gains.column(j);
    double earned = 0.0;
    double* ends = out.block_earned.data() + out.block_offset[j];
    const int first_skippable = (j + 1) / kPricingBlock + 1;
    int next_end = first_skippable < blocks ? block_end(first_skippable, n) : -1;
    for (int e = j + 1; e <= n - 1; ++e) {
      earned += double(column[e - j]);
      if (e == next_end) {
        *ends++ = earned;
        next_end = block_end(e / kPricingBlock + 1, n);
      }
    }
    shift[j] = earned;
  }
  out.costs = arc_costs(std::move(shift));
  return out;
}

/// Per block of steps, the largest potential of its D nodes (pricing's block bound).
std::vector<std::int64_t> block_max_potential(const std::vector<std::int64_t>& pot, int n) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(block_count(n)), std::numeric_limits<std::int64_t>::min());
  for (int e = 0; e < n; ++e) out[e / kPricingBlock] = std::max(out[e / kPricingBlock], pot[e]);
  return out;
}

/// Prices every arc R_j → D_e (e ∈ (j, n)) against the simplex's potentials (pot of D_0..D_n,
/// pot_r of R_j; reduced cost = cost + pot_r − pot_e, in integers, exactly as the simplex forms
/// it), keeping the `keep` most negative below 0, and evaluates token_lagrangian at y (= −pot /
/// scale) in the same walk.
///
/// Exact with skipped blocks: C_j is nondecreasing in e (gains are ≥ 0 and rounding is monotone),
/// so inside block b every arc's reduced cost is ≥ integer_cost(shift − C_j(end of b)) + pot_r −
/// max_pot[b] and every term y_e − C_j(e) ≥ −max_pot[b] / scale − C_j(end of b). A block whose two
/// bounds can neither add an arc nor lower the term (seeded with the token's restricted arcs, which
/// at optimality attain it) is skipped, and the walk resumes from the stored C_j at its end. Each
/// bound matters on its own: with a simplex's potentials the term bound is implied by the
/// reduced-cost bound up to rounding (a token's tree arc has reduced cost 0 and seeds the term),
/// but without the reduced-cost bound a block holding a violated arc is skipped once a more
/// violated one was found, and the round adds fewer arcs. Counts every block's decision in blocks.
template <class Scalar>
TokenPrice price_token(const TriangularGains<Scalar>& gains, int j, const CostScale& scale,
                       const std::vector<std::int64_t>& pot, const std::vector<std::int64_t>& max_pot,
                       std::int64_t pot_r, const std::vector<double>& y, const std::vector<TokenArc>& restricted,
                       const PricingKeep& keep, PricingBlocks& blocks) {
  const int n = gains.size();
  const Scalar* column = gains.column(j);
  const double shift = scale.costs.shift[j];
  TokenPrice out;
  double lagrangian = y[j];  // e = j: never cached, C_j(j) = 0
  for (const TokenArc& a : restricted) lagrangian = std::min(lagrangian, y[a.e] - a.earned);
  double earned = 0.0;
  std::size_t next_restricted = 0;  // least_other: the first restricted arc at a step ≥ e
  auto visit = [&](int e) {
    earned += double(column[e - j]);
    lagrangian = std::min(lagrangian, y[e] - earned);
    if (keep.least_other) {
      while (next_restricted < restricted.size() && restricted[next_restricted].e < e) ++next_restricted;
      if (next_restricted == restricted.size() || restricted[next_restricted].e != e) {
        out.least_other =
            std::min(out.least_other, integer_cost(shift - earned, scale.costs.scale) + pot_r - pot[e]);
      }
    }
    price_arc(out, e, earned, shift, scale.costs.scale, pot_r, pot[e], keep.keep);
  };
  const int first_block = (j + 1) / kPricingBlock;
  const int walked_to = std::min(n - 1, (first_block + 1) * kPricingBlock - 1);
  for (int e = j + 1; e <= walked_to; ++e) visit(e);
  const double* ends = scale.block_earned.data() + scale.block_offset[j];
  for (int b = first_block + 1; b < block_count(n); ++b, ++ends) {
    const std::int64_t lowest_reduced = integer_cost(shift - *ends, scale.costs.scale) + pot_r - max_pot[b];
    const std::int64_t wanted = out.found < keep.keep ? 0 : out.reduced[out.found - 1];
    const double lowest_term = -static_cast<double>(max_pot[b]) / scale.costs.scale - *ends;
    const bool no_arc = lowest_reduced >= wanted;
    const bool no_term = !keep.lagrangian || lowest_term >= lagrangian;
    ++(no_arc ? (no_term ? blocks.skipped : blocks.walked_for_term)
              : (no_term ? blocks.walked_for_reduced_cost : blocks.walked_for_both));
    if (no_arc && no_term) {
      earned = *ends;
      out.least_other = std::min(out.least_other, lowest_reduced);
      continue;
    }
    const int last = block_end(b, n);
    for (int e = b * kPricingBlock; e <= last; ++e) visit(e);
  }
  out.lagrangian = keep.lagrangian ? std::min(lagrangian, y[n] - earned) : 0.0;  // e = n earns C_j(n − 1)
  return out;
}

/// The largest entry below the diagonal (nothing_cached's certificate).
template <class Scalar>
double largest_entry(const TriangularGains<Scalar>& gains) {
  double w_max = 0.0;
  for (int j = 0; j < gains.size(); ++j) {
    const Scalar* column = gains.column(j);
    for (int r = 1; r < gains.size() - j; ++r) w_max = std::max(w_max, double(column[r]));
  }
  return w_max;
}


template <class Scalar>
PriceAll price_every_token(const TriangularGains<Scalar>& gains, const CostScale& scale, PricingBlocks* blocks) {
  return [&gains, &scale, blocks](const PricingInput& in) {
    const std::vector<std::int64_t> max_pot = block_max_potential(in.pot, gains.size());
    std::vector<TokenPrice> prices(gains.size());
    PricingBlocks pass;
    for (int j = 0; j < gains.size(); ++j) {
      prices[j] = price_token(gains, j, scale, in.pot, max_pot, in.pot_r[j], in.y, in.arcs[j], PricingKeep{in.keep},
                              pass);
    }
    if (blocks != nullptr) *blocks = pass;
    return prices;
  };
}

template PriceAll price_every_token<float>(const TriangularGains<float>&, const CostScale&, PricingBlocks*);
template PriceAll price_every_token<double>(const TriangularGains<double>&, const CostScale&, PricingBlocks*);
template <class Scalar>
std::vector<double> slot_prices(const std::vector<const TriangularGains<Scalar>*>& heads, long long total) {
  const int n = heads.front()->size();
  const long long count = static_cast<long long>(heads.size());
  std::vector<double> price(n, 0.0);
  std::vector<double> row;
  for (int i = static_cast<int>(std::min<long long>(n, total / count)); i + 1 < n; ++i) {  // all fit below
    const int r = i + 1;
    row.clear();
    for (const TriangularGains<Scalar>* gains : heads) {
      for (int j = 0; j < r; ++j) row.push_back(double(gains->column(j)[r - j]));
    }
    const auto nth = static_cast<std::ptrdiff_t>(total - 1);
    std::nth_element(row.begin(), row.begin() + nth, row.end(), std::greater<>());
    price[i] = row[static_cast<std::size_t>(nth)];
  }
  return price;
}

template <class Scalar>
std::vector<TokenArc> guessed_token_arcs(const TriangularGains<Scalar>& gains, int j, const std::vector<double>& prices,
                                         double shift) {
  const int n = gains.size();
  const Scalar* column = gains.column(j);
  LifetimeGuess guess;
  const CpuPath path = active_cpu_path();
  std::array<double, 256> chunk;  // the column's entries in double, a chunk at a time
  for (int e = j + 1; e <= n - 1; e += int(chunk.size())) {
    const int count = std::min(int(chunk.size()), n - e);
    for (int r = 0; r < count; ++r) chunk[r] = double(column[e + r - j]);
    guess.steps(e, chunk.data(), prices.data() + e - 1, count, path);
  }
  return guess.arcs(j, shift);
}

template std::vector<double> slot_prices<float>(const std::vector<const TriangularGains<float>*>&, long long);
template std::vector<double> slot_prices<double>(const std::vector<const TriangularGains<double>*>&, long long);
template std::vector<TokenArc> guessed_token_arcs<float>(const TriangularGains<float>&, int, const std::vector<double>&,
                                                         double);
template std::vector<TokenArc> guessed_token_arcs<double>(const TriangularGains<double>&, int,
                                                          const std::vector<double>&, double);
template CostScale cost_scale<float>(const TriangularGains<float>&);
template CostScale cost_scale<double>(const TriangularGains<double>&);
template double largest_entry<float>(const TriangularGains<float>&);
template double largest_entry<double>(const TriangularGains<double>&);
template TokenPrice price_token<float>(const TriangularGains<float>&, int, const CostScale&,
                                       const std::vector<std::int64_t>&, const std::vector<std::int64_t>&,
                                       std::int64_t, const std::vector<double>&, const std::vector<TokenArc>&,
                                       const PricingKeep&, PricingBlocks&);
template TokenPrice price_token<double>(const TriangularGains<double>&, int, const CostScale&,
                                        const std::vector<std::int64_t>&, const std::vector<std::int64_t>&,
                                        std::int64_t, const std::vector<double>&, const std::vector<TokenArc>&,
                                        const PricingKeep&, PricingBlocks&);

}  // namespace subevict::greedy::column_generation
