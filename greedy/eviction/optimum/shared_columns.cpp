#include "greedy/eviction/optimum/shared_columns.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

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
  if (!(options.relative_gap >= 0.0) || !std::isfinite(options.relative_gap)) {
    throw InputError(kSource, "relative gap", "a finite value >= 0", std::to_string(options.relative_gap));
  }
  if (!(options.max_seconds >= 0.0)) {
    throw InputError(kSource, "max seconds", "a value >= 0", std::to_string(options.max_seconds));
  }
  if (options.max_rounds < 1) throw InputError(kSource, "max rounds", "an integer >= 1", std::to_string(options.max_rounds));
  // Two at least: a token's arc at capacity may be the most violated one priced (it is already in
  // the network and not added), and an absent violated arc must still find a place.
  if (options.arcs_per_token < 2 || options.arcs_per_token > column_generation::kMaxArcsPerToken) {
    throw InputError(kSource, "arcs per token", "an integer in [2, 4]", std::to_string(options.arcs_per_token));
  }
  return gains.front()->size();
}

/// Inserts `arc` into the step-sorted list unless its step is there.
bool insert_arc(std::vector<TokenArc>& arcs, const TokenArc& arc) {
  const auto at = std::lower_bound(arcs.begin(), arcs.end(), arc.e, [](const TokenArc& a, int e) { return a.e < e; });
  if (at != arcs.end() && at->e == arc.e) return false;
  arcs.insert(at, arc);
  return true;
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
  const std::vector<double> prices = column_generation::slot_prices(gains, t);
  std::vector<std::vector<TokenArc>> arcs(static_cast<std::size_t>(tokens));
#pragma omp parallel for schedule(dynamic) num_threads(workers)
  for (int h = 0; h < heads; ++h) {
    for (int j = 0; j < n; ++j) {
      arcs[std::size_t(h) * n + j] = column_generation::guessed_token_arcs(
          *gains[std::size_t(h)], j, prices, scales[std::size_t(h)].costs.shift[std::size_t(j)]);
    }
  }
  for (int r = 0; r < tokens; ++r) {
    for (const TokenArc& a : arcs[std::size_t(r)]) {
      if (a.e > r % n) simplex.add_arc(r, a.e, column_generation::integer_cost(a.cost, scale));
    }
  }

  double best_bound = std::numeric_limits<double>::infinity();
  std::vector<std::int64_t> pot(static_cast<std::size_t>(n) + 1), pot_r(static_cast<std::size_t>(tokens));
  std::vector<double> y(static_cast<std::size_t>(n) + 1);
  std::vector<std::vector<std::pair<int, TokenArc>>> fresh(static_cast<std::size_t>(heads));  // per head: (r, arc)
  for (int round = 1;; ++round) {
    simplex.solve();
    for (int i = 0; i <= n; ++i) {
      pot[std::size_t(i)] = simplex.potential(tokens + i);
      y[std::size_t(i)] = -double(pot[std::size_t(i)]) / scale;
    }
    for (int r = 0; r < tokens; ++r) pot_r[std::size_t(r)] = simplex.potential(r);
    const std::vector<std::int64_t> max_pot = column_generation::block_max_potential(pot, n);

    // Price every implicit arc (heads in parallel); the certificate's token terms in the same pass.
    std::vector<double> terms(static_cast<std::size_t>(heads), 0.0);
#pragma omp parallel for schedule(dynamic) num_threads(workers)
    for (int h = 0; h < heads; ++h) {
      PricingBlocks blocks;
      fresh[std::size_t(h)].clear();
      for (int j = 0; j < n; ++j) {
        const std::size_t r = std::size_t(h) * n + j;
        const TokenPrice price = column_generation::price_token(
            *gains[std::size_t(h)], j, scales[std::size_t(h)], pot, max_pot, pot_r[r], y, arcs[r],
            column_generation::PricingKeep{options.arcs_per_token}, blocks);
        terms[std::size_t(h)] += price.lagrangian;
        for (int f = 0; f < price.found; ++f) {
          if (insert_arc(arcs[r], price.arc[std::size_t(f)])) fresh[std::size_t(h)].emplace_back(int(r), price.arc[std::size_t(f)]);
        }
      }
    }
    double token_terms = 0.0;
    std::size_t new_arcs = 0;
    for (int h = 0; h < heads; ++h) {
      token_terms += terms[std::size_t(h)];
      for (const auto& [r, a] : fresh[std::size_t(h)]) simplex.add_arc(r, a.e, column_generation::integer_cost(a.cost, scale));
      new_arcs += fresh[std::size_t(h)].size();
    }
    const std::vector<int> chosen = simplex.chosen_steps();
    double value = 0.0;
    for (int h = 0; h < heads; ++h) {
      for (int j = 0; j < n; ++j) out.last_step[std::size_t(h)][std::size_t(j)] = chosen[std::size_t(h) * n + j] - 1;
      value += schedule_step_mass(*gains[std::size_t(h)], out.last_step[std::size_t(h)]).sum();
    }
    best_bound = std::min(best_bound, column_generation::upper_bound_from(diagonal, n, t, y, token_terms, heads));
    out.value = value;
    out.upper_bound = std::max(value, best_bound);
    out.arcs = simplex.token_arcs() - new_arcs;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options.on_round) options.on_round({round, out.arcs, new_arcs, value, out.upper_bound, seconds});
    const bool optimal = new_arcs == 0 || out.upper_bound <= value;  // no violated arc, or the bound meets it
    const bool close = out.upper_bound - value <= options.relative_gap * out.upper_bound;
    const bool late = options.max_seconds > 0.0 && seconds >= options.max_seconds;
    if (optimal || close || late || round >= options.max_rounds) {
      out.status = optimal ? ScheduleStatus::kOptimal : ScheduleStatus::kFeasible;
      break;
    }
  }
  for (int h = 0; h < heads; ++h) {
    for (int j = 0; j < n; ++j) {
      for (int i = j; i <= out.last_step[std::size_t(h)][std::size_t(j)]; ++i) ++out.occupancy(i, h);
    }
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace subevict::greedy
