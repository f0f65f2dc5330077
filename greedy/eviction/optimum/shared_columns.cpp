#include "greedy/eviction/optimum/shared_columns.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>

#include "core/input_error.hpp"
#include "greedy/eviction/optimum/column_generation.hpp"
#include "greedy/eviction/optimum/incremental_network_simplex.hpp"
#include "greedy/eviction/optimum/triangle_pricing.hpp"

namespace subevict::greedy {
namespace {

using column_generation::CostScale;
using column_generation::TokenArc;
using column_generation::TokenPrice;
constexpr const char* kSource = "shared_columns";

/// The rounds' options (column_generation.hpp solve_budget with H heads): the shared network has
/// neither the single-head process form nor per-step masses.
ImplicitFlowOptions round_options(const SharedColumnOptions& options) {
  ImplicitFlowOptions solve;
  solve.relative_gap = options.relative_gap;
  solve.max_rounds = options.max_rounds;
  solve.max_seconds = options.max_seconds;
  solve.arcs_per_token = options.arcs_per_token;
  solve.process_form = false;
  solve.step_mass = false;
  return solve;
}

int validate(const std::vector<const TriangularGains<double>*>& gains, long long total,
             const SharedColumnOptions& options) {
  if (gains.empty()) throw InputError(kSource, "heads", "at least one head");
  for (std::size_t h = 0; h < gains.size(); ++h) {
    if (gains[h] == nullptr || gains[h]->size() != gains.front()->size()) {
      throw InputError(kSource, "head " + std::to_string(h), "gains of " + std::to_string(gains.front()->size()) +
                                                                 " tokens like head 0");
    }
  }
  if (total < 0) throw InputError(kSource, "total budget", "an integer >= 0", std::to_string(total));
  column_generation::validate_options(round_options(options), kSource);
  return gains.front()->size();
}

}  // namespace

SharedOptimum shared_optimum_columns(const std::vector<const TriangularGains<double>*>& gains, long long total,
                                     const SharedColumnOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const int n = validate(gains, total, options);
  const int heads = int(gains.size());
  SharedOptimum out;
  out.last_step.assign(std::size_t(heads), std::vector<int>(std::size_t(n)));
  out.occupancy = Eigen::MatrixXi::Zero(n, heads);
  if (n == 0) {
    out.status = ScheduleStatus::kOptimal;
    return out;
  }
  const long long t = std::min<long long>(total, (long long)heads * n);
  const int workers = options.threads > 0 ? options.threads : omp_get_max_threads();

  // Per head the shifts and block sums; one quantum for every head (kCostBits over the largest
  // shift of any head).
  std::vector<CostScale> scales(static_cast<std::size_t>(heads));
#pragma omp parallel for schedule(dynamic) num_threads(workers)
  for (int h = 0; h < heads; ++h) scales[std::size_t(h)] = column_generation::cost_scale(*gains[std::size_t(h)]);
  // The quantum of the head with the largest shift (a head whose shifts are all 0 has quantum 1).
  double scale = 1.0, largest = 0.0, diagonal = 0.0;
  for (int h = 0; h < heads; ++h) {
    for (double shift : scales[std::size_t(h)].costs.shift) {
      if (shift > largest) {
        largest = shift;
        scale = scales[std::size_t(h)].costs.scale;
      }
    }
    diagonal += gains[std::size_t(h)]->diagonal_sum();
  }
  for (CostScale& s : scales) s.costs.scale = scale;
  const int tokens = heads * n;

  // The never-cached schedule's simplex (token r = h n + j is node r), then the starting arcs per
  // token: its best lifetimes against guessed slot prices (the T-th best entry of each query row
  // over the heads, triangle_pricing.hpp slot_prices).
  std::vector<std::int64_t> never_cached(static_cast<std::size_t>(tokens));
  for (int r = 0; r < tokens; ++r) {
    never_cached[std::size_t(r)] = column_generation::integer_cost(scales[std::size_t(r / n)].costs.shift[std::size_t(r % n)], scale);
  }
  if (t == 0) {  // nothing can be cached: the never-cached schedule, certified by the diagonal
    for (auto& steps : out.last_step) {
      for (int j = 0; j < n; ++j) steps[std::size_t(j)] = j - 1;
    }
    out.value = out.upper_bound = diagonal;
    out.status = ScheduleStatus::kOptimal;
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
  }
  IncrementalNetworkSimplex simplex(n, int(t), never_cached, heads);
  const std::vector<double> slot = column_generation::slot_prices(gains, t);
  std::vector<std::vector<TokenArc>> arcs(static_cast<std::size_t>(tokens));
#pragma omp parallel for schedule(dynamic) num_threads(workers)
  for (int h = 0; h < heads; ++h) {
    for (int j = 0; j < n; ++j) {
      arcs[std::size_t(h) * n + j] = column_generation::guessed_token_arcs(
          *gains[std::size_t(h)], j, slot, scales[std::size_t(h)].costs.shift[std::size_t(j)]);
    }
  }
  for (int r = 0; r < tokens; ++r) {
    for (const TokenArc& a : arcs[std::size_t(r)]) {
      if (a.e > r % n) simplex.add_arc(r, a.e, column_generation::integer_cost(a.cost, scale));
    }
  }

  // Every round prices every head's tokens in parallel against the round's potentials, the
  // certificate's terms in the same pass.
  const column_generation::PriceAll price_all = [&](const column_generation::PricingInput& in) {
    std::vector<TokenPrice> prices(static_cast<std::size_t>(tokens));
    const std::vector<std::int64_t> max_pot = column_generation::block_max_potential(in.pot, n);
#pragma omp parallel for schedule(dynamic) num_threads(workers)
    for (int h = 0; h < heads; ++h) {
      PricingBlocks blocks;
      for (int j = 0; j < n; ++j) {
        const std::size_t r = std::size_t(h) * n + j;
        prices[r] = column_generation::price_token(*gains[std::size_t(h)], j, scales[std::size_t(h)], in.pot, max_pot,
                                                   in.pot_r[r], in.y, in.arcs[r],
                                                   column_generation::PricingKeep{in.keep}, blocks);
      }
    }
    return prices;
  };
  // The rounds' clock starts here; reports and the time limit count from the call's start.
  const double setup = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ImplicitFlowOptions solve = round_options(options);
  if (options.max_seconds > 0.0) solve.max_seconds = std::max(options.max_seconds - setup, 1e-9);
  if (options.on_round) {
    solve.on_round = [&](const ImplicitFlowRound& round) {
      ImplicitFlowRound since_start = round;
      since_start.seconds += setup;
      options.on_round(since_start);
    };
  }
  const ImplicitFlowResult result = column_generation::solve_budget(n, diagonal, int(t), scales.front().costs, simplex,
                                                                    arcs, solve, price_all, {}, heads);
  for (int h = 0; h < heads; ++h) {
    std::copy_n(result.summary.last_step.begin() + std::ptrdiff_t(h) * n, n, out.last_step[std::size_t(h)].begin());
  }
  out.status = result.summary.status;
  out.value = result.summary.value;
  out.upper_bound = result.summary.upper_bound;
  out.arcs = result.summary.model_size;
  for (int h = 0; h < heads; ++h) {
    for (int j = 0; j < n; ++j) {
      for (int i = j; i <= out.last_step[std::size_t(h)][std::size_t(j)]; ++i) ++out.occupancy(i, h);
    }
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace subevict::greedy
