#include "greedy/eviction/optimum/column_generation.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "core/attention_avx2.hpp"  // SUBEVICT_HAVE_AVX2_KERNELS
#include "core/input_error.hpp"
#include "greedy/eviction/optimum/flow_cost_quantum.hpp"

#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
#include <immintrin.h>
#endif

namespace subevict::greedy::column_generation {
namespace {

/// The first of a token's arcs (sorted by step) at step ≥ e.
std::vector<TokenArc>::iterator arc_at(std::vector<TokenArc>& arcs, int e) {
  return std::lower_bound(arcs.begin(), arcs.end(), e, [](const TokenArc& x, int step) { return x.e < step; });
}

}  // namespace

ArcCosts arc_costs(std::vector<double> shift) {
  ArcCosts out;
  const double max_cost = shift.empty() ? 0.0 : *std::max_element(shift.begin(), shift.end());
  out.scale = std::ldexp(1.0, flow_cost_exponent(int(shift.size()), max_cost, kCostBits));
  out.shift = std::move(shift);
  return out;
}

double upper_bound_from(double diagonal, int n, long long k, const std::vector<double>& y, double token_terms,
                        int heads) {
  const double total = double(k), h = double(heads);
  double dual = token_terms + (total - h) * y[0] - total * y[n];
  for (int i = 1; i < n; ++i) dual -= h * y[i];
  for (int i = 0; i < n; ++i) dual += total * std::min(0.0, y[i + 1] - y[i]);
  return diagonal - dual;
}

void validate_options(const ImplicitFlowOptions& options, const std::string& source) {
  if (!std::isfinite(options.relative_gap) || options.relative_gap < 0.0) {
    throw InputError(source, "relative gap", "a finite value >= 0", std::to_string(options.relative_gap));
  }
  if (options.max_rounds < 1) {
    throw InputError(source, "max rounds", "an integer >= 1", std::to_string(options.max_rounds));
  }
  if (!(options.max_seconds >= 0.0)) {
    throw InputError(source, "max seconds", "a value >= 0 (0: no limit)", std::to_string(options.max_seconds));
  }
  if (options.arcs_per_token < 2 || options.arcs_per_token > kMaxArcsPerToken) {
    throw InputError(source, "arcs per token", "an integer in [2, " + std::to_string(kMaxArcsPerToken) + "]",
                     std::to_string(options.arcs_per_token));
  }
}

IncrementalNetworkSimplex restricted_simplex(int n, int k, const ArcCosts& costs,
                                             const std::vector<std::vector<TokenArc>>& arcs) {
  std::vector<std::int64_t> never_cached(n);
  for (int j = 0; j < n; ++j) never_cached[j] = integer_cost(costs.shift[j], costs.scale);
  IncrementalNetworkSimplex simplex(n, k, never_cached);
  for (int j = 0; j < n; ++j) {
    for (const TokenArc& a : arcs[j]) {
      if (a.e != j) simplex.add_arc(j, a.e, integer_cost(a.cost, costs.scale));
    }
  }
  return simplex;
}

#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
namespace {

/// LifetimeGuess::steps on AVX2 (no FMA): the three vectors of four scales each, per step the
/// operations of LifetimeGuess::step in the same order.
__attribute__((target("avx2"))) void lifetime_steps_avx2(const double* scales, double& earned, double& paid,
                                                          double* best, double* step, double* earned_at, int e0,
                                                          const double* earned_now, const double* price, int count) {
  __m256d scale[3], b[3], s[3], a[3];
  for (int v = 0; v < 3; ++v) {
    scale[v] = _mm256_loadu_pd(scales + 4 * v);
    b[v] = _mm256_loadu_pd(best + 4 * v);
    s[v] = _mm256_loadu_pd(step + 4 * v);
    a[v] = _mm256_loadu_pd(earned_at + 4 * v);
  }
  double e_sum = earned, p_sum = paid;
  for (int r = 0; r < count; ++r) {
    e_sum += earned_now[r];
    p_sum += price[r];
    const __m256d e = _mm256_set1_pd(e_sum), p = _mm256_set1_pd(p_sum), at = _mm256_set1_pd(double(e0 + r));
    for (int v = 0; v < 3; ++v) {
      const __m256d objective = _mm256_sub_pd(e, _mm256_mul_pd(scale[v], p));
      const __m256d better = _mm256_cmp_pd(objective, b[v], _CMP_GT_OQ);
      b[v] = _mm256_blendv_pd(b[v], objective, better);
      s[v] = _mm256_blendv_pd(s[v], at, better);
      a[v] = _mm256_blendv_pd(a[v], e, better);
    }
  }
  earned = e_sum;
  paid = p_sum;
  for (int v = 0; v < 3; ++v) {
    _mm256_storeu_pd(best + 4 * v, b[v]);
    _mm256_storeu_pd(step + 4 * v, s[v]);
    _mm256_storeu_pd(earned_at + 4 * v, a[v]);
  }
}

}  // namespace
#endif

void LifetimeGuess::steps(int e0, const double* earned_now, const double* price, int count, CpuPath path) {
  static_assert(kScales == 12, "the AVX2 path holds the scales in three vectors of four");
#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
  if (path == CpuPath::kAvx2Fma) {
    lifetime_steps_avx2(kScaleValues.data(), earned_, paid_, best_.data(), step_.data(), earned_at_.data(), e0,
                        earned_now, price, count);
    return;
  }
#endif
  (void)path;
  for (int r = 0; r < count; ++r) step(e0 + r, earned_now[r], price[r]);
}

std::vector<TokenArc> LifetimeGuess::arcs(int j, double shift) const {
  std::vector<TokenArc> out{TokenArc{j, 0.0, shift}};
  for (int s = 0; s < kScales; ++s) {
    if (step_[s] != 0.0) out.push_back(TokenArc{int(step_[s]), earned_at_[s], shift - earned_at_[s]});
  }
  std::sort(out.begin(), out.end(), [](const TokenArc& a, const TokenArc& b) { return a.e < b.e; });
  out.erase(std::unique(out.begin(), out.end(), [](const TokenArc& a, const TokenArc& b) { return a.e == b.e; }),
            out.end());
  return out;
}

ImplicitFlowResult nothing_cached(int n, int budget, double diagonal, double w_max, const StepMass& step_mass) {
  const auto start = std::chrono::steady_clock::now();
  ImplicitFlowResult out;
  out.budget = budget;
  ScheduleSummary& summary = out.summary;
  summary.last_step.resize(n);
  for (int j = 0; j < n; ++j) summary.last_step[j] = j - 1;
  if (step_mass) {
    summary.step_mass = step_mass(summary.last_step);
    summary.value = summary.step_mass.sum();
  } else {
    summary.value = diagonal;
  }
  out.potentials.resize(n + 1);
  double token_terms = 0.0;
  for (int i = 0; i <= n; ++i) out.potentials[i] = w_max * i;
  for (int j = 0; j < n; ++j) token_terms += out.potentials[j];
  summary.upper_bound = std::max(summary.value, upper_bound_from(diagonal, n, 0, out.potentials, token_terms));
  summary.status = ScheduleStatus::kOptimal;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

ImplicitFlowResult solve_budget(int n, double diagonal, int budget, const ArcCosts& costs,
                                IncrementalNetworkSimplex& simplex, std::vector<std::vector<TokenArc>>& arcs,
                                const ImplicitFlowOptions& options, const PriceAll& price_all,
                                const StepMass& step_mass, int heads) {
  const auto start = std::chrono::steady_clock::now();
  const int k = simplex.budget();
  const int tokens = heads * n;  // token r = h n + j; D_i is node tokens + i
  ImplicitFlowResult out;
  out.budget = budget;
  ScheduleSummary& summary = out.summary;
  double best_bound = std::numeric_limits<double>::infinity();
  std::vector<double> best_y;
  std::vector<int> last_step(tokens);
  std::uint64_t pivots = 0;
  for (int round = 1;; ++round) {
    const std::size_t token_arcs = simplex.token_arcs();
    pivots += simplex.solve();
    const std::vector<int> chosen = simplex.chosen_steps();
    double value = diagonal;  // Σ_j W_jj + Σ_j C_j(chosen step)
    for (int r = 0; r < tokens; ++r) {
      last_step[r] = chosen[r] - 1;
      value += arc_at(arcs[r], chosen[r])->earned;  // the flow uses only restricted arcs
    }
    std::vector<std::int64_t> pot(n + 1), pot_r(tokens);
    std::vector<double> y(n + 1);  // the certificate's potentials: y = −π / scale
    for (int i = 0; i <= n; ++i) {
      pot[i] = simplex.potential(tokens + i);
      y[i] = -static_cast<double>(pot[i]) / costs.scale;
    }
    for (int r = 0; r < tokens; ++r) pot_r[r] = simplex.potential(r);

    // Price every implicit arc and evaluate the certificate in the same pass; the schedule goes
    // with it, in the form the result reports, for a pass that can sum its step mass on the way.
    std::vector<int> reported = options.process_form ? to_process_schedule(last_step, k) : last_step;
    const std::vector<TokenPrice> prices = price_all(
        PricingInput{pot, pot_r, y, arcs, options.arcs_per_token, options.step_mass ? &reported : nullptr});
    double token_terms = 0.0;
    std::size_t added = 0;
    for (int r = 0; r < tokens; ++r) {
      const TokenPrice& price = prices[r];
      token_terms += price.lagrangian;
      for (int a = 0; a < price.found; ++a) {
        const TokenArc& arc = price.arc[a];
        auto& mine = arcs[r];
        const auto at = arc_at(mine, arc.e);
        if (at != mine.end() && at->e == arc.e) continue;  // present: cannot be violated
        mine.insert(at, arc);
        simplex.add_arc(r, arc.e, integer_cost(arc.cost, costs.scale));
        ++added;
      }
    }
    const bool optimal = added == 0;
    const double bound = upper_bound_from(diagonal, n, k, y, token_terms, heads);
    if (bound < best_bound) {
      best_bound = bound;
      best_y = y;
    }
    const double upper_bound = std::max(value, optimal ? bound : best_bound);
    summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options.on_round) {
      // blocks: implicit_flow.cpp's on_round fills in its pricing pass's counts
      options.on_round(ImplicitFlowRound{round, token_arcs, added, value, upper_bound, summary.seconds, {}});
    }
    const bool gap_reached = options.relative_gap > 0.0 && upper_bound - value <= options.relative_gap * upper_bound;
    const bool late = options.max_seconds > 0.0 && summary.seconds >= options.max_seconds;
    if (!optimal && !gap_reached && !late && round < options.max_rounds) continue;

    summary.status = optimal ? ScheduleStatus::kOptimal : ScheduleStatus::kFeasible;
    if (!optimal) {
      summary.message = gap_reached ? "stopped at the requested relative gap"
                        : late      ? "stopped at the time limit"
                                    : "stopped at the round limit";
    }
    summary.last_step = std::move(reported);
    if (options.step_mass) {
      summary.step_mass = step_mass(summary.last_step);
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

}  // namespace subevict::greedy::column_generation
