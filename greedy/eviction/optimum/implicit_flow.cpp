#include "greedy/eviction/optimum/implicit_flow.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include "core/input_error.hpp"
#include "greedy/eviction/optimum/flow_cost_quantum.hpp"
#include "greedy/eviction/optimum/incremental_network_simplex.hpp"

namespace subevict::greedy {
namespace {

constexpr const char* kSource = "implicit_flow";
constexpr int kMaxArcsPerToken = 4;
/// Integer costs and potentials stay below 2^60 in magnitude (flow_cost_exponent), so every reduced
/// cost (three such terms) is exact in 64 bits.
constexpr int kCostBits = 60;

/// A restricted-network arc R_j → D_e: its earnings C_j(e) (the running sum down column j, in the
/// one summation order every pass uses) and shifted cost shift_j − C_j(e) (≥ 0).
struct TokenArc {
  int e = 0;
  double earned = 0.0;
  double cost = 0.0;
};

/// Pricing skips whole blocks of steps e ∈ [b·B, (b + 1)·B) when a bound shows that no arc in them
/// can be added or lower a token's Lagrangian term (price_token).
constexpr int kPricingBlock = 64;

/// The scaled, shifted costs of one instance: shift_j = C_j(n − 1) (the most token j can earn),
/// scale = 2^s (flow_cost_exponent), and per token the running sums C_j at the last step of every
/// block after the one holding j + 1 (block_earned[block_offset[j] + m] ends block
/// (j + 1)/B + 1 + m), the exact doubles a walk down the column reaches there.
struct CostScale {
  std::vector<double> shift;
  double scale = 1.0;
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
  out.shift.resize(n);
  out.block_offset.resize(static_cast<std::size_t>(n) + 1, 0);
  for (int j = 0; j < n; ++j) {
    const int first = (j + 1) / kPricingBlock;  // the block walked step by step
    out.block_offset[j + 1] = out.block_offset[j] + static_cast<std::size_t>(std::max(0, blocks - 1 - first));
  }
  out.block_earned.resize(out.block_offset[n]);
  double max_cost = 0.0;
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
    out.shift[j] = earned;
    max_cost = std::max(max_cost, earned);
  }
  out.scale = std::ldexp(1.0, flow_cost_exponent(n, max_cost, kCostBits));
  return out;
}

/// The integer cost of an arc whose shifted cost is x ≥ 0: ⌊x · scale + 1/2⌋. Every arc's cost is
/// formed by this one expression from the same double, so pricing sees exactly the costs the
/// simplex holds.
std::int64_t integer_cost(double shifted, double scale) {
  return static_cast<std::int64_t>(shifted * scale + 0.5);
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

/// The pricing of one token: its most negative reduced costs (with their steps, earnings and
/// shifted costs) and its Lagrangian term.
struct TokenPrice {
  std::array<std::int64_t, kMaxArcsPerToken> reduced{};
  std::array<TokenArc, kMaxArcsPerToken> arc{};
  int found = 0;
  double lagrangian = 0.0;
};

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
/// at optimality attain it) is skipped, and the walk resumes from the stored C_j at its end.
template <class Scalar>
TokenPrice price_token(const TriangularGains<Scalar>& gains, int j, const CostScale& scale,
                       const std::vector<std::int64_t>& pot, const std::vector<std::int64_t>& max_pot,
                       std::int64_t pot_r, const std::vector<double>& y, const std::vector<TokenArc>& restricted,
                       int keep) {
  const int n = gains.size();
  const Scalar* column = gains.column(j);
  const double shift = scale.shift[j];
  TokenPrice out;
  double lagrangian = y[j];  // e = j: never cached, C_j(j) = 0
  for (const TokenArc& a : restricted) lagrangian = std::min(lagrangian, y[a.e] - a.earned);
  double earned = 0.0;
  auto visit = [&](int e) {
    earned += double(column[e - j]);
    lagrangian = std::min(lagrangian, y[e] - earned);
    const std::int64_t reduced = integer_cost(shift - earned, scale.scale) + pot_r - pot[e];
    if (reduced >= 0) return;
    if (out.found < keep) {
      ++out.found;
    } else if (reduced >= out.reduced[out.found - 1]) {
      return;
    }
    int slot = out.found - 1;  // insertion into the sorted (ascending) list
    while (slot > 0 && out.reduced[slot - 1] > reduced) {
      out.reduced[slot] = out.reduced[slot - 1];
      out.arc[slot] = out.arc[slot - 1];
      --slot;
    }
    out.reduced[slot] = reduced;
    out.arc[slot] = TokenArc{e, earned, shift - earned};
  };
  const int first_block = (j + 1) / kPricingBlock;
  const int walked_to = std::min(n - 1, (first_block + 1) * kPricingBlock - 1);
  for (int e = j + 1; e <= walked_to; ++e) visit(e);
  const double* ends = scale.block_earned.data() + scale.block_offset[j];
  for (int b = first_block + 1; b < block_count(n); ++b, ++ends) {
    const std::int64_t lowest_reduced = integer_cost(shift - *ends, scale.scale) + pot_r - max_pot[b];
    const std::int64_t wanted = out.found < keep ? 0 : out.reduced[out.found - 1];
    const double lowest_term = -static_cast<double>(max_pot[b]) / scale.scale - *ends;
    if (lowest_reduced >= wanted && lowest_term >= lagrangian) {
      earned = *ends;
      continue;
    }
    const int last = block_end(b, n);
    for (int e = b * kPricingBlock; e <= last; ++e) visit(e);
  }
  out.lagrangian = std::min(lagrangian, y[n] - earned);  // e = n earns C_j(n − 1)
  return out;
}

/// The certificate's bound from the per-token terms and the potentials y (file comment of the
/// header).
double upper_bound_from(double diagonal, int n, int k, const std::vector<double>& y, double token_terms) {
  double dual = token_terms + (k - 1) * y[0] - k * y[n];
  for (int i = 1; i < n; ++i) dual -= y[i];
  for (int i = 0; i < n; ++i) dual += k * std::min(0.0, y[i + 1] - y[i]);
  return diagonal - dual;
}

void validate_options(const ImplicitFlowOptions& options) {
  if (!std::isfinite(options.relative_gap) || options.relative_gap < 0.0) {
    throw InputError(kSource, "relative gap", "a finite value >= 0",
                     std::to_string(options.relative_gap));
  }
  if (options.max_rounds < 1) {
    throw InputError(kSource, "max rounds", "an integer >= 1", std::to_string(options.max_rounds));
  }
  if (options.arcs_per_token < 1 || options.arcs_per_token > kMaxArcsPerToken) {
    throw InputError(kSource, "arcs per token", "an integer in [1, 4]",
                     std::to_string(options.arcs_per_token));
  }
}

/// Budget 0: every token is evicted on arrival and OPT = Σ_j W_jj, certified by y_i = w_max · i
/// (any arc's earnings C_j(e) ≤ (e − j) w_max, so every token's term is y_j and the bound is tight).
template <class Scalar>
ImplicitFlowResult nothing_cached(const TriangularGains<Scalar>& gains, int budget, bool step_mass,
                                  std::chrono::steady_clock::time_point start) {
  const int n = gains.size();
  ImplicitFlowResult out;
  out.budget = budget;
  ScheduleSummary& summary = out.summary;
  double w_max = 0.0;
  for (int j = 0; j < n; ++j) {
    const Scalar* column = gains.column(j);
    for (int r = 1; r < n - j; ++r) w_max = std::max(w_max, double(column[r]));
  }
  summary.last_step.resize(n);
  for (int j = 0; j < n; ++j) summary.last_step[j] = j - 1;
  if (step_mass) {
    summary.step_mass = schedule_step_mass(gains, summary.last_step);
    summary.value = summary.step_mass.sum();
  } else {
    summary.value = gains.diagonal_sum();
  }
  out.potentials.resize(n + 1);
  for (int i = 0; i <= n; ++i) out.potentials[i] = w_max * i;
  summary.upper_bound = std::max(summary.value, lagrangian_upper_bound(gains, 0, out.potentials));
  summary.status = ScheduleStatus::kOptimal;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

/// The never-cached schedule's simplex with every arc of `arcs` added (budget k ≥ 1).
IncrementalNetworkSimplex restricted_simplex(int n, int k, const CostScale& scale,
                                             const std::vector<std::vector<TokenArc>>& arcs) {
  std::vector<std::int64_t> never_cached(n);
  for (int j = 0; j < n; ++j) never_cached[j] = integer_cost(scale.shift[j], scale.scale);
  IncrementalNetworkSimplex simplex(n, k, never_cached);
  for (int j = 0; j < n; ++j) {
    for (const TokenArc& a : arcs[j]) {
      if (a.e != j) simplex.add_arc(j, a.e, integer_cost(a.cost, scale.scale));
    }
  }
  return simplex;
}

/// The column generation for one budget on `simplex` (already at that budget, its token arcs
/// exactly `arcs`: per token sorted by step, the never-cached arc first), adding to both.
template <class Scalar>
ImplicitFlowResult solve(const TriangularGains<Scalar>& gains, int budget, const CostScale& scale,
                         IncrementalNetworkSimplex& simplex, std::vector<std::vector<TokenArc>>& arcs,
                         const ImplicitFlowOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const int n = gains.size();
  const int k = simplex.budget();
  const double diagonal = gains.diagonal_sum();
  ImplicitFlowResult out;
  out.budget = budget;
  ScheduleSummary& summary = out.summary;
  double best_bound = std::numeric_limits<double>::infinity();
  std::vector<double> best_y;
  std::vector<int> last_step(n);
  std::uint64_t pivots = 0;
  for (int round = 1;; ++round) {
    const std::size_t token_arcs = simplex.token_arcs();
    pivots += simplex.solve();
    const std::vector<int> chosen = simplex.chosen_steps();
    double value = diagonal;  // Σ_j W_jj + Σ_j C_j(chosen step)
    for (int j = 0; j < n; ++j) {
      last_step[j] = chosen[j] - 1;
      const auto& mine = arcs[j];
      const auto at = std::lower_bound(mine.begin(), mine.end(), chosen[j],
                                       [](const TokenArc& x, int e) { return x.e < e; });
      value += at->earned;
    }
    std::vector<std::int64_t> pot(n + 1);
    std::vector<double> y(n + 1);  // the certificate's potentials: y = −π / scale
    for (int i = 0; i <= n; ++i) {
      pot[i] = simplex.potential(n + i);
      y[i] = -static_cast<double>(pot[i]) / scale.scale;
    }
    const std::vector<std::int64_t> max_pot = block_max_potential(pot, n);

    // Price every implicit arc and evaluate the certificate in the same pass.
    double token_terms = 0.0;
    std::size_t added = 0;
    for (int j = 0; j < n; ++j) {
      const TokenPrice price = price_token(gains, j, scale, pot, max_pot, simplex.potential(j), y, arcs[j],
                                           options.arcs_per_token);
      token_terms += price.lagrangian;
      for (int a = 0; a < price.found; ++a) {
        const TokenArc& arc = price.arc[a];
        auto& mine = arcs[j];
        const auto at = std::lower_bound(mine.begin(), mine.end(), arc.e,
                                         [](const TokenArc& x, int e) { return x.e < e; });
        if (at != mine.end() && at->e == arc.e) continue;  // present: cannot be violated
        mine.insert(at, arc);
        simplex.add_arc(j, arc.e, integer_cost(arc.cost, scale.scale));
        ++added;
      }
    }
    const bool optimal = added == 0;
    const double bound = upper_bound_from(diagonal, n, k, y, token_terms);
    if (bound < best_bound) {
      best_bound = bound;
      best_y = y;
    }
    const double upper_bound = std::max(value, optimal ? bound : best_bound);
    summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options.on_round) {
      options.on_round(ImplicitFlowRound{round, token_arcs, added, value, upper_bound, summary.seconds});
    }
    const bool gap_reached = options.relative_gap > 0.0 &&
        upper_bound - value <= options.relative_gap * upper_bound;
    if (!optimal && !gap_reached && round < options.max_rounds) continue;

    summary.status = optimal ? ScheduleStatus::kOptimal : ScheduleStatus::kFeasible;
    if (!optimal) {
      summary.message = gap_reached ? "stopped at the requested relative gap" : "stopped at the round limit";
    }
    summary.last_step = options.process_form ? to_process_schedule(last_step, k) : last_step;
    if (options.step_mass) {
      summary.step_mass = schedule_step_mass(gains, summary.last_step);
      summary.value = summary.step_mass.sum();
    } else {
      summary.value = value;
    }
    summary.upper_bound = std::max(summary.value, upper_bound);
    summary.model_size = token_arcs;
    summary.nodes = pivots;
    summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    out.potentials = optimal ? y : best_y;
    return out;
  }
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
  // Geometric scales 0.25 .. 8 (and 0: keep while anything is earned); more scales did not save
  // rounds on the llama2-7b-shape heads (bench/results/greedy_long_context_optimum.md).
  static const std::vector<double> kScales = [] {
    std::vector<double> scales{0.0};
    for (int i = 0; i <= 10; ++i) scales.push_back(0.25 * std::pow(32.0, i / 10.0));
    return scales;
  }();
  std::vector<std::vector<TokenArc>> arcs(n);
  for (int j = 0; j < n; ++j) {
    const Scalar* column = gains.column(j);
    std::vector<double> best(kScales.size(), 0.0), objective(kScales.size()), earned_at(kScales.size(), 0.0);
    std::vector<int> step(kScales.size(), j);
    double earned = 0.0, paid = 0.0;
    for (int e = j + 1; e <= n - 1; ++e) {
      earned += double(column[e - j]);
      paid += price[e - 1];
      for (std::size_t s = 0; s < kScales.size(); ++s) {
        objective[s] = earned - kScales[s] * paid;
        if (objective[s] > best[s]) {
          best[s] = objective[s];
          step[s] = e;
          earned_at[s] = earned;
        }
      }
    }
    arcs[j].push_back(TokenArc{j, 0.0, scale.shift[j]});
    for (std::size_t s = 0; s < kScales.size(); ++s) {
      if (step[s] == j) continue;
      arcs[j].push_back(TokenArc{step[s], earned_at[s], scale.shift[j] - earned_at[s]});
    }
    std::sort(arcs[j].begin(), arcs[j].end(), [](const TokenArc& a, const TokenArc& b) { return a.e < b.e; });
    arcs[j].erase(std::unique(arcs[j].begin(), arcs[j].end(),
                              [](const TokenArc& a, const TokenArc& b) { return a.e == b.e; }),
                  arcs[j].end());
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
  for (std::size_t b : order) {
    const int k = std::min(budgets[b], gains.size());
    if (k == 0) {
      out[b] = nothing_cached(gains, budgets[b], options.step_mass, std::chrono::steady_clock::now());
      if (options.on_budget) options.on_budget(++solved);
      continue;
    }
    if (!simplex || k - simplex->budget() > kWarmBudgetStep * simplex->budget()) {
      arcs = guessed_arcs(gains, k, scale);
      simplex.emplace(restricted_simplex(gains.size(), k, scale, arcs));
    } else if (k > simplex->budget()) {
      simplex->increase_budget(k - simplex->budget());
    }
    out[b] = solve(gains, budgets[b], scale, *simplex, arcs, options);
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
