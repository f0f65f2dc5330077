#include "greedy/eviction/optimum/implicit_flow.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include "core/input_error.hpp"
#include "greedy/eviction/optimum/column_generation.hpp"

namespace subevict::greedy {
namespace {

using namespace column_generation;

/// Pricing skips whole blocks of steps e ∈ [b·B, (b + 1)·B) when a bound shows that no arc in them
/// can be added or lower a token's Lagrangian term (price_token).
constexpr int kPricingBlock = 64;

/// The scaled, shifted costs of one instance (ArcCosts) and per token the running sums C_j at the
/// last step of every block after the one holding j + 1 (block_earned[block_offset[j] + m] ends
/// block (j + 1)/B + 1 + m), the exact doubles a walk down the column reaches there.
struct CostScale {
  ArcCosts costs;
  std::vector<std::size_t> block_offset;
  std::vector<double> block_earned;
};

/// Blocks of steps 0..n − 1 (the last may be partial).
int block_count(int n) { return (n + kPricingBlock - 1) / kPricingBlock; }

/// The last step of block b (n − 1 for the last block).
int block_end(int b, int n) { return std::min((b + 1) * kPricingBlock, n) - 1; }

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

/// Token j's Lagrangian term min_{e ∈ [j, n]} (y_e − C_j(e)) (C_j(n) = C_j(n − 1)).
template <class Scalar>
double token_lagrangian(const TriangularGains<Scalar>& gains, int j, const std::vector<double>& y) {
  const int n = gains.size();
  const Scalar* column = gains.column(j);
  double term = y[j];
  double earned = 0.0;
  for (int e = j + 1; e <= n - 1; ++e) {
    earned += double(column[e - j]);
    term = std::min(term, y[e] - earned);
  }
  return std::min(term, y[n] - earned);
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
                       int keep, PricingBlocks& blocks) {
  const int n = gains.size();
  const Scalar* column = gains.column(j);
  const double shift = scale.costs.shift[j];
  TokenPrice out;
  double lagrangian = y[j];  // e = j: never cached, C_j(j) = 0
  for (const TokenArc& a : restricted) lagrangian = std::min(lagrangian, y[a.e] - a.earned);
  double earned = 0.0;
  auto visit = [&](int e) {
    earned += double(column[e - j]);
    lagrangian = std::min(lagrangian, y[e] - earned);
    price_arc(out, e, earned, shift, scale.costs.scale, pot_r, pot[e], keep);
  };
  const int first_block = (j + 1) / kPricingBlock;
  const int walked_to = std::min(n - 1, (first_block + 1) * kPricingBlock - 1);
  for (int e = j + 1; e <= walked_to; ++e) visit(e);
  const double* ends = scale.block_earned.data() + scale.block_offset[j];
  for (int b = first_block + 1; b < block_count(n); ++b, ++ends) {
    const std::int64_t lowest_reduced = integer_cost(shift - *ends, scale.costs.scale) + pot_r - max_pot[b];
    const std::int64_t wanted = out.found < keep ? 0 : out.reduced[out.found - 1];
    const double lowest_term = -static_cast<double>(max_pot[b]) / scale.costs.scale - *ends;
    const bool no_arc = lowest_reduced >= wanted;
    const bool no_term = lowest_term >= lagrangian;
    ++(no_arc ? (no_term ? blocks.skipped : blocks.walked_for_term)
              : (no_term ? blocks.walked_for_reduced_cost : blocks.walked_for_both));
    if (no_arc && no_term) {
      earned = *ends;
      continue;
    }
    const int last = block_end(b, n);
    for (int e = b * kPricingBlock; e <= last; ++e) visit(e);
  }
  out.lagrangian = std::min(lagrangian, y[n] - earned);  // e = n earns C_j(n − 1)
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

/// The largest budget step, as a share of the current budget, taken by raising the flow of the
/// previous budget's simplex; a larger step starts a fresh simplex (bench/results/
/// greedy_long_context_optimum.md measures both).
constexpr double kWarmBudgetStep = 0.15;

/// The starting arcs for budget k: per token, the never-cached arc and the best lifetime against
/// guessed prices σ p_i for a few scales σ, where p_i is the value of the k-th best token for query
/// i + 1 (what one slot of S_i is worth to a cache that could take tokens back). Any start is
/// exact (pricing adds what is missing); a good one saves rounds.
template <class Scalar>
std::vector<std::vector<TokenArc>> guessed_arcs(const TriangularGains<Scalar>& gains, int k,
                                                const CostScale& scale) {
  const int n = gains.size();
  std::vector<double> price(n, 0.0);
  std::vector<double> row;
  for (int i = k; i + 1 < n; ++i) {  // S_i holds every token while i + 1 <= k
    const int r = i + 1;
    row.resize(r);
    for (int j = 0; j < r; ++j) row[j] = double(gains.column(j)[r - j]);
    std::nth_element(row.begin(), row.begin() + (k - 1), row.end(), std::greater<>());
    price[i] = k > 0 ? row[k - 1] : row.front();
  }
  std::vector<std::vector<TokenArc>> arcs(n);
  for (int j = 0; j < n; ++j) {
    const Scalar* column = gains.column(j);
    LifetimeGuess guess;
    for (int e = j + 1; e <= n - 1; ++e) guess.step(e, double(column[e - j]), price[e - 1]);
    arcs[j] = guess.arcs(j, scale.costs.shift[j]);
  }
  return arcs;
}

}  // namespace

template <class Scalar>
ImplicitFlowResult implicit_flow_optimum(const TriangularGains<Scalar>& gains, int budget,
                                         const ImplicitFlowOptions& options) {
  return implicit_flow_optima(gains, std::vector<int>{budget}, options).front();
}

template <class Scalar>
std::vector<ImplicitFlowResult> implicit_flow_optima(const TriangularGains<Scalar>& gains,
                                                     const std::vector<int>& budgets,
                                                     const ImplicitFlowOptions& options) {
  validate_options(options);
  for (int budget : budgets) validate_budget(budget, kSource);
  std::vector<ImplicitFlowResult> out(budgets.size());
  if (gains.size() == 0) {
    for (std::size_t b = 0; b < budgets.size(); ++b) {
      out[b].summary = empty_schedule_summary();
      out[b].potentials = {0.0};
      out[b].budget = budgets[b];
    }
    return out;
  }
  const CostScale scale = cost_scale(gains);
  std::vector<std::size_t> order(budgets.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return budgets[a] < budgets[b]; });
  // Budgets close together share one simplex, raised between solves, so each solve continues from
  // the previous budget's optimal basis and arcs; a budget far above the last one starts afresh
  // from its own guessed arcs, which pivots less than raising the flow through the old basis.
  std::vector<std::vector<TokenArc>> arcs;
  std::optional<IncrementalNetworkSimplex> simplex;
  std::size_t solved = 0;
  const double diagonal = gains.diagonal_sum();
  const StepMass step_mass = [&](const std::vector<int>& last_step) { return schedule_step_mass(gains, last_step); };
  PricingBlocks pass_blocks;  // the last pricing pass's, reported with its round
  const PriceAll price_all = [&](const PricingInput& in) {
    const std::vector<std::int64_t> max_pot = block_max_potential(in.pot, gains.size());
    std::vector<TokenPrice> prices(gains.size());
    pass_blocks = {};
    for (int j = 0; j < gains.size(); ++j) {
      prices[j] = price_token(gains, j, scale, in.pot, max_pot, in.pot_r[j], in.y, in.arcs[j], in.keep, pass_blocks);
    }
    return prices;
  };
  ImplicitFlowOptions reporting = options;
  if (options.on_round) {
    reporting.on_round = [&](const ImplicitFlowRound& r) {
      ImplicitFlowRound with_blocks = r;
      with_blocks.blocks = pass_blocks;
      options.on_round(with_blocks);
    };
  }
  for (std::size_t b : order) {
    const int k = std::min(budgets[b], gains.size());
    if (k == 0) {
      out[b] = nothing_cached(gains.size(), budgets[b], diagonal, largest_entry(gains),
                              options.step_mass ? step_mass : StepMass{});
      if (options.on_budget) options.on_budget(++solved);
      continue;
    }
    if (!simplex || k - simplex->budget() > kWarmBudgetStep * simplex->budget()) {
      arcs = guessed_arcs(gains, k, scale);
      simplex.emplace(restricted_simplex(gains.size(), k, scale.costs, arcs));
    } else if (k > simplex->budget()) {
      simplex->increase_budget(k - simplex->budget());
    }
    out[b] = solve_budget(gains.size(), diagonal, budgets[b], scale.costs, *simplex, arcs, reporting, price_all,
                          step_mass);
    if (options.on_budget) options.on_budget(++solved);
  }
  return out;
}

template <class Scalar>
double lagrangian_upper_bound(const TriangularGains<Scalar>& gains, int budget,
                              const std::vector<double>& potentials) {
  validate_budget(budget, kSource);
  const int n = gains.size();
  if (static_cast<int>(potentials.size()) != n + 1) {
    throw InputError(kSource, "potentials", std::to_string(n + 1) + " values (one per cache state)",
                     std::to_string(potentials.size()));
  }
  for (std::size_t i = 0; i < potentials.size(); ++i) {
    if (!std::isfinite(potentials[i])) {
      throw InputError(kSource, "potential " + std::to_string(i), "a finite value",
                       std::to_string(potentials[i]));
    }
  }
  if (n == 0) return 0.0;
  double token_terms = 0.0;
  for (int j = 0; j < n; ++j) token_terms += token_lagrangian(gains, j, potentials);
  return upper_bound_from(gains.diagonal_sum(), n, std::min(budget, n), potentials, token_terms);
}

namespace detail {

template <class Scalar>
TokenPricing price_token(const TriangularGains<Scalar>& gains, int j, const std::vector<std::int64_t>& pot,
                         std::int64_t pot_r, const std::vector<int>& restricted, int keep) {
  const int n = gains.size();
  if (j < 0 || j >= n) throw InputError(kSource, "token", "0 <= j < n = " + std::to_string(n), std::to_string(j));
  if (static_cast<int>(pot.size()) != n + 1) {
    throw InputError(kSource, "potentials", std::to_string(n + 1) + " values (one per cache state)",
                     std::to_string(pot.size()));
  }
  constexpr std::int64_t kLimit = std::int64_t{1} << kCostBits;
  for (const std::int64_t p : pot) {
    if (p <= -kLimit || p >= kLimit) throw InputError(kSource, "potential", "|p| < 2^60", std::to_string(p));
  }
  if (pot_r <= -kLimit || pot_r >= kLimit) throw InputError(kSource, "pot_r", "|p| < 2^60", std::to_string(pot_r));
  if (keep < 1 || keep > kMaxArcsPerToken) {
    throw InputError(kSource, "keep", "an integer in [1, 4]", std::to_string(keep));
  }
  const CostScale scale = cost_scale(gains);
  std::vector<TokenArc> arcs{TokenArc{j, 0.0, scale.costs.shift[j]}};
  double earned = 0.0;
  std::size_t next = 0;
  for (int e = j + 1; e < n && next < restricted.size(); ++e) {
    earned += double(gains.column(j)[e - j]);
    if (restricted[next] == e) {
      arcs.push_back(TokenArc{e, earned, scale.costs.shift[j] - earned});
      ++next;
    }
  }
  if (next != restricted.size()) {
    throw InputError(kSource, "restricted steps", "ascending steps in (" + std::to_string(j) + ", " +
                                                      std::to_string(n) + "), each once");
  }
  std::vector<double> y(pot.size());
  for (std::size_t i = 0; i < pot.size(); ++i) y[i] = -static_cast<double>(pot[i]) / scale.costs.scale;
  TokenPricing out;
  const TokenPrice price = subevict::greedy::price_token(gains, j, scale, pot, block_max_potential(pot, n), pot_r, y,
                                                         arcs, keep, out.blocks);
  for (int a = 0; a < price.found; ++a) {
    out.steps.push_back(price.arc[a].e);
    out.reduced.push_back(price.reduced[a]);
  }
  out.lagrangian = price.lagrangian;
  out.scale = scale.costs.scale;
  return out;
}

template TokenPricing price_token<float>(const TriangularGains<float>&, int, const std::vector<std::int64_t>&,
                                         std::int64_t, const std::vector<int>&, int);
template TokenPricing price_token<double>(const TriangularGains<double>&, int, const std::vector<std::int64_t>&,
                                          std::int64_t, const std::vector<int>&, int);

}  // namespace detail

template ImplicitFlowResult implicit_flow_optimum<float>(const TriangularGains<float>&, int,
                                                         const ImplicitFlowOptions&);
template ImplicitFlowResult implicit_flow_optimum<double>(const TriangularGains<double>&, int,
                                                          const ImplicitFlowOptions&);
template std::vector<ImplicitFlowResult> implicit_flow_optima<float>(const TriangularGains<float>&,
                                                                     const std::vector<int>&,
                                                                     const ImplicitFlowOptions&);
template std::vector<ImplicitFlowResult> implicit_flow_optima<double>(const TriangularGains<double>&,
                                                                      const std::vector<int>&,
                                                                      const ImplicitFlowOptions&);
template double lagrangian_upper_bound<float>(const TriangularGains<float>&, int, const std::vector<double>&);
template double lagrangian_upper_bound<double>(const TriangularGains<double>&, int, const std::vector<double>&);

}  // namespace subevict::greedy
