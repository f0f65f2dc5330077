#pragma once
/// \file
/// The column generation shared by the two exact solvers of the offline optimum: implicit_flow.hpp
/// (gains stored as a triangle, priced column by column) and streamed_flow.hpp (gains streamed in
/// tiles, priced row block by row block). Everything here is independent of how the gains are
/// held: the restricted network's arcs and their integer costs, the pricing of one arc, the
/// starting arcs' guess per token, the certificate's bound and the round loop. Read
/// implicit_flow.hpp's file comment for the method.

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/cpu_path.hpp"
#include "greedy/eviction/optimum/implicit_flow.hpp"
#include "greedy/eviction/optimum/incremental_network_simplex.hpp"

namespace subevict::greedy::column_generation {

inline constexpr const char* kSource = "implicit_flow";
/// The most arcs per token one pricing pass adds (ImplicitFlowOptions::arcs_per_token ≤ this).
inline constexpr int kMaxArcsPerToken = 4;
/// Integer costs and potentials stay below 2^60 in magnitude (flow_cost_exponent), so every
/// reduced cost (three such terms) is exact in 64 bits.
inline constexpr int kCostBits = 60;

/// A restricted-network arc R_j → D_e (token j cached on steps j..e−1): its earnings C_j(e) (the
/// running sum down column j, in the one summation order every pass uses) and shifted cost
/// shift_j − C_j(e) (≥ 0).
struct TokenArc {
  int e = 0;
  double earned = 0.0;
  double cost = 0.0;
};

/// The costs' common data: shift_j = C_j(n − 1) (the most token j can earn) and scale = 2^s
/// (flow_cost_exponent with kCostBits).
struct ArcCosts {
  std::vector<double> shift;
  double scale = 1.0;
};

/// ArcCosts for these shifts (scale from the largest).
[[nodiscard]] ArcCosts arc_costs(std::vector<double> shift);

/// The integer cost of an arc whose shifted cost is x ≥ 0: ⌊x · scale + 1/2⌋. Every arc's cost is
/// formed by this one expression from the same double, so pricing sees exactly the costs the
/// simplex holds.
[[nodiscard]] inline std::int64_t integer_cost(double shifted, double scale) {
  return static_cast<std::int64_t>(shifted * scale + 0.5);
}

/// The pricing of one token: its most negative reduced costs (ascending, with their steps,
/// earnings and shifted costs) and its Lagrangian term min_e (y_e − C_j(e)).
struct TokenPrice {
  std::array<std::int64_t, kMaxArcsPerToken> reduced{};
  std::array<TokenArc, kMaxArcsPerToken> arc{};
  int found = 0;
  double lagrangian = 0.0;
  /// A lower bound on the reduced costs of the token's arcs outside its restricted ones
  /// (triangle_pricing.hpp, PricingKeep::least_other; else left at the largest value).
  std::int64_t least_other = std::numeric_limits<std::int64_t>::max();
};

/// Prices the arc R_j → D_e with earnings `earned` (reduced cost integer_cost(shift − earned) +
/// pot_r − pot_e, in integers, exactly as the simplex forms it) into out, keeping the `keep` most
/// negative below 0.
inline void price_arc(TokenPrice& out, int e, double earned, double shift, double scale, std::int64_t pot_r,
                      std::int64_t pot_e, int keep) {
  const std::int64_t reduced = integer_cost(shift - earned, scale) + pot_r - pot_e;
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
}

/// The certificate's bound (implicit_flow.hpp) from Σ_j W_jj, the per-token terms and y_0..y_n,
/// for a cache of k entries shared by `heads` heads whose tokens arrive in lockstep
/// (shared_optimum.hpp: b_0 = k − H, b_i = −H for 0 < i < n, b_n = −k; one head is H = 1).
[[nodiscard]] double upper_bound_from(double diagonal, int n, long long k, const std::vector<double>& y,
                                      double token_terms, int heads = 1);

/// Throws InputError naming `source` for options outside their documented ranges (arcs_per_token
/// two at least: the most violated arc a token prices may be its arc at capacity, in the network
/// already and so not added, and an absent violated arc must still be found beside it).
void validate_options(const ImplicitFlowOptions& options, const std::string& source = kSource);

/// The never-cached schedule's simplex with every arc of `arcs` added (budget k ≥ 1).
[[nodiscard]] IncrementalNetworkSimplex restricted_simplex(int n, int k, const ArcCosts& costs,
                                                           const std::vector<std::vector<TokenArc>>& arcs);

/// One token's starting arcs: the best lifetime against guessed slot prices σ p_t for a few scales
/// σ (implicit_flow.cpp guessed_arcs says where p comes from). Feed its steps e = j + 1, ..., n − 1
/// in ascending order.
class LifetimeGuess {
 public:
  /// 0 (keep while anything is earned), then 0.25 · 2^(i/2) for i = 0..10 (0.25 .. 8); more
  /// scales did not save rounds on the llama2-7b-shape heads
  /// (bench/results/greedy_long_context_optimum.md).
  static constexpr int kScales = 12;

  /// Step e: W_ej earned and p_{e−1} paid. Branch-free over the scales (it runs at every entry of
  /// the gains in streamed_flow.hpp's first pass).
  void step(int e, double earned_now, double price) {
    earned_ += earned_now;
    paid_ += price;
    const double at = e;
    for (int s = 0; s < kScales; ++s) {
      const double objective = earned_ - kScaleValues[s] * paid_;
      const bool better = objective > best_[s];
      best_[s] = better ? objective : best_[s];
      step_[s] = better ? at : step_[s];
      earned_at_[s] = better ? earned_ : earned_at_[s];
    }
  }
  /// step(e0 + r, earned_now[r], price[r]) for r = 0..count − 1, in order. On CpuPath::kAvx2Fma
  /// (where the CPU has it) the twelve scales go four to a vector with the same multiplications,
  /// subtractions and comparisons as step (no FMA): the same bits on either path (tests). The
  /// streamed optimum's first pass runs this at every entry of the gains.
  void steps(int e0, const double* earned_now, const double* price, int count, CpuPath path);
  /// C_j(last step fed).
  [[nodiscard]] double earned() const { return earned_; }
  /// Token j's arcs for shift_j, sorted by step without repeats, the never-cached arc first.
  [[nodiscard]] std::vector<TokenArc> arcs(int j, double shift) const;

 private:
  static constexpr double kSqrt2 = 1.4142135623730951;
  static constexpr std::array<double, kScales> kScaleValues{
      0.0, 0.25, 0.25 * kSqrt2, 0.5, 0.5 * kSqrt2, 1.0, kSqrt2, 2.0, 2.0 * kSqrt2, 4.0, 4.0 * kSqrt2, 8.0};
  double earned_ = 0.0, paid_ = 0.0;
  std::array<double, kScales> best_{};
  std::array<double, kScales> step_{};  // 0 = none (every real step is > j ≥ 0)
  std::array<double, kScales> earned_at_{};
};

/// schedule_step_mass of a schedule (last_step form) on the solver's gains.
using StepMass = std::function<Eigen::VectorXd(const std::vector<int>&)>;

/// Budget 0: every token is evicted on arrival and OPT = Σ_j W_jj (`diagonal`), certified by
/// y_i = w_max · i for any w_max ≥ every entry of W (each arc's earnings C_j(e) ≤ (e − j) w_max, so
/// every token's term is y_j and the bound equals Σ_j W_jj). The value is the step masses' sum when
/// step_mass is set, else `diagonal`.
[[nodiscard]] ImplicitFlowResult nothing_cached(int n, int budget, double diagonal, double w_max,
                                                const StepMass& step_mass);

/// What a pricing pass reads: the simplex's potentials of D_0..D_n and of the R nodes (one per
/// token), the certificate's y = −π_D / scale, and the restricted arcs (per token, sorted by step).
/// `schedule`, when set, is the priced flow's schedule in the form the result reports
/// (summary.last_step): should the round stop, its step mass is what solve_budget asks for next,
/// and a pass that streams the gains may sum it on the way (streamed_flow.cpp).
struct PricingInput {
  const std::vector<std::int64_t>& pot;
  const std::vector<std::int64_t>& pot_r;
  const std::vector<double>& y;
  const std::vector<std::vector<TokenArc>>& arcs;
  int keep = 1;
  const std::vector<int>* schedule = nullptr;
};

/// Prices every implicit arc: one TokenPrice per token (lagrangian over every step e ∈ [j, n]).
using PriceAll = std::function<std::vector<TokenPrice>(const PricingInput&)>;

/// The column generation for one budget on `simplex` (already at that budget, its token arcs
/// exactly `arcs`: per token sorted by step, the never-cached arc first), adding to both: solve,
/// price, add violated arcs, until none is violated or options stop it (implicit_flow.hpp). With
/// `heads` > 1 the network is a cache shared by H heads (shared_columns.hpp): arcs, pot_r, the
/// prices and summary.last_step hold the H n tokens r = h n + j (last_step the token's own step),
/// the simplex was built with H heads, and options.process_form and options.step_mass must be
/// false (both are single-head forms).
[[nodiscard]] ImplicitFlowResult solve_budget(int n, double diagonal, int budget, const ArcCosts& costs,
                                              IncrementalNetworkSimplex& simplex,
                                              std::vector<std::vector<TokenArc>>& arcs,
                                              const ImplicitFlowOptions& options, const PriceAll& price_all,
                                              const StepMass& step_mass, int heads = 1);

}  // namespace subevict::greedy::column_generation
