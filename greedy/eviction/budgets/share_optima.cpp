#include "greedy/eviction/budgets/share_optima.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/input_error.hpp"
#include "core/number_text.hpp"
#include "core/parallel_units.hpp"
#include "greedy/eviction/budgets/budget_allocation.hpp"
#include "greedy/eviction/budgets/budget_curve.hpp"
#include "greedy/eviction/budgets/budget_curve_csv.hpp"
#include "greedy/eviction/optimum/shared_columns.hpp"
#include "greedy/eviction/optimum/shared_optimum.hpp"
#include "greedy/eviction/process/triangular_gains.hpp"

namespace subevict::greedy {
namespace {

/// The shared optimum is solved on the explicit network where it fits this memory, else on the
/// implicit one where its stored gains do.
constexpr double kSharedOptimumBytes = kExplicitSharedNetworkLimitBytes;
/// Beyond it the implicit network's column generation stops at this relative gap (its value and
/// certified bound both reported).
constexpr double kSharedGap = 1e-4;
/// How far, relative to the larger, one optimum may exceed the next in uniform <= static <= shared
/// bound: rounding of double sums of at most n² attention weights (budget_allocation.hpp's
/// concavity_slack, the curves' own tolerance), far below any difference between two workloads.
constexpr double kOptimaOrderTolerance = 1e-9;

std::string head_text(const std::pair<int, int>& head) {
  return "layer " + std::to_string(head.first) + ", KV head " + std::to_string(head.second);
}

long long unit_total(const std::vector<int>& unit, int k) { return (long long)unit.size() * k; }

/// Records unit u's shared optimum: its value, bound and each head's mean occupancy.
void record_shared(ShareOptima& optima, std::size_t u, const SharedOptimum& s) {
  optima.shared[u] = s.value;
  optima.shared_bound[u] = s.upper_bound;
  optima.shared_slots[u].clear();
  for (int e = 0; e < int(s.occupancy.cols()); ++e) {
    optima.shared_slots[u].push_back(s.occupancy.col(e).cast<double>().mean());
  }
}

/// Every unit's shared optimum on its explicit network, units in parallel as far as their
/// networks fit kSharedOptimumBytes together.
void explicit_shared_optima(ShareOptima& optima, const std::vector<HeadGroup>& groups, const ShareStudy& study,
                            double bytes, const ShareStudyOptions& options, Progress& progress) {
  const auto& units = study.shares.units;
  const int workers = std::max(1, std::min(options.threads, int(kSharedOptimumBytes / std::max(bytes, 1.0))));
  parallel_for((long long)units.size(), workers, [&](long long u) {
    std::vector<Eigen::MatrixXd> gains;
    for (int x : units[std::size_t(u)]) gains.push_back(gain_matrix(groups[std::size_t(x)]));
    const SharedOptimum s = shared_optimum(gains, unit_total(units[std::size_t(u)], study.budget));
    if (s.status != ScheduleStatus::kOptimal) {
      throw std::runtime_error(options.source + ": the shared optimum of " + study.unit_name(std::size_t(u)) +
                               " failed");
    }
    record_shared(optima, std::size_t(u), s);
    progress.advance(1, "(shared optimum of " + study.unit_name(std::size_t(u)) + ", " +
                            significant_digits(s.seconds, 3) + " s)");
  });
}

/// Every unit's shared optimum by column generation on the implicit network, certified to
/// kSharedGap or stopped at options.shared_seconds; one unit at a time, the pricing on every worker.
void implicit_shared_optima(ShareOptima& optima, const std::vector<HeadGroup>& groups, const ShareStudy& study,
                            const ShareStudyOptions& options, Progress& progress) {
  const auto& units = study.shares.units;
  for (std::size_t u = 0; u < units.size(); ++u) {
    std::vector<TriangularGains<double>> stored(units[u].size());
    parallel_for((long long)units[u].size(), options.threads, [&](long long e) {
      stored[std::size_t(e)] = triangular_gain_matrix<double>(groups[std::size_t(units[u][std::size_t(e)])]);
    });
    std::vector<const TriangularGains<double>*> pointers;
    for (const auto& g : stored) pointers.push_back(&g);
    SharedColumnOptions columns;
    columns.relative_gap = kSharedGap;
    columns.max_seconds = options.shared_seconds;
    columns.threads = options.threads;
    columns.on_round = [&](const ImplicitFlowRound& r) {
      progress.advance(0, "(shared optimum of " + study.unit_name(u) + ": round " + std::to_string(r.round) + ", " +
                              std::to_string(r.arcs) + " arcs, relative gap " +
                              significant_digits((r.upper_bound - r.value) / r.upper_bound, 2) + ", " +
                              significant_digits(r.seconds, 3) + " s)");
    };
    const SharedOptimum s = shared_optimum_columns(pointers, unit_total(units[u], study.budget), columns);
    if (s.status == ScheduleStatus::kFailed) {
      throw std::runtime_error(options.source + ": the shared optimum of " + study.unit_name(u) + " failed");
    }
    record_shared(optima, u, s);
    const double gap = (s.upper_bound - s.value) / s.upper_bound;
    optima.shared_note = "in [" + significant_digits(s.value, 9) + ", " + significant_digits(s.upper_bound, 9) +
                         "] (column generation, relative gap " + significant_digits(gap, 2) + " after " +
                         significant_digits(s.seconds, 3) + " s" +
                         (gap > kSharedGap ? ": stopped at " + options.shared_seconds_field : "") +
                         "; ratios against the upper end)";
    progress.advance(1, "(shared optimum of " + study.unit_name(u) + ", " + significant_digits(s.seconds, 3) + " s)");
  }
}

}  // namespace

std::vector<std::vector<double>> read_share_curves(const std::string& file, const std::vector<HeadGroup>& groups,
                                                   const ShareHeads& shares, int k) {
  const auto& heads = shares.heads;
  std::vector<std::vector<double>> curves(heads.size());
  for (const ReadBudgetCurve& c : read_budget_curve_csv(file)) {
    const auto it = std::find(heads.begin(), heads.end(), std::pair{c.layer, c.kv_head});
    if (it == heads.end()) continue;
    if (!c.exact) {
      throw InputError(file, "status", "exact curves (every point optimal)", head_text({c.layer, c.kv_head}));
    }
    const HeadGroup& group = groups[std::size_t(it - heads.begin())];
    check_curve_workload(c, group, file);
    auto& curve = curves[std::size_t(it - heads.begin())];
    curve.clear();
    for (double v : c.lower) curve.push_back(v * group.group_size());
  }
  for (std::size_t x = 0; x < heads.size(); ++x) {
    if (int(curves[x].size()) < k) {
      throw InputError(file, "curves", "every selected head's curve up to k = " + std::to_string(k),
                       head_text(heads[x]) +
                           (curves[x].empty() ? " not in the file" : " to k = " + std::to_string(curves[x].size())));
    }
  }
  return curves;
}

std::vector<std::vector<double>> compute_share_curves(const Workload& w, const ShareHeads& shares, int largest,
                                                      int threads, Progress& progress) {
  std::vector<std::vector<double>> curves(shares.heads.size());
  parallel_for((long long)shares.heads.size(), threads, [&](long long x) {
    const auto [l, h] = shares.heads[std::size_t(x)];
    const BudgetCurve c = optimum_budget_curve(w, l, h, largest, 0.0, {});
    for (const auto& p : c.points) curves[std::size_t(x)].push_back(p.value);
    progress.advance(1, "(curve of layer " + std::to_string(l) + ", KV head " + std::to_string(h) + " to k = " +
                            std::to_string(largest) + ", " + significant_digits(c.seconds, 3) + " s)");
  });
  return curves;
}

ShareOptima share_optima(const std::vector<HeadGroup>& groups, const ShareHeads& shares,
                         const std::vector<std::vector<double>>& curves, const ShareStudy& study,
                         const ShareStudyOptions& options, Progress& progress) {
  const int k = study.budget, n = groups.front().tokens();
  const std::size_t count = shares.heads.size();
  ShareOptima optima;
  optima.uniform.resize(count);
  optima.fixed.resize(count);
  optima.allocation.resize(count);
  optima.curve_length = int(curves.front().size());
  for (std::size_t x = 0; x < count; ++x) {
    optima.curve_length = std::min(optima.curve_length, int(curves[x].size()));
    optima.uniform[x] = curves[x][std::size_t(k) - 1];
  }
  for (const auto& unit : shares.units) {
    std::vector<std::vector<double>> unit_curves;
    for (int x : unit) unit_curves.push_back(curves[std::size_t(x)]);
    const BudgetAllocation a = allocate_budget(unit_curves, unit_total(unit, k), options.source);
    for (std::size_t e = 0; e < unit.size(); ++e) {
      optima.allocation[std::size_t(unit[e])] = a.budgets[e];
      optima.fixed[std::size_t(unit[e])] = unit_curves[e][std::size_t(a.budgets[e]) - 1];
    }
    const int cap = largest_static_budget(n, unit_total(unit, k), (long long)unit.size());
    optima.capped = optima.capped || int(unit_curves.front().size()) < cap;
  }
  const std::size_t units = shares.units.size();
  optima.shared.resize(units);
  optima.shared_bound.resize(units);
  optima.shared_slots.resize(units);
  const double bytes = shared_network_bytes(shares.units.front().size(), n);
  const double triangles = 8.0 * double(shares.units.front().size()) * double(n) * double(n + 1) / 2.0;
  if (bytes <= kSharedOptimumBytes) {
    explicit_shared_optima(optima, groups, study, bytes, options, progress);
  } else if (triangles <= kSharedOptimumBytes) {
    implicit_shared_optima(optima, groups, study, options, progress);
  } else {
    optima.shared_note = "not computed: the stored gains of " + std::to_string(shares.units.front().size()) +
                         " heads at n = " + std::to_string(n) + " need about " +
                         significant_digits(triangles / 1e9, 3) + " GB (limit " +
                         significant_digits(kSharedOptimumBytes / 1e9, 3) + " GB)";
    progress.advance((long long)units, "(shared optimum " + optima.shared_note + ")");
  }
  return optima;
}

void check_share_optima_order(const ShareStudy& study, const ShareStudyOptions& options) {
  const ShareOptima& optima = study.optima;
  const auto fmt = [](double x) { return significant_digits(x, 10); };
  const auto above = [](double a, double b) {
    return a > b + kOptimaOrderTolerance * std::max(std::abs(a), std::abs(b));
  };
  for (std::size_t u = 0; u < study.shares.units.size(); ++u) {
    double uniform = 0.0, fixed = 0.0;
    for (int x : study.shares.units[u]) {
      uniform += optima.uniform[std::size_t(x)];
      fixed += optima.fixed[std::size_t(x)];
    }
    std::string broken;
    if (above(uniform, fixed)) {
      broken = "uniform " + fmt(uniform) + " > static " + fmt(fixed);
    } else if (optima.shared_bound[u] && above(fixed, *optima.shared_bound[u])) {
      broken = "static " + fmt(fixed) + " > shared bound " + fmt(*optima.shared_bound[u]);
    }
    if (broken.empty()) continue;
    const std::string expected = "uniform <= static <= shared bound in " + study.unit_name(u);
    if (!options.curves.empty()) {
      throw InputError(options.curves, "curves", expected + " (the static optimum comes from this file)", broken);
    }
    throw std::runtime_error(options.source + ": the optima break their order: expected " + expected + ", got " +
                             broken);
  }
}

}  // namespace subevict::greedy
