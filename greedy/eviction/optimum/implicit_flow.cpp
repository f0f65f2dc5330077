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
#include "greedy/eviction/optimum/triangle_pricing.hpp"

namespace subevict::greedy {
namespace {

using namespace column_generation;

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
  const std::vector<double> price = slot_prices<Scalar>({&gains}, k);
  std::vector<std::vector<TokenArc>> arcs(gains.size());
  for (int j = 0; j < gains.size(); ++j) arcs[j] = guessed_token_arcs(gains, j, price, scale.costs.shift[j]);
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
  const PriceAll price_all = price_every_token(gains, scale, &pass_blocks);
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
  const TokenPrice price = column_generation::price_token(gains, j, scale, pot, block_max_potential(pot, n), pot_r, y,
                                                         arcs, PricingKeep{keep}, out.blocks);
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
