#include "greedy/eviction/optimum/streamed_flow.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "greedy/eviction/optimum/column_generation.hpp"

namespace subevict::greedy {
namespace {

using namespace column_generation;

/// Entries per row read to estimate a guessed slot price.
constexpr int kPriceSample = 512;

/// A double bound on a reduced cost at or above which the integer one is surely > 0: the bound
/// (shift − C)·scale + 1/2 + π_R − π_D is formed from potentials below 2^60 rounded to double
/// (error ≤ 128 each) and two more roundings below 2^62 (≤ 256 + 512), and the integer cost
/// truncates by < 1, so the integer reduced cost is > bound − 1025.
constexpr double kSurelyNonNegative = 4096.0;

/// p_i for i = k..n − 2: the k-th largest entry of row i + 1 (over its tokens j ≤ i), estimated
/// from kPriceSample evenly spaced entries at the matching rank; 0 for i < k (S_i then holds every
/// token).
std::vector<double> guessed_prices(const StreamedGains& gains, int k) {
  const int n = gains.size();
  std::vector<double> price(n, 0.0);
#pragma omp parallel num_threads(gains.threads())
  {
    std::vector<double> row;
#pragma omp for schedule(dynamic, 256)
    for (int i = k; i < n - 1; ++i) {
      const int r = i + 1, m = std::min(r, kPriceSample);
      row.resize(m);
      for (int t = 0; t < m; ++t) row[t] = gains.entry(r, int(static_cast<long long>(t) * r / m));
      const int rank = std::clamp(r == m ? k : int(std::llround(double(k) * m / r)), 1, m);
      std::nth_element(row.begin(), row.begin() + (rank - 1), row.end(), std::greater<>());
      price[i] = row[rank - 1];
    }
  }
  return price;
}

/// Calls visit.token(thread, j, first_row, first, last, w) for every token j and every tile of its
/// column: w[r] = W_{first_row + r, j} for r ∈ [first, last), exactly its steps e ∈ (j, n − 1] in
/// the tile; per token the tiles come in ascending rows on one thread (StreamedGains::for_each_tile).
template <class Visit>
void for_each_arc_step(const StreamedGains& gains, Visit&& visit) {
  const int n = gains.size();
  gains.for_each_tile([&](int thread, const GainTile& tile) {
    for (int c = 0; c < GainTile::kKeys && tile.first_key + c < n; ++c) {
      const int j = tile.first_key + c;
      const int first = std::max(0, j + 1 - tile.first_row);
      const int last = std::min(GainTile::kRows, n - tile.first_row);
      visit.token(thread, j, tile.first_row, first, last, tile.entries + std::size_t(c) * GainTile::kRows);
    }
  });
}

/// The starting arcs and costs for budget k (pass 1 of the file comment).
struct Start {
  ArcCosts costs;
  std::vector<std::vector<TokenArc>> arcs;
};

Start guessed_start(const StreamedGains& gains, int k) {
  const int n = gains.size();
  const std::vector<double> price = guessed_prices(gains, k);
  std::vector<LifetimeGuess> guess(n);
  struct {
    std::vector<LifetimeGuess>& guess;
    const std::vector<double>& price;
    CpuPath path;
    void token(int, int j, int first_row, int first, int last, const double* w) const {
      guess[j].steps(first_row + first, w + first, price.data() + first_row + first - 1, last - first, path);
    }
  } visit{guess, price, active_cpu_path()};
  for_each_arc_step(gains, visit);
  std::vector<double> shift(n);
  for (int j = 0; j < n; ++j) shift[j] = guess[j].earned();
  Start out{arc_costs(std::move(shift)), std::vector<std::vector<TokenArc>>(n)};
  for (int j = 0; j < n; ++j) out.arcs[j] = guess[j].arcs(j, out.costs.shift[j]);
  return out;
}

/// schedule_step_mass of one schedule (last_step form) summed over a pass of the tiles: each
/// thread adds the entries of the tokens it visits to its own row sums, and mass() adds the
/// diagonal and the threads' sums in a fixed order (the tiles are dealt to threads by a fixed rule,
/// so the bits do not depend on the run).
class StepMassSum {
 public:
  StepMassSum(const StreamedGains& gains, const std::vector<int>& last_step)
      : gains_(gains), last_step_(last_step), partial_(gains.threads(), Eigen::VectorXd::Zero(gains.size())) {
    (void)cache_sizes(last_step);  // throws std::invalid_argument unless t_j ∈ [j − 1, n − 1]
  }
  void token(int thread, int j, int first_row, int first, int last, const double* w) {
    const int held_until = last_step_[j] + 1;  // token j is in G_i for i = j + 1 .. t_j + 1
    Eigen::VectorXd& partial = partial_[thread];
    for (int r = first; r < last && first_row + r <= held_until; ++r) partial[first_row + r] += w[r];
  }
  [[nodiscard]] Eigen::VectorXd mass() const {
    const int n = gains_.size();
    Eigen::VectorXd mass(n);
    for (int i = 0; i < n; ++i) mass[i] = gains_.entry(i, i);
    for (const Eigen::VectorXd& p : partial_) mass += p;
    return mass;
  }

 private:
  const StreamedGains& gains_;
  const std::vector<int>& last_step_;
  std::vector<Eigen::VectorXd> partial_;
};

/// The step mass a pricing pass summed for the schedule it priced (PricingInput::schedule).
struct PassStepMass {
  std::vector<int> last_step;
  Eigen::VectorXd mass;
};

/// One pricing pass (pass 2 of the file comment); with in.schedule set it also sums that
/// schedule's step mass into `summed` (pass 3 then needs no pass of its own when the round stops).
std::vector<TokenPrice> price_pass(const StreamedGains& gains, const ArcCosts& costs, const PricingInput& in,
                                   PassStepMass& summed) {
  const int n = gains.size();
  std::vector<TokenPrice> prices(n);
  std::vector<double> earned(n, 0.0), pot_d(n + 1);
  for (int j = 0; j < n; ++j) prices[j].lagrangian = in.y[j];  // e = j: never cached
  for (int e = 0; e <= n; ++e) pot_d[e] = double(in.pot[e]);
  std::optional<StepMassSum> step_mass;
  if (in.schedule != nullptr) step_mass.emplace(gains, *in.schedule);
  struct {
    const ArcCosts& costs;
    const PricingInput& in;
    const std::vector<double>& pot_d;
    std::vector<TokenPrice>& prices;
    std::vector<double>& earned;
    std::optional<StepMassSum>& step_mass;
    void token(int thread, int j, int first_row, int first, int last, const double* w) const {
      TokenPrice& price = prices[j];
      const double shift = costs.shift[j], scale = costs.scale, half_plus_pot_r = 0.5 + double(in.pot_r[j]);
      double sum = earned[j], term = price.lagrangian;
      for (int r = first; r < last; ++r) {
        const int e = first_row + r;
        sum += w[r];
        term = std::min(term, in.y[e] - sum);
        if ((shift - sum) * scale + half_plus_pot_r - pot_d[e] < kSurelyNonNegative) {
          price_arc(price, e, sum, shift, scale, in.pot_r[j], in.pot[e], in.keep);
        }
      }
      earned[j] = sum;
      price.lagrangian = term;
      if (step_mass) step_mass->token(thread, j, first_row, first, last, w);
    }
  } visit{costs, in, pot_d, prices, earned, step_mass};
  for_each_arc_step(gains, visit);
  for (int j = 0; j < n; ++j) prices[j].lagrangian = std::min(prices[j].lagrangian, in.y[n] - earned[j]);
  if (step_mass) summed = PassStepMass{*in.schedule, step_mass->mass()};
  return prices;
}

/// schedule_step_mass on the streamed gains (pass 3 of the file comment).
Eigen::VectorXd streamed_step_mass(const StreamedGains& gains, const std::vector<int>& last_step) {
  StepMassSum sum(gains, last_step);
  for_each_arc_step(gains, sum);
  return sum.mass();
}

}  // namespace

std::vector<ImplicitFlowResult> streamed_flow_optima(const StreamedGains& gains, const std::vector<int>& budgets,
                                                     const ImplicitFlowOptions& options) {
  validate_options(options);
  for (int budget : budgets) validate_budget(budget, kSource);
  const int n = gains.size();
  std::vector<ImplicitFlowResult> out(budgets.size());
  std::size_t solved = 0;
  for (std::size_t b = 0; b < budgets.size(); ++b) {
    const int k = std::min(budgets[b], n);
    PassStepMass summed;  // the last pricing pass's, reused when the result asks for that schedule's
    const StepMass step_mass = [&](const std::vector<int>& last_step) {
      return last_step == summed.last_step ? summed.mass : streamed_step_mass(gains, last_step);
    };
    if (k == 0) {  // no entry of g heads' summed attention exceeds g
      out[b] = nothing_cached(n, budgets[b], gains.diagonal_sum(), double(gains.group_size()),
                              options.step_mass ? step_mass : StepMass{});
    } else {
      Start start = guessed_start(gains, k);
      IncrementalNetworkSimplex simplex = restricted_simplex(n, k, start.costs, start.arcs);
      const PriceAll price_all = [&](const PricingInput& in) { return price_pass(gains, start.costs, in, summed); };
      out[b] = solve_budget(n, gains.diagonal_sum(), budgets[b], start.costs, simplex, start.arcs, options,
                            price_all, step_mass);
    }
    if (options.on_budget) options.on_budget(++solved);
  }
  return out;
}

ImplicitFlowResult streamed_flow_optimum(const StreamedGains& gains, int budget, const ImplicitFlowOptions& options) {
  return streamed_flow_optima(gains, std::vector<int>{budget}, options).front();
}

}  // namespace subevict::greedy
