// `subevict simulate --share`: the adaptive budget rules against the uniform, static and shared
// optima of one total budget (cli/share_run.hpp).
//
// Units: a head's retained mass is Σ_i Σ_{query heads} r_i^h, the objective of the optima (the
// curves of budget_curve.csv are per query head and are multiplied back by g). A scope unit is a
// layer (--share layer: the layer's KV heads share H k slots) or the whole model (--share model:
// every selected KV head shares L H k slots).

#include "cli/share_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/csv_field.hpp"
#include "cli/json_output.hpp"
#include "cli/output_directory.hpp"
#include "core/parallel_units.hpp"
#include "core/input_error.hpp"
#include "core/number_text.hpp"
#include "core/progress.hpp"
#include "greedy/eviction/budgets/adaptive_budgets.hpp"
#include "greedy/eviction/budgets/budget_allocation.hpp"
#include "greedy/eviction/budgets/budget_curve.hpp"
#include "greedy/eviction/budgets/budget_curve_csv.hpp"
#include "greedy/eviction/evaluation/shared_simulator.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/optimum/shared_columns.hpp"
#include "greedy/eviction/optimum/shared_optimum.hpp"
#include "greedy/eviction/process/triangular_gains.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"
#include "greedy/eviction/process/head_group.hpp"

namespace subevict::cli {
namespace {

using greedy::ShareRule;

/// The shared optimum is solved on the explicit network where it fits this memory, else on the
/// implicit one where its stored gains do.
constexpr double kSharedOptimumBytes = greedy::kExplicitSharedNetworkLimitBytes;
/// Beyond it the implicit network's column generation stops at this relative gap (its value and
/// certified bound both reported).
constexpr double kSharedGap = 1e-4;
/// How far, relative to the larger, one optimum may exceed the next in uniform <= static <= shared
/// bound: rounding of double sums of at most n² attention weights (budget_allocation.hpp's
/// concavity_slack, the curves' own tolerance), far below any difference between two workloads.
constexpr double kOptimaOrderTolerance = 1e-9;

/// One rule with one scorer: every head's retained mass and the slots it used.
struct RuleRun {
  std::string rule, scorer;
  std::vector<double> mass;        ///< per head, Σ_i Σ_{query heads} r
  std::vector<double> mean_slots;  ///< per head, the mean over steps of its cache size
  std::vector<long long> peak;     ///< per unit, the largest Σ over its heads of cache sizes at a step
  std::string note;                ///< what the rule did (fallbacks, the split)
};

struct Optima {
  std::vector<double> uniform;                  ///< per head, OPT_h(k)
  std::vector<double> fixed;                    ///< per head, OPT_h(k_h*) of the unit's static allocation
  std::vector<int> allocation;                  ///< per head, k_h*
  bool capped = false;                          ///< the curves stop below the largest k_h the unit allows
  int curve_length = 0;                         ///< K of the curves
  std::vector<std::optional<double>> shared;    ///< per unit
  std::vector<std::optional<double>> shared_bound;
  std::vector<std::vector<double>> shared_slots;  ///< per unit, per head of the unit: mean occupancy
  std::string shared_note;
};

std::string fmt(double x) { return significant_digits(x, 10); }

/// Records unit u's shared optimum: its value, bound and each head's mean occupancy.
void record_shared(Optima& optima, std::size_t u, const greedy::SharedOptimum& s) {
  optima.shared[u] = s.value;
  optima.shared_bound[u] = s.upper_bound;
  optima.shared_slots[u].clear();
  for (int e = 0; e < int(s.occupancy.cols()); ++e) {
    optima.shared_slots[u].push_back(s.occupancy.col(e).cast<double>().mean());
  }
}



/// The budgets of a static rule (uniform, pyramidkv, duo) per head, which heads stream (duo), and
/// a note. Duo's split needs each head's streaming loss: without `losses` the first m heads of each
/// unit stand in (the same budgets, so that they can be checked before any work).
struct StaticPlan {
  std::vector<int> budgets;
  std::vector<bool> streaming;
  std::string note;
};

StaticPlan plan_static(const ShareRule& rule, const std::vector<std::pair<int, int>>& heads,
                       const std::vector<std::vector<int>>& units, const Shape& shape, int k,
                       const std::vector<double>* losses) {
  const int count = int(heads.size()), n = shape.tokens;
  StaticPlan plan{std::vector<int>(std::size_t(count), k), std::vector<bool>(std::size_t(count), false), {}};
  if (rule.kind == ShareRule::Kind::kPyramidKv) {
    for (int x = 0; x < count; ++x) {
      plan.budgets[std::size_t(x)] =
          greedy::pyramid_layer_budget(heads[std::size_t(x)].first, shape.layers, k, n, rule.window_size, rule.beta);
    }
    const bool flat = std::all_of(plan.budgets.begin(), plan.budgets.end(), [&](int b) { return b == k; });
    plan.note = flat ? "every layer keeps k (kvpress's fallback: n >= max >= min >= window_size fails)"
                     : "layer budgets " + std::to_string(plan.budgets.front()) + " .. " +
                           std::to_string(plan.budgets.back());
  }
  if (rule.kind == ShareRule::Kind::kDuo) {
    const int slots = rule.sink_size + rule.recent_size;
    int streamed = 0;
    for (const auto& unit : units) {
      std::vector<double> unit_losses;
      for (int x : unit) unit_losses.push_back(losses ? (*losses)[std::size_t(x)] : 0.0);
      const std::vector<bool> s = greedy::streaming_heads(unit_losses, rule.head_compression_ratio);
      const int m = int(std::count(s.begin(), s.end(), true));
      const int full = greedy::full_head_budget((long long)unit.size() * k, int(unit.size()), m, slots, n);
      for (std::size_t e = 0; e < unit.size(); ++e) {
        plan.streaming[std::size_t(unit[e])] = s[e];
        plan.budgets[std::size_t(unit[e])] = s[e] ? std::min(slots, n) : full;
      }
      streamed += m;
    }
    plan.note = std::to_string(streamed) + " of " + std::to_string(count) + " heads stream (" +
                std::to_string(slots) + " slots)";
  }
  return plan;
}

/// What a streaming head of a duo rule runs: its sinks and the recent keys.
greedy::PolicySpec streaming_spec(const ShareRule& rule) {
  return greedy::parse_policy_spec("streamingllm:sinks=" + std::to_string(rule.sink_size), "simulate", "--share-rules",
                                   16);
}

/// Refuses a plan whose budget some head's policy rejects (a pyramid layer of budget 1, a full
/// head below a scorer's window), naming the rule, the head and the budget.
void check_plan(const StaticPlan& plan, const ShareRule& rule, const std::vector<greedy::PolicySpec>& scorers,
                const std::vector<std::pair<int, int>>& heads, int n) {
  for (const auto& scorer : scorers) {
    std::set<std::pair<int, bool>> checked;
    for (std::size_t x = 0; x < heads.size(); ++x) {
      if (!checked.insert({plan.budgets[x], plan.streaming[x]}).second) continue;
      const greedy::PolicySpec spec = plan.streaming[x] ? streaming_spec(rule) : scorer;
      try {
        greedy::check_policy_budget(spec, n, plan.budgets[x], "simulate", "--policies");
      } catch (const InputError& e) {
        throw InputError("simulate", "--share-rules", "budgets that " + spec.label() + " accepts",
                         rule.label() + " gives layer " + std::to_string(heads[x].first) + ", KV head " +
                             std::to_string(heads[x].second) + " k = " + std::to_string(plan.budgets[x]) + " (" +
                             e.what() + ")");
      }
    }
  }
}

/// Refuses to report optima out of their order. In every unit uniform <= static <= shared (the
/// uniform budgets are one static allocation, a static allocation is one shared schedule), and
/// the shared optimum's certified bound is at least the shared optimum: a unit whose uniform
/// optimum exceeds its static one, or whose static one exceeds the shared bound, by more than
/// kOptimaOrderTolerance of the larger, has optima that cannot all be right (curves read with
/// --curves of other tensors, or a defect) and no number of the run is printed or written.
void check_optima_order(const Optima& optima, const std::vector<std::vector<int>>& units,
                        const std::function<std::string(int)>& unit_name, const std::string& curves_file) {
  for (std::size_t u = 0; u < units.size(); ++u) {
    double uniform = 0.0, fixed = 0.0;
    for (int x : units[u]) {
      uniform += optima.uniform[std::size_t(x)];
      fixed += optima.fixed[std::size_t(x)];
    }
    const auto above = [](double a, double b) { return a > b + kOptimaOrderTolerance * std::max(std::abs(a), std::abs(b)); };
    std::string broken;
    if (above(uniform, fixed)) {
      broken = "uniform " + fmt(uniform) + " > static " + fmt(fixed);
    } else if (optima.shared_bound[u] && above(fixed, *optima.shared_bound[u])) {
      broken = "static " + fmt(fixed) + " > shared bound " + fmt(*optima.shared_bound[u]);
    }
    if (broken.empty()) continue;
    const std::string expected = "uniform <= static <= shared bound in " + unit_name(int(u));
    if (!curves_file.empty()) {
      throw InputError(curves_file, "curves", expected + " (the static optimum comes from this file)", broken);
    }
    throw std::runtime_error("simulate --share: the optima break their order: expected " + expected + ", got " + broken);
  }
}

}  // namespace

void run_share(const Workload& w, const std::vector<int>& layers, const ShareRequest& request) {
  const Shape& shape = w.shape();
  const int n = shape.tokens, kv_heads = shape.kv_heads, k = request.budget;
  const std::string source = "simulate";
  for (const auto& spec : request.scorers) {
    if (!greedy::make_policy(spec)->ranks()) {
      throw InputError(source, "--policies", "scorers that rank their members with --share (not " + spec.label() + ")",
                       spec.label());
    }
  }
  for (const ShareRule& rule : request.rules) {
    if (rule.kind == ShareRule::Kind::kPyramidKv && !request.model) {
      throw InputError(source, "--share-rules", "pyramidkv with --share model (it moves budget between layers)",
                       rule.label());
    }
  }
  // Heads layer-major; units are layers or the whole model.
  std::vector<std::pair<int, int>> heads;
  std::vector<std::vector<int>> units;
  for (int l : layers) {
    if (!request.model || units.empty()) units.emplace_back();
    for (int h = 0; h < kv_heads; ++h) {
      units.back().push_back(int(heads.size()));
      heads.emplace_back(l, h);
    }
  }
  const int count = int(heads.size());
  for (const ShareRule& rule : request.rules) {  // every budget checked before any work
    if (rule.kind != ShareRule::Kind::kAdaKv) check_plan(plan_static(rule, heads, units, shape, k, nullptr), rule, request.scorers, heads, n);
  }
  std::vector<greedy::HeadGroup> groups;
  for (const auto& [l, h] : heads) groups.push_back(greedy::head_group(w, l, h));
  const auto unit_total = [&](const std::vector<int>& unit) { return (long long)unit.size() * k; };
  // The largest budget a head may get in its unit's static allocation (the others keep 1 each).
  const auto unit_cap = [&](const std::vector<int>& unit) {
    return greedy::largest_static_budget(n, unit_total(unit), (long long)unit.size());
  };

  const bool computing_curves = request.curves.empty();
  int largest = 1;  // the curves' length
  for (const auto& unit : units) largest = std::max(largest, unit_cap(unit));
  // The curves: OPT_h(k) for k = 1..K, in the optimum's units (Σ over the query heads); those of
  // --curves read, and checked against the heads they are applied to, before any work.
  std::vector<std::vector<double>> curves(static_cast<std::size_t>(count));
  if (!computing_curves) {
    for (const greedy::ReadBudgetCurve& c : greedy::read_budget_curve_csv(request.curves)) {
      const auto it = std::find(heads.begin(), heads.end(), std::pair{c.layer, c.kv_head});
      if (it == heads.end()) continue;
      if (!c.exact) {
        throw InputError(request.curves, "status", "exact curves (every point optimal)",
                         "layer " + std::to_string(c.layer) + ", KV head " + std::to_string(c.kv_head));
      }
      const greedy::HeadGroup& group = groups[std::size_t(it - heads.begin())];
      greedy::check_curve_workload(c, group, request.curves);
      auto& curve = curves[std::size_t(it - heads.begin())];
      curve.clear();
      for (double v : c.lower) curve.push_back(v * group.group_size());
    }
    for (int x = 0; x < count; ++x) {
      if (int(curves[std::size_t(x)].size()) < k) {
        throw InputError(request.curves, "curves", "every selected head's curve up to k = " + std::to_string(k),
                         "layer " + std::to_string(heads[std::size_t(x)].first) + ", KV head " +
                             std::to_string(heads[std::size_t(x)].second) +
                             (curves[std::size_t(x)].empty()
                                  ? " not in the file"
                                  : " to k = " + std::to_string(curves[std::size_t(x)].size())));
      }
    }
  }
  long long work = count /* exact rows */ + (computing_curves ? count : 0) + (request.model ? 1 : (long long)units.size());
  for (const ShareRule& rule : request.rules) {
    work += (long long)request.scorers.size() * (rule.kind == ShareRule::Kind::kAdaKv ? (long long)units.size() : count);
  }
  Progress progress("simulate --share", work, "units (heads, curves, solves, runs)", request.quiet);

  // The exact rows, once per head.
  std::vector<std::vector<ExactRows>> exact(static_cast<std::size_t>(count));
  parallel_for(count, request.threads, [&](int x) {
    exact[std::size_t(x)] = greedy::group_exact_rows(groups[std::size_t(x)]);
    progress.advance(1, "(exact rows of layer " + std::to_string(heads[std::size_t(x)].first) + ", KV head " +
                            std::to_string(heads[std::size_t(x)].second) + ")");
  });

  // The curves computed, where none were read.
  if (computing_curves) {
    parallel_for(count, request.threads, [&](int x) {
      const auto [l, h] = heads[std::size_t(x)];
      const greedy::BudgetCurve c = greedy::optimum_budget_curve(w, l, h, largest, 0.0, {});
      for (const auto& p : c.points) curves[std::size_t(x)].push_back(p.value);
      progress.advance(1, "(curve of layer " + std::to_string(l) + ", KV head " + std::to_string(h) + " to k = " +
                              std::to_string(largest) + ", " + significant_digits(c.seconds, 3) + " s)");
    });
  }
  Optima optima;
  optima.uniform.resize(std::size_t(count));
  optima.fixed.resize(std::size_t(count));
  optima.allocation.resize(std::size_t(count));
  optima.curve_length = int(curves.front().size());
  for (int x = 0; x < count; ++x) {
    optima.curve_length = std::min(optima.curve_length, int(curves[std::size_t(x)].size()));
    optima.uniform[std::size_t(x)] = curves[std::size_t(x)][std::size_t(k) - 1];
  }
  for (const auto& unit : units) {
    std::vector<std::vector<double>> unit_curves;
    for (int x : unit) unit_curves.push_back(curves[std::size_t(x)]);
    const greedy::BudgetAllocation a = greedy::allocate_budget(unit_curves, unit_total(unit), source);
    for (std::size_t e = 0; e < unit.size(); ++e) {
      optima.allocation[std::size_t(unit[e])] = a.budgets[e];
      optima.fixed[std::size_t(unit[e])] = unit_curves[e][std::size_t(a.budgets[e]) - 1];
    }
    optima.capped = optima.capped || int(unit_curves.front().size()) < unit_cap(unit);
  }

  // The shared optimum per unit: the explicit network where it fits, else the column generation.
  const auto unit_name = [&](int u) {
    return request.model ? std::string("the model")
                         : "layer " + std::to_string(heads[std::size_t(units[std::size_t(u)].front())].first);
  };
  optima.shared.resize(units.size());
  optima.shared_bound.resize(units.size());
  optima.shared_slots.resize(units.size());
  {
    const double bytes = greedy::shared_network_bytes(units.front().size(), n);
    const double triangles = 8.0 * double(units.front().size()) * double(n) * double(n + 1) / 2.0;
    if (bytes <= kSharedOptimumBytes) {
      // Units in parallel only where their explicit networks fit the limit together.
      const int workers = std::max(1, std::min(request.threads, int(kSharedOptimumBytes / std::max(bytes, 1.0))));
      parallel_for(int(units.size()), workers, [&](int u) {
        std::vector<Eigen::MatrixXd> gains;
        for (int x : units[std::size_t(u)]) gains.push_back(greedy::gain_matrix(groups[std::size_t(x)]));
        const greedy::SharedOptimum s = greedy::shared_optimum(gains, unit_total(units[std::size_t(u)]));
        if (s.status != greedy::ScheduleStatus::kOptimal) {
          throw std::runtime_error("simulate --share: the shared optimum of unit " + std::to_string(u) + " failed");
        }
        record_shared(optima, std::size_t(u), s);
        progress.advance(1, "(shared optimum of " + unit_name(u) + ", " + significant_digits(s.seconds, 3) + " s)");
      });
    } else if (triangles <= kSharedOptimumBytes) {
      // The implicit network (column generation), certified to kSharedGap; one unit at a time,
      // the pricing on every worker.
      for (std::size_t u = 0; u < units.size(); ++u) {
        std::vector<greedy::TriangularGains<double>> stored(units[u].size());
        parallel_for(int(units[u].size()), request.threads, [&](int e) {
          stored[std::size_t(e)] = greedy::triangular_gain_matrix<double>(groups[std::size_t(units[u][std::size_t(e)])]);
        });
        std::vector<const greedy::TriangularGains<double>*> pointers;
        for (const auto& g : stored) pointers.push_back(&g);
        greedy::SharedColumnOptions options;
        options.relative_gap = kSharedGap;
        options.max_seconds = request.shared_seconds;
        options.threads = request.threads;
        options.on_round = [&](const greedy::ImplicitFlowRound& r) {
          progress.advance(0, "(shared optimum of " + unit_name(int(u)) + ": round " + std::to_string(r.round) + ", " +
                                  std::to_string(r.arcs) + " arcs, relative gap " +
                                  significant_digits((r.upper_bound - r.value) / r.upper_bound, 2) + ", " +
                                  significant_digits(r.seconds, 3) + " s)");
        };
        const greedy::SharedOptimum s = greedy::shared_optimum_columns(pointers, unit_total(units[u]), options);
        if (s.status == greedy::ScheduleStatus::kFailed) {
          throw std::runtime_error("simulate --share: the shared optimum of unit " + std::to_string(u) + " failed");
        }
        record_shared(optima, u, s);
        const double gap = (s.upper_bound - s.value) / s.upper_bound;
        optima.shared_note = "in [" + significant_digits(s.value, 9) + ", " + significant_digits(s.upper_bound, 9) +
                             "] (column generation, relative gap " + significant_digits(gap, 2) + " after " +
                             significant_digits(s.seconds, 3) + " s" +
                             (gap > kSharedGap ? ": stopped at --shared-seconds" : "") +
                             "; ratios against the upper end)";
        progress.advance(1, "(shared optimum of " + unit_name(int(u)) + ", " + significant_digits(s.seconds, 3) + " s)");
      }
    } else {
      optima.shared_note = "not computed: the stored gains of " + std::to_string(units.front().size()) +
                           " heads at n = " + std::to_string(n) + " need about " +
                           significant_digits(triangles / 1e9, 3) + " GB (limit " +
                           significant_digits(kSharedOptimumBytes / 1e9, 3) + " GB)";
      progress.advance((long long)units.size(), "(shared optimum " + optima.shared_note + ")");
    }
  }

  check_optima_order(optima, units, unit_name, request.curves);

  // The rules.
  std::vector<RuleRun> runs;
  for (const ShareRule& rule : request.rules) {
    StaticPlan plan;
    if (rule.kind == ShareRule::Kind::kDuo) {
      std::vector<double> losses(static_cast<std::size_t>(count));
      const int calibration = std::min(rule.calibration, n);
      parallel_for(count, request.threads, [&](int x) {
        losses[std::size_t(x)] = greedy::streaming_loss(groups[std::size_t(x)], rule.sink_size, rule.recent_size, calibration);
      });
      plan = plan_static(rule, heads, units, shape, k, &losses);
    } else {
      plan = plan_static(rule, heads, units, shape, k, nullptr);
    }
    const std::vector<int>& budgets = plan.budgets;
    const std::vector<bool>& streaming = plan.streaming;
    const std::string& note = plan.note;
    for (const auto& scorer : request.scorers) {
      RuleRun run{rule.label(), scorer.label(), std::vector<double>(std::size_t(count)),
                  std::vector<double>(std::size_t(count)), std::vector<long long>(units.size(), 0), note};
      if (rule.kind == ShareRule::Kind::kAdaKv) {
        const int floor = int(std::floor(rule.alpha_safeguard * k));
        for (std::size_t u = 0; u < units.size(); ++u) {
          std::vector<greedy::HeadGroup> unit_groups;
          std::vector<const std::vector<ExactRows>*> unit_exact;  // the rows computed above, not copied
          std::vector<std::unique_ptr<greedy::EvictionPolicy>> owned;
          std::vector<greedy::EvictionPolicy*> policies;
          for (int x : units[u]) {
            unit_groups.push_back(groups[std::size_t(x)]);
            unit_exact.push_back(&exact[std::size_t(x)]);
            owned.push_back(greedy::make_policy(scorer));
            policies.push_back(owned.back().get());
          }
          greedy::SharedSimulationOptions options;
          options.budget = k;
          options.floor = floor;
          options.seed = request.seed;
          options.threads = request.threads;
          const greedy::SharedRun shared = greedy::simulate_shared(unit_groups, policies, options, unit_exact);
          for (std::size_t e = 0; e < units[u].size(); ++e) {
            run.mass[std::size_t(units[u][e])] = shared.traces[e].total_retained_mass();
            run.mean_slots[std::size_t(units[u][e])] = shared.occupancy.col(int(e)).cast<double>().mean();
          }
          run.peak[u] = shared.occupancy.rowwise().sum().maxCoeff();
          progress.advance(1, "(" + run.rule + " with " + run.scorer + ", unit " + std::to_string(u) + ", " +
                                  significant_digits(shared.seconds, 3) + " s)");
        }
        run.note = "floor " + std::to_string(floor) + " per head";
      } else {
        parallel_for(count, request.threads, [&](int x) {
          const greedy::PolicySpec spec = streaming[std::size_t(x)] ? streaming_spec(rule) : scorer;
          greedy::SimulationOptions options;
          options.budget = budgets[std::size_t(x)];
          options.seed = request.seed;
          auto policy = greedy::make_policy(spec);
          const greedy::Trace t = greedy::simulate(groups[std::size_t(x)], *policy, options, exact[std::size_t(x)]);
          run.mass[std::size_t(x)] = t.total_retained_mass();
          double slots = 0.0;
          // A static budget fills after k steps and stays full: the mean size over the steps.
          for (int i = 0; i < n; ++i) slots += std::min(i + 1, t.budget);
          run.mean_slots[std::size_t(x)] = slots / n;
          progress.advance(1);
        });
        for (std::size_t u = 0; u < units.size(); ++u) {
          for (int x : units[u]) run.peak[u] += std::min(n, budgets[std::size_t(x)]);
        }
      }
      runs.push_back(std::move(run));
    }
  }

  // Outputs: per unit and per layer, the ratios; the JSON with the allocations.
  std::map<std::string, std::string> files;
  std::string csv = "unit,rule,scorer,retained,uniform_opt,static_opt,shared_opt,shared_bound,slots,total,over_uniform,over_static,over_shared\n";
  nlohmann::json doc;
  doc["scope"] = request.model ? "model" : "layer";
  doc["budget"] = k;
  doc["tokens"] = n;
  doc["curve_length"] = optima.curve_length;
  doc["static_capped"] = optima.capped;
  doc["shared_note"] = optima.shared_note;
  const auto sum = [&](const std::vector<double>& v, const std::vector<int>& idx) {
    double s = 0.0;
    for (int x : idx) s += v[std::size_t(x)];
    return s;
  };
  // Rows: each unit, and with the model scope each layer too (its part of the model's numbers).
  struct Row {
    std::string name;
    std::vector<int> heads;
    std::optional<double> shared, bound;
    std::vector<std::size_t> units;  ///< the whole units the row covers (none: a layer within the model)
  };
  std::vector<Row> rows;
  for (std::size_t u = 0; u < units.size(); ++u) {
    rows.push_back({request.model ? "model" : "layer " + std::to_string(heads[std::size_t(units[u].front())].first),
                    units[u], optima.shared[u], optima.shared_bound[u], {u}});
  }
  if (request.model && layers.size() > 1) {
    for (int l : layers) {
      Row r{"layer " + std::to_string(l), {}, std::nullopt, std::nullopt, {}};
      for (int x = 0; x < count; ++x) {
        if (heads[std::size_t(x)].first == l) r.heads.push_back(x);
      }
      rows.push_back(std::move(r));
    }
  }
  if (!request.model && units.size() > 1) {  // the sum over the layers
    Row all{"all layers", {}, 0.0, 0.0, {}};
    for (int x = 0; x < count; ++x) all.heads.push_back(x);
    for (std::size_t u = 0; u < units.size(); ++u) {
      all.units.push_back(u);
      const auto& s = optima.shared[u];
      const auto& b = optima.shared_bound[u];
      all.shared = all.shared && s ? std::optional<double>(*all.shared + *s) : std::nullopt;
      all.bound = all.bound && b ? std::optional<double>(*all.bound + *b) : std::nullopt;
    }
    rows.push_back(std::move(all));
  }
  // Ratios against the shared optimum are taken against its certified upper bound (its value where
  // it is exact, within rounding): they can only be understated.
  const auto ratio = [](double a, std::optional<double> b) { return b && *b > 0 ? fmt(a / *b) : std::string(); };
  for (const RuleRun& run : runs) {
    nlohmann::json entry{{"rule", run.rule}, {"scorer", run.scorer}, {"note", run.note}, {"units", nlohmann::json::array()}};
    for (const Row& row : rows) {
      const double mass = sum(run.mass, row.heads), uniform = sum(optima.uniform, row.heads),
                   fixed = sum(optima.fixed, row.heads);
      // Slots: the peak over steps of the cache the row's units hold; a layer within the model
      // reports its mean occupancy instead (the model's peak is not a layer's).
      long long slots = 0;
      for (std::size_t u : row.units) slots += run.peak[u];
      if (row.units.empty()) {
        double mean = 0.0;
        for (int x : row.heads) mean += run.mean_slots[std::size_t(x)];
        slots = (long long)std::llround(mean);
      }
      csv += csv_field(row.name) + "," + csv_field(run.rule) + "," + csv_field(run.scorer) + "," + fmt(mass) + "," + fmt(uniform) + "," +
             fmt(fixed) + "," + (row.shared ? fmt(*row.shared) : "") + "," + (row.bound ? fmt(*row.bound) : "") + "," + std::to_string(slots) + "," +
             std::to_string((long long)row.heads.size() * k) + "," + ratio(mass, uniform) + "," + ratio(mass, fixed) +
             "," + ratio(mass, row.bound) + "\n";
      entry["units"].push_back({{"unit", row.name},
                                {"retained", mass},
                                {"uniform_opt", uniform},
                                {"static_opt", fixed},
                                {"shared_opt", row.shared ? nlohmann::json(*row.shared) : nlohmann::json(nullptr)},
                                {"shared_bound", row.bound ? nlohmann::json(*row.bound) : nlohmann::json(nullptr)},
                                {"slots", slots}});
    }
    nlohmann::json per_head = nlohmann::json::array();
    for (int x = 0; x < count; ++x) {
      per_head.push_back({{"layer", heads[std::size_t(x)].first},
                          {"kv_head", heads[std::size_t(x)].second},
                          {"retained", run.mass[std::size_t(x)]},
                          {"mean_slots", run.mean_slots[std::size_t(x)]}});
    }
    entry["heads"] = per_head;
    doc["runs"].push_back(entry);
  }
  nlohmann::json optimum_heads = nlohmann::json::array();
  for (int x = 0; x < count; ++x) {
    optimum_heads.push_back({{"layer", heads[std::size_t(x)].first},
                             {"kv_head", heads[std::size_t(x)].second},
                             {"uniform_opt", optima.uniform[std::size_t(x)]},
                             {"static_budget", optima.allocation[std::size_t(x)]},
                             {"static_opt", optima.fixed[std::size_t(x)]}});
  }
  for (std::size_t u = 0; u < units.size(); ++u) {
    for (std::size_t e = 0; e < optima.shared_slots[u].size(); ++e) {
      optimum_heads[std::size_t(units[u][e])]["shared_mean_slots"] = optima.shared_slots[u][e];
    }
  }
  doc["optimum_heads"] = optimum_heads;
  files["share.csv"] = csv;
  files["results.json"] = doc.dump(2) + "\n";
  const std::string written = publish_directory(request.output, files, false);
  if (!request.json.empty()) write_json(request.json, doc);

  // The totals.
  std::cout << "simulate --share " << (request.model ? "model" : "layer") << ": " << to_string(shape) << "; layers "
            << layers.size() << " x " << kv_heads << " KV heads, k = " << k << " per head ("
            << request.budget_text << "), " << (request.model ? "one cache of " + std::to_string((long long)count * k)
                                                               : std::to_string((long long)kv_heads * k) + " slots per layer")
            << "\n";
  const Row& total = rows.size() > units.size() && !request.model ? rows.back() : rows.front();
  const double uniform = sum(optima.uniform, total.heads), fixed = sum(optima.fixed, total.heads);
  std::printf("  optima: uniform %.6g, static %.6g (+%.3f%%)%s, shared %s\n", uniform, fixed,
              100.0 * (fixed / uniform - 1.0),
              optima.capped ? (" [k_h <= " + std::to_string(optima.curve_length) + ": a lower bound]").c_str() : "",
              total.shared ? (significant_digits(*total.shared, 7) + " (+" +
                              significant_digits(100.0 * (*total.shared / fixed - 1.0), 3) + "% over static" +
                              (optima.shared_note.empty() ? ")" : "; " + optima.shared_note + ")"))
                                 .c_str()
                           : optima.shared_note.c_str());
  std::printf("  %-34s %-22s %12s %12s %12s\n", "rule", "scorer", "/uniform OPT", "/static OPT", "/shared OPT");
  for (const RuleRun& run : runs) {
    const double mass = sum(run.mass, total.heads);
    std::printf("  %-34s %-22s %12s %12s %12s  %s\n", run.rule.c_str(), run.scorer.c_str(),
                ratio(mass, uniform).c_str(), ratio(mass, fixed).c_str(), ratio(mass, total.bound).c_str(),
                run.note.c_str());
  }
  std::cout << "wrote " << written << "\n";
}

}  // namespace subevict::cli
