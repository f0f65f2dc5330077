// `subevict simulate`: eviction policies on every selected (layer, KV head) of a workload against
// the exact offline optimum and the per-step oracle (theory.md §§2, 5), as CSV, JSON and plots.
//
// Units: every mass is the mean over the g query heads of a KV head (so a step contributes at
// most 1 and a run at most n); the optimum and the oracle are computed on the group's summed
// attention and divided by g. Budgets: a value in (0, 1) is a ratio of the sequence length n
// (k = max(1, round(ratio n))); a value >= 1 must be an integer and is an absolute size.

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "cli/csv_field.hpp"
#include "cli/json_output.hpp"
#include "cli/output_directory.hpp"
#include "core/parallel_units.hpp"
#include "cli/share_run.hpp"
#include "core/atomic_file.hpp"
#include "core/generator.hpp"
#include "core/index_set.hpp"
#include "core/input_error.hpp"
#include "core/npy.hpp"
#include "core/number_text.hpp"
#include "core/plot.hpp"
#include "core/progress.hpp"
#include "core/workload_io.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"
#include "greedy/eviction/budgets/budget_curve.hpp"
#include "greedy/eviction/budgets/budget_curve_csv.hpp"
#include "greedy/eviction/evaluation/head_evaluation.hpp"
#include "greedy/eviction/evaluation/recorded_decisions.hpp"
#include "greedy/eviction/process/schedule_overlap.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/policies/lookahead.hpp"
#include "greedy/eviction/optimum/offline_optimum.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/optimum/step_oracle.hpp"
#include "kernels/batched_simulation.hpp"
#include "kernels/generate.hpp"
#include "sweep/report.hpp"

namespace subevict::cli {
namespace {

namespace fs = std::filesystem;
using greedy::Trace;

struct SimulateArgs {
  std::string preset;
  std::string workload;
  int tokens = 0;
  std::string layers = "0";  // a layer set (core/index_set.hpp)
  std::string heads = "all";  // a KV head set
  std::string budget = "0.2";  // as typed, so that an error names it
  std::string budgets;
  std::string policies = "h2o,local,streamingllm,l2norm,tova,random";
  std::string optimum = "flow";
  double gap = 1e-4;     // --optimum certified: the relative gap at which each budget stops
  int budget_curve = 0;  // > 0: OPT(k) for every k = 1..K per head
  std::uint64_t seed = 0;
  int horizon = 16;
  int threads = 0;
  std::string output;
  std::string json;
  bool no_plots = false;
  bool quiet = false;
  bool allow_nonfinite = false;
  bool list_policies = false;
  std::string backend;  // empty: the fastest available
  std::vector<std::string> decisions;  // recorded schedules (docs/eviction.md "Recorded decisions")
  bool decisions_to_process = false;
  bool schedules = false;
  std::string share;        // "", "layer" or "model": adaptive budget rules (cli/share_run.hpp)
  std::string share_rules;  // empty: the scope's default rules
  std::string curves;       // a budget_curve.csv for --share's static optimum
  double shared_seconds = 600.0;  // --share: the column generation's time limit
};

/// The recorded schedules of --decisions, evaluated at the main budget only.
struct RecordedInputs {
  std::vector<greedy::DecisionsFile> files;
  std::vector<std::string> labels;  // "recorded:STEM", distinct
  double budget = 0.0;              // the main budget value
  greedy::ScheduleAdmission admission = greedy::ScheduleAdmission::kExact;
};

/// Batched traces of the five batched policies by (policy, budget value), on a non-reference backend.
using BatchedRuns = std::map<std::pair<std::string, double>, kernels::BatchedSimulation>;

/// One (layer, KV head, budget) cell: every policy's trace, the optimum and the oracle.
struct Cell : greedy::HeadEvaluation {
  double budget_value = 0.0;  // as given
  /// Per trace, its overlap with the optimum's schedule (--schedules with the optimum; else empty).
  std::vector<greedy::ScheduleOverlap> overlaps;
  /// Recorded traces that --decisions-to-process changed: label -> tokens whose t_j changed.
  std::map<std::string, int> converted;
  /// Wall seconds of the cell's (layer, KV head), all budgets and the budget curve together.
  double head_seconds = 0.0;
};

greedy::Budget to_budget(double v) { return greedy::budget_from_value(v, "simulate"); }

std::string fmt(double x) { return significant_digits(x, 10); }

/// Refuses what needs the stored gains for heads beyond greedy::kStoredGainsTokens, where the
/// optimum streams them (docs/offline_optimum.md "Streamed gains"), naming the flag and why.
void check_stored_gains_limit(const SimulateArgs& args, greedy::OptimumMode optimum, int tokens) {
  if (tokens <= greedy::kStoredGainsTokens) return;
  const std::string limit = std::to_string(greedy::kStoredGainsTokens), got = std::to_string(tokens) + " tokens";
  if (optimum == greedy::OptimumMode::kOracle) {
    throw InputError("simulate", "--optimum",
                     "flow, certified or none beyond " + limit + " tokens (the oracle sorts rows of the stored gains)",
                     "oracle at " + got);
  }
  if (args.budget_curve > 0) {
    throw InputError("simulate", "--budget-curve", "at most " + limit + " tokens (the curve prices the stored gains)",
                     got);
  }
}

/// Runs the selected heads on `threads` workers, one head at a time per worker, every budget of a
/// head in one evaluation (its optimum from one implicit_flow_optima call, or streamed_flow_optima
/// beyond greedy::kStoredGainsTokens); cells in the order
/// (head, budget). With --budget-curve K, also each head's OPT(k) for k = 1..K into `curves`.
std::vector<Cell> run_cells(const Workload& w, const std::vector<std::pair<int, int>>& heads,
                            const std::vector<double>& budgets, const std::vector<greedy::PolicySpec>& specs,
                            const SimulateArgs& args, const BatchedRuns& batched, const RecordedInputs& recorded,
                            std::vector<greedy::BudgetCurve>& curves) {
  const int n = w.shape().tokens;
  std::vector<Cell> cells(heads.size() * budgets.size());
  curves.assign(args.budget_curve > 0 ? heads.size() : 0, greedy::BudgetCurve{});
  std::vector<int> sizes;  // k per budget value
  for (double b : budgets) sizes.push_back(to_budget(b).resolve(n, 0));
  std::vector<greedy::PolicySpec> rest;  // the policies the reference simulator runs (batched: all budgets or none)
  for (const auto& spec : specs) {
    if (!batched.count({spec.label(), budgets.front()})) rest.push_back(spec);
  }
  greedy::HeadEvaluationOptions options;
  options.seed = args.seed;
  options.horizon = args.horizon;
  options.optimum = greedy::parse_optimum_mode(args.optimum, "simulate");
  options.relative_gap = args.gap;
  // Fewer heads than workers: each head's streamed passes take the idle ones.
  options.threads = std::max(1, std::max(1, args.threads) / std::max(1, int(heads.size())));
  // With a budget curve a unit is a group or one curve point, reported in chunks of K/16 points,
  // so that a long curve on one head shows it is alive.
  const long long curve = args.budget_curve;
  const long long curve_chunk = std::max(1LL, curve / 16);
  Progress progress("simulate", (long long)heads.size() * (1 + curve),
                    curve > 0 ? "units (head groups and curve points)" : "(layer, KV head) groups",
                    args.quiet);
  parallel_for(int(heads.size()), std::max(1, args.threads), [&](int h) {
    const auto start = std::chrono::steady_clock::now();
    const auto [layer, kv] = heads[std::size_t(h)];
    greedy::HeadEvaluationOptions head_options = options;
    if (w.shape().tokens > options.stored_gains_tokens) {  // streamed gains: a round takes minutes
      head_options.on_progress = [&, layer = layer, kv = kv](const std::string& what) {
        progress.advance(0, "(layer " + std::to_string(layer) + ", KV head " + std::to_string(kv) + ": " + what + ")");
      };
      head_options.on_optimum_round = [&, layer = layer, kv = kv](const greedy::ImplicitFlowRound& r) {
        progress.advance(0, "(layer " + std::to_string(layer) + ", KV head " + std::to_string(kv) +
                                ": optimum round " + std::to_string(r.round) + ", relative gap " +
                                significant_digits((r.upper_bound - r.value) / r.upper_bound, 2) + ", " +
                                significant_digits(r.seconds, 3) + " s)");
      };
    }
    std::vector<greedy::HeadEvaluation> evaluations =
        greedy::evaluate_head_budgets(w, layer, kv, rest, sizes, head_options);
    for (std::size_t b = 0; b < budgets.size(); ++b) {
      Cell& cell = cells[std::size_t(h) * budgets.size() + b];
      cell.budget_value = budgets[b];
      static_cast<greedy::HeadEvaluation&>(cell) = std::move(evaluations[b]);
      std::vector<Trace> ordered;
      std::size_t from_rest = 0;
      for (const auto& spec : specs) {
        const auto it = batched.find({spec.label(), cell.budget_value});
        if (it != batched.end()) {
          ordered.push_back(it->second.trace(layer, kv));
          ordered.back().policy = spec.label();
        } else {
          ordered.push_back(std::move(cell.traces[from_rest++]));
        }
      }
      cell.traces = std::move(ordered);
      if (cell.budget_value == recorded.budget) {
        greedy::SimulationOptions sim;
        sim.budget = sizes[b];
        sim.seed = args.seed;
        for (std::size_t f = 0; f < recorded.files.size(); ++f) {
          greedy::RecordedRun run = greedy::simulate_recorded(w, layer, kv, recorded.files[f],
                                                              recorded.labels[f], sim, recorded.admission);
          if (run.admitted.converted) cell.converted[recorded.labels[f]] = run.admitted.changed_tokens;
          cell.traces.push_back(std::move(run.trace));
        }
      }
      if (args.schedules && cell.has_optimum) {
        const greedy::HeadGroup group = greedy::head_group(w, layer, kv);
        for (const Trace& t : cell.traces) {  // streamed gains: no dense n x n matrix at any length
          cell.overlaps.push_back(greedy::schedule_overlap(group, t.last_step(), cell.optimum.last_step));
        }
      }
    }
    if (args.budget_curve > 0) {
      long long reported = 0;
      const auto report = [&](int done) {
        if (done - reported < curve_chunk && done < curve) return;
        progress.advance(done - reported, "(layer " + std::to_string(layer) + ", KV head " + std::to_string(kv) +
                                              ": curve to k = " + std::to_string(done) + ")");
        reported = done;
      };
      curves[std::size_t(h)] = greedy::optimum_budget_curve(w, layer, kv, args.budget_curve,
                                               options.optimum == greedy::OptimumMode::kCertified ? args.gap : 0.0,
                                               report, options.threads);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (std::size_t b = 0; b < budgets.size(); ++b) cells[std::size_t(h) * budgets.size() + b].head_seconds = seconds;
    progress.advance(1, "(layer " + std::to_string(layer) + ", KV head " + std::to_string(kv) + ", " +
                            significant_digits(seconds, 3) + " s)");
  });
  return cells;
}

/// The files of one run, by name, and the JSON document.
struct Outputs {
  std::map<std::string, std::string> files;
  nlohmann::json doc;
};

/// Mean retained mass per (series, budget value): the sum over head groups and their count.
using Aggregate = std::map<std::pair<std::string, double>, std::pair<double, int>>;

/// "0.2 n" for a ratio, "k = 64" for a size.
std::string budget_text(double b) { return b < 1.0 ? fmt(b) + " n" : "k = " + fmt(b); }

/// Per (series, k) of --budget-curve: the mean over heads of OPT(k) / n (series "OPT" where every
/// head's point is exact, else "OPT_lower" and "OPT_upper" from the certified intervals), and the
/// CSV of every head's points.
std::pair<Aggregate, std::string> budget_curve_outputs(const std::vector<greedy::BudgetCurve>& curves) {
  Aggregate mean;
  std::map<int, bool> exact;  // k -> every head optimal
  for (const greedy::BudgetCurve& c : curves) {
    const double g = c.heads, n = c.tokens;
    for (const greedy::BudgetCurvePoint& p : c.points) {
      auto& lower = mean[{"OPT_lower", double(p.budget)}];
      lower.first += p.value / g / n;
      lower.second += 1;
      auto& upper = mean[{"OPT_upper", double(p.budget)}];
      upper.first += p.upper_bound / g / n;
      upper.second += 1;
      const auto [it, fresh] = exact.emplace(p.budget, true);
      it->second = it->second && p.status == greedy::ScheduleStatus::kOptimal;
    }
  }
  if (!curves.empty() && std::all_of(exact.begin(), exact.end(), [](const auto& e) { return e.second; })) {
    Aggregate opt;
    for (const auto& [key, value] : mean) {
      if (key.first == "OPT_lower") opt[{"OPT", key.second}] = value;
    }
    mean = std::move(opt);
  }
  return {mean, greedy::budget_curve_csv(curves)};
}

/// The figures: retained mass per step at the main budget (a centred running mean over n / 32
/// steps of the mean over head groups), retained mass against the budget, and the gap to the
/// optimum per policy at the main budget (when OPT was computed).
std::vector<plot::Figure> figures(const std::vector<Cell>& cells, const std::vector<std::string>& names,
                                  double main_budget, int tokens, const Aggregate& aggregate,
                                  const Aggregate& curve_points) {
  std::map<std::string, std::vector<double>> per_step;  // summed over the head groups at the main budget
  int groups = 0;
  for (const Cell& c : cells) {
    if (c.budget_value != main_budget) continue;
    ++groups;
    auto add = [&](const std::string& name, int i, double v) {
      auto& vec = per_step[name];
      vec.resize(std::size_t(c.tokens), 0.0);
      vec[std::size_t(i)] += v;
    };
    for (const Trace& t : c.traces)
      for (const auto& s : t.steps) add(t.policy, s.step, s.retained_mass);
    for (int i = 0; c.has_optimum && i < c.tokens; ++i) add("OPT", i, c.optimum.step_mass[i] / c.heads);
  }
  const std::string scope = "mean over " + std::to_string(std::max(1, groups)) + " (layer, KV head) group" +
                            (groups == 1 ? "" : "s");
  const int window = std::max(1, tokens / 32);
  plot::Figure steps{"retained_per_step",
                     "Retained attention mass per step at budget " + budget_text(main_budget) + " (" + scope +
                         (window > 1 ? ", running mean over " + std::to_string(window) + " steps)" : ")"),
                     "decoding step i (token position)", "retained attention mass (fraction per step)",
                     plot::XAxis::linear, false, {}, "step", {}};
  std::vector<std::string> order = names;
  order.push_back("OPT");
  for (const std::string& name : order) {
    const auto it = per_step.find(name);
    if (it == per_step.end()) continue;
    const std::vector<double>& sum = it->second;
    plot::Series s{name == "OPT" ? "OPT (offline optimum)" : name, {}, {},
                   name == "OPT" ? plot::Mark::bound : plot::Mark::lines, name};
    for (std::size_t i = 0; i < sum.size(); ++i) {
      const std::size_t lo = i >= std::size_t(window / 2) ? i - std::size_t(window / 2) : 0;
      const std::size_t hi = std::min(sum.size(), lo + std::size_t(window));
      double mean = 0.0;
      for (std::size_t j = lo; j < hi; ++j) mean += sum[j];
      s.x.push_back(double(i));
      s.y.push_back(mean / double(hi - lo) / double(std::max(1, groups)));
    }
    steps.series.push_back(std::move(s));
  }
  std::vector<plot::Figure> out;
  if (!steps.series.empty()) out.push_back(std::move(steps));

  std::map<std::string, std::map<double, double>> curves;
  for (const auto& [key, value] : aggregate) {
    const double x = key.second < 1.0 ? key.second : key.second / double(tokens);
    curves[key.first].emplace(x, value.first / value.second);  // a size equal to a ratio: the first
  }
  for (const auto& [key, value] : curve_points) {  // --budget-curve: OPT at every k = 1..K
    curves[key.first].emplace(key.second / double(tokens), value.first / value.second);
  }
  out.push_back(sweep::budget_curve_figure(curves, names, scope));

  const auto opt = aggregate.find({"OPT", main_budget});
  if (opt != aggregate.end()) {
    plot::Figure gap{"gap_to_optimum",
                     "Gap to the offline optimum at budget " + budget_text(main_budget) + " (" + scope + ")",
                     "policy", "OPT - policy (retained mass, fraction per step)", plot::XAxis::categorical,
                     false, {}, "policy", {}};
    plot::Series bars{"OPT - policy", {}, {}, plot::Mark::bars, "gap_to_optimum"};
    for (const std::string& name : names) {
      const auto it = aggregate.find({name, main_budget});
      if (it == aggregate.end()) continue;
      bars.x.push_back(double(gap.categories.size()));
      bars.y.push_back(opt->second.first / opt->second.second - it->second.first / it->second.second);
      gap.categories.push_back(name);
    }
    gap.series.push_back(std::move(bars));
    if (!gap.categories.empty()) out.push_back(std::move(gap));
  }
  return out;
}

Outputs build_outputs(const std::vector<Cell>& cells, const std::vector<greedy::BudgetCurve>& curves,
                      const std::vector<greedy::PolicySpec>& specs, const std::vector<double>& budgets,
                      double main_budget, const Workload& w, const std::vector<int>& layers,
                      const std::vector<int>& kv_heads, const SimulateArgs& args) {
  std::vector<std::string> names;
  nlohmann::json parameters = nlohmann::json::object();
  for (const auto& spec : specs) {
    names.push_back(spec.label());
    nlohmann::json values = nlohmann::json::object();
    for (const auto& [key, text] : greedy::effective_parameters(spec)) {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      values[key] = end == text.c_str() + text.size() && !text.empty() ? nlohmann::json(v) : nlohmann::json(text);
    }
    parameters[spec.label()] = {{"name", spec.name}, {"parameters", values}};
  }
  for (const std::string& file : args.decisions) {
    names.push_back(greedy::decisions_label(file));
    parameters[names.back()] = {{"name", "recorded"},
                                {"file", file},
                                {"admission", args.decisions_to_process ? "to-process" : "exact"},
                                {"budget", main_budget}};
  }
  Outputs out;
  std::ostringstream summary, steps, overlap, head_times;
  head_times << "layer,kv_head,tokens,budgets,seconds,optimum_seconds\n";
  summary << "layer,kv_head,budget,budget_size,policy,oracle_policy,total_retained_mass,"
             "mean_retained_mass,mean_output_error,optimum_total,oracle_total,gap_to_optimum,optimum_lower_bound,"
             "optimum_upper_bound"
          << (args.schedules ? ",mean_jaccard_to_optimum,mean_policy_only_mass,mean_optimum_only_mass" : "") << "\n";
  steps << "layer,kv_head,budget,step,policy,retained_mass\n";
  overlap << "layer,kv_head,budget,step,policy,jaccard_to_optimum,policy_only_mass,optimum_only_mass\n";
  // --schedules: eviction steps per (series, budget) in the decisions-file layout (recorded_decisions.hpp).
  std::map<std::pair<std::string, double>, greedy::ScheduleArray> schedules;
  const auto record_schedule = [&](const std::string& series, double budget, int layer, int kv,
                                   const std::vector<int>& last_step) {
    auto it = schedules.find({series, budget});
    if (it == schedules.end()) {
      it = schedules.emplace(std::pair{series, budget},
                             greedy::ScheduleArray(w.shape().layers, w.shape().kv_heads, w.shape().tokens)).first;
    }
    it->second.set(layer, kv, last_step);
  };
  nlohmann::json per_head = nlohmann::json::array();
  std::vector<std::string> violations;
  // Aggregates: mean over heads of the mean retained mass, per (policy, budget).
  Aggregate aggregate;
  std::map<std::pair<std::string, double>, int> uncompressed;  // heads a policy did not compress
  for (const Cell& c : cells) {
    const double tol = greedy::mass_order_slack(c.float_gains);  // the order's slack at this head's precision
    const double g = c.heads, n = c.tokens;
    const double opt = c.has_optimum ? c.optimum.value / g : NAN;
    const double orc = c.has_oracle ? c.oracle.total / g : NAN;
    // The certified interval [lower, upper] around OPT (lower = upper = OPT's value up to the
    // certificate's rounding when exact).
    const double lower = c.has_interval ? c.optimum.value / g : NAN;
    const double upper = c.has_interval ? c.optimum.upper_bound / g : NAN;
    // The optimum's side of the order on this cell: OPT (or its interval), sum U and n.
    greedy::HeadMasses optimum_masses;
    if (c.has_optimum) {
      optimum_masses.optimum = opt;
    } else if (c.has_interval) {
      optimum_masses.optimum = lower;
      optimum_masses.optimum_upper = upper;
    }
    if (c.has_oracle) optimum_masses.oracle = orc;
    optimum_masses.tokens = n;
    if (c.budget_value == budgets.front()) {
      head_times << c.layer << ',' << c.kv_head << ',' << c.tokens << ',' << budgets.size() << ','
                 << significant_digits(c.head_seconds, 4) << ',' << significant_digits(c.optimum_seconds, 4) << '\n';
    }
    nlohmann::json head = {{"layer", c.layer}, {"kv_head", c.kv_head}, {"budget", c.budget_value},
                           {"budget_size", c.budget}, {"group_size", c.heads}};
    if (c.has_interval) {
      head["optimum"] = {{"status", greedy::to_string(c.optimum.status)}, {"lower_bound", lower},
                         {"upper_bound", upper}, {"seconds", c.optimum.seconds}, {"arcs", c.optimum.model_size}};
      if (c.has_optimum) head["optimum"]["total"] = opt;
    }
    if (c.has_oracle) head["oracle_total"] = orc;
    head["policies"] = nlohmann::json::object();
    const std::string where = "layer " + std::to_string(c.layer) + " KV head " +
                              std::to_string(c.kv_head) + " budget " + fmt(c.budget_value);
    for (std::size_t ti = 0; ti < c.traces.size(); ++ti) {
      const Trace& t = c.traces[ti];
      const double total = t.total_retained_mass() / g;
      const double err = greedy::mean_output_error(t);
      // Overlap with the optimum's cache, in the units of the masses (mean over the group's heads).
      const greedy::ScheduleOverlap* o = ti < c.overlaps.size() ? &c.overlaps[ti] : nullptr;
      summary << c.layer << ',' << c.kv_head << ',' << fmt(c.budget_value) << ',' << c.budget << ','
              << csv_field(t.policy) << ',' << (t.oracle ? 1 : 0) << ',' << fmt(total) << ','
              << fmt(total / n) << ',' << fmt(err) << ',' << (c.has_optimum ? fmt(opt) : "") << ','
              << (c.has_oracle ? fmt(orc) : "") << ',' << (c.has_optimum ? fmt(opt - total) : "") << ','
              << (c.has_interval ? fmt(lower) : "") << ',' << (c.has_interval ? fmt(upper) : "");
      if (args.schedules) {
        summary << ',' << (o ? fmt(o->mean_jaccard()) : "") << ',' << (o ? fmt(o->mean_only_first_mass() / g) : "")
                << ',' << (o ? fmt(o->mean_only_second_mass() / g) : "");
      }
      summary << '\n';
      head["policies"][t.policy] = {{"total_retained_mass", total},
                                    {"mean_retained_mass", total / n},
                                    {"mean_output_error", err},
                                    {"oracle_policy", t.oracle},
                                    {"compressed", t.budget == c.budget}};
      if (o) {
        head["policies"][t.policy]["overlap_with_optimum"] = {
            {"mean_jaccard", o->mean_jaccard()},
            {"mean_policy_only_mass", o->mean_only_first_mass() / g},
            {"mean_optimum_only_mass", o->mean_only_second_mass() / g}};
      }
      if (const auto conv = c.converted.find(t.policy); conv != c.converted.end()) {
        head["policies"][t.policy]["converted_tokens"] = conv->second;
      }
      if (args.schedules) record_schedule(t.policy, c.budget_value, c.layer, c.kv_head, t.last_step());
      if (o && c.budget_value == main_budget) {
        for (int i = 0; i < c.tokens; ++i) {
          overlap << c.layer << ',' << c.kv_head << ',' << fmt(c.budget_value) << ',' << i << ','
                  << csv_field(t.policy) << ',' << fmt(o->jaccard[i]) << ',' << fmt(o->only_first_mass[i] / g) << ','
                  << fmt(o->only_second_mass[i] / g) << '\n';
        }
      }
      auto& a = aggregate[{t.policy, c.budget_value}];
      a.first += total / n;
      a.second += 1;
      if (t.budget != c.budget) ++uncompressed[{t.policy, c.budget_value}];
      // policy <= OPT only for runs that used the budget (l2norm's skipped layers keep all).
      if (t.budget == c.budget) {
        greedy::HeadMasses masses = optimum_masses;
        masses.policy_name = t.policy;
        masses.policy = total;
        masses.oracle.reset();  // OPT <= sum U <= n once per cell, below
        for (const std::string& v : greedy::mass_order_violations(masses, tol)) violations.push_back(v + " at " + where);
      }
      if (c.budget_value == main_budget) {
        for (const auto& s : t.steps) {
          steps << c.layer << ',' << c.kv_head << ',' << fmt(c.budget_value) << ',' << s.step << ','
                << csv_field(t.policy) << ',' << fmt(s.retained_mass) << '\n';
        }
      }
    }
    if (c.has_optimum) {
      auto& a = aggregate[{"OPT", c.budget_value}];
      a.first += opt / n;
      a.second += 1;
      if (args.schedules) record_schedule("OPT", c.budget_value, c.layer, c.kv_head, c.optimum.last_step);
    }
    if (c.has_oracle) {
      auto& a = aggregate[{"sum_U", c.budget_value}];
      a.first += orc / n;
      a.second += 1;
    }
    if (args.optimum == "certified" && c.has_interval) {
      for (const auto& [series, v] : {std::pair{"OPT_lower", lower}, std::pair{"OPT_upper", upper}}) {
        auto& a = aggregate[{series, c.budget_value}];
        a.first += v / n;
        a.second += 1;
      }
    }
    for (const std::string& v : greedy::mass_order_violations(optimum_masses, tol)) violations.push_back(v + " at " + where);
    if (c.budget_value == main_budget) {
      for (int i = 0; i < c.tokens; ++i) {
        const std::string prefix = std::to_string(c.layer) + ',' + std::to_string(c.kv_head) + ',' +
                                   fmt(c.budget_value) + ',' + std::to_string(i) + ',';
        if (c.has_optimum) steps << prefix << "OPT," << fmt(c.optimum.step_mass[i] / g) << '\n';
        if (c.has_oracle) steps << prefix << "U," << fmt(c.oracle.per_step[i] / g) << '\n';
      }
    }
    per_head.push_back(head);
  }
  out.files["summary.csv"] = summary.str();
  out.files["heads.csv"] = head_times.str();
  const auto [curve_points, curve_csv] = budget_curve_outputs(curves);
  if (!curves.empty()) out.files["budget_curve.csv"] = curve_csv;
  out.files["steps.csv"] = steps.str();
  nlohmann::json schedule_files = nlohmann::json::array();
  if (args.schedules) {
    if (args.optimum == "flow") out.files["overlap.csv"] = overlap.str();
    std::set<std::string> used;
    for (const auto& [key, array] : schedules) {
      // schedule_<series>_budget_<b>.npy, the series made file-name safe (and unique).
      std::string safe;
      for (char ch : key.first) safe += std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-' ? ch : '_';
      std::string name = "schedule_" + safe + "_budget_" + fmt(key.second) + ".npy";
      for (int copy = 2; used.count(name); ++copy) {
        name = "schedule_" + safe + "_" + std::to_string(copy) + "_budget_" + fmt(key.second) + ".npy";
      }
      used.insert(name);
      out.files[name] = npy_file_bytes(name, TensorView<std::int64_t>{array.shape(), array.steps});
      schedule_files.push_back({{"policy", key.first}, {"budget", key.second}, {"file", name}});
    }
  }

  nlohmann::json agg = nlohmann::json::array();
  for (const auto& [key, value] : aggregate) {
    agg.push_back({{"policy", key.first}, {"budget", key.second},
                   {"mean_retained_mass", value.first / value.second}, {"heads", value.second},
                   {"uncompressed_heads", uncompressed.count(key) ? uncompressed.at(key) : 0}});
  }
  const bool holds = violations.empty();
  out.doc = {{"command", "simulate"},
             {"source", args.workload.empty() ? "preset " + args.preset : args.workload},
             {"shape", to_json(w.shape())},
             {"seed", args.seed},
             {"budgets", budgets},
             {"budget_rule", "values in (0, 1) are ratios of the sequence length, values >= 1 absolute sizes"},
             {"main_budget", main_budget},
             {"layers", layers},
             {"layers_text", format_index_set(layers)},
             {"kv_heads", kv_heads},
             {"policies", names},
             {"policy_parameters", parameters},
             {"optimum", args.optimum},
             {"optimum_gap", args.optimum == "certified" ? nlohmann::json(args.gap) : nlohmann::json(nullptr)},
             {"budget_curve", args.budget_curve},
             {"units", "retained attention mass, mean over the query heads of each KV head; totals sum over steps"},
             {"decomposition", "policy <= OPT_irreversible <= sum_i U_i <= n"},
             {"decomposition_holds", holds},
             {"violations", violations},
             {"aggregate", agg},
             {"schedule_files", schedule_files},
             {"schedule_format", "int64 (layers, kv_heads, n): for each token the step at which it was evicted, n = "
                                 "never, -1 = head not simulated (docs/eviction.md, recorded decisions)"},
             {"heads", per_head}};

  for (const plot::Figure& figure : figures(cells, names, main_budget, w.shape().tokens, aggregate, curve_points)) {
    for (auto& [name, text] : plot::figure_files(figure)) out.files[name] = std::move(text);
  }
  return out;
}

/// Every policy with its parameters and defaults (--list-policies).
void print_policies() {
  std::cout << "policies (NAME or NAME:KEY=VALUE,...; docs/eviction.md):\n";
  int key_width = 0, value_width = 0;  // the columns fit the longest key and default
  for (const std::string& name : greedy::spec_policy_names()) {
    for (const auto& p : greedy::policy_parameters(name)) {
      key_width = std::max(key_width, int(p.key.size()));
      value_width = std::max(value_width, int(p.default_value.size()));
    }
  }
  for (const std::string& name : greedy::spec_policy_names()) {
    const auto parameters = greedy::policy_parameters(name);
    std::cout << "  " << name << (parameters.empty() ? "  (no parameters)" : "") << "\n";
    for (const auto& p : parameters) {
      std::printf("      %-*s default %-*s %s\n", key_width, p.key.c_str(), value_width, p.default_value.c_str(),
                  p.meaning.c_str());
    }
  }
}

void run_simulate(const SimulateArgs& args) {
  if (args.list_policies) {
    print_policies();
    return;
  }
  if (args.output.empty()) throw CLI::RequiredError("-o,--output");
  // Validate everything cheap before any work or output.
  if (args.preset.empty() == args.workload.empty()) {
    throw InputError("simulate", "input", "exactly one of --preset and --workload");
  }
  require_output_directory(args.json, "--json");
  const greedy::OptimumMode optimum = greedy::parse_optimum_mode(args.optimum, "simulate", "--optimum");
  if (!(std::isfinite(args.gap) && args.gap > 0.0)) {
    throw InputError("simulate", "--gap", "a finite relative gap > 0", significant_digits(args.gap, 10));
  }
  if (args.budget_curve < 0) {
    throw InputError("simulate", "--budget-curve", "an integer K >= 1 (0: no curve)", std::to_string(args.budget_curve));
  }
  if (args.budget_curve > 0 && optimum != greedy::OptimumMode::kFlow && optimum != greedy::OptimumMode::kCertified) {
    throw InputError("simulate", "--budget-curve", "--optimum flow or certified (the curve is the optimum's)",
                     "--optimum " + args.optimum);
  }
  if (args.threads < 0) throw InputError("simulate", "--threads", "an integer >= 0", std::to_string(args.threads));
  if (args.horizon < 1) throw InputError("simulate", "--horizon", "an integer >= 1", std::to_string(args.horizon));
  const std::vector<greedy::PolicySpec> specs = greedy::parse_policy_list(args.policies, "simulate", "--policies", args.horizon);
  std::vector<greedy::ShareRule> share_rules;
  if (!args.share.empty()) {
    if (args.share != "layer" && args.share != "model") {
      throw InputError("simulate", "--share", "layer or model", args.share);
    }
    const auto refuse = [&](bool given, const std::string& option) {
      if (given) throw InputError("simulate", option, "not given with --share (it runs one budget)", option);
    };
    refuse(!args.budgets.empty(), "--budgets");
    refuse(args.budget_curve > 0, "--budget-curve");
    refuse(!args.decisions.empty(), "--decisions");
    refuse(args.schedules, "--schedules");
    refuse(args.heads != "all", "--heads");
    if (!(args.shared_seconds >= 0.0) || !std::isfinite(args.shared_seconds)) {
      throw InputError("simulate", "--shared-seconds", "seconds >= 0 (0: no limit)",
                       significant_digits(args.shared_seconds, 6));
    }
    share_rules = greedy::parse_share_rules(
        args.share_rules.empty() ? (args.share == "model" ? "uniform,adakv,pyramidkv,duo" : "uniform,adakv,duo")
                                 : args.share_rules,
        "simulate", "--share-rules");
  } else if (!args.share_rules.empty() || !args.curves.empty()) {
    throw InputError("simulate", args.curves.empty() ? "--share-rules" : "--curves", "--share layer|model with it",
                     "no --share");
  }
  const kernels::Backend backend =
      args.backend.empty() ? kernels::fastest_backend() : kernels::parse_backend(args.backend);
  kernels::require_available(backend);
  const double main_budget = greedy::parse_budget_value(args.budget, "simulate");
  std::set<double> budget_set{main_budget};
  for (double b : greedy::parse_budget_list(args.budgets, "simulate")) budget_set.insert(b);
  const std::vector<double> budgets(budget_set.begin(), budget_set.end());
  RecordedInputs recorded;
  recorded.budget = main_budget;
  recorded.admission =
      args.decisions_to_process ? greedy::ScheduleAdmission::kToProcess : greedy::ScheduleAdmission::kExact;
  for (const std::string& file : args.decisions) {
    const std::string label = greedy::decisions_label(file);
    if (std::find(recorded.labels.begin(), recorded.labels.end(), label) != recorded.labels.end()) {
      throw InputError("simulate", "--decisions", "files with distinct names (each is the policy recorded:NAME)", file);
    }
    recorded.files.push_back(greedy::read_decisions(file));
    recorded.labels.push_back(label);
  }

  Workload w;
  std::vector<int> layers;
  {
    // No line for a quick one: only the heartbeat (every 30 s) shows that a long read or generation
    // (minutes at 128k tokens) is alive.
    Progress loading("simulate: " + std::string(args.workload.empty() ? "generating" : "reading") + " the workload",
                     1, "workload", args.quiet);
    if (!args.workload.empty()) {
      ReadOptions read_options;
      read_options.allow_nonfinite = args.allow_nonfinite;
      w = read_workload(args.workload, read_options);
      layers = parse_index_set(args.layers, w.shape().layers, {"simulate", "--layers", "layers"});
    } else {
      // The layer set is read against the preset's layers; the layers up to the last one are
      // generated (a generated layer does not depend on how many follow it).
      const WorkloadSpec model = spec_from_preset(args.preset, args.tokens, 0, args.seed);
      layers = parse_index_set(args.layers, model.shape.layers, {"simulate", "--layers", "layers"});
      const WorkloadSpec spec = spec_from_preset(args.preset, args.tokens, layers.back() + 1, args.seed);
      const std::vector<int> kv = parse_index_set(args.heads, spec.shape.kv_heads, {"simulate", "--heads", "KV heads"});
      // On the reference backend only the selected KV heads are generated (the others stay 0 and
      // are never read); another backend's batched policies run on every head.
      w = backend == kernels::Backend::kReference && int(kv.size()) < spec.shape.kv_heads
              ? generate_kv_heads(spec, 0, spec.shape.layers, kv, 0)
              : kernels::generate_workload(spec, backend);
    }
  }
  const Shape& shape = w.shape();
  if (!args.workload.empty() && args.tokens != 0 && args.tokens != shape.tokens) {
    throw InputError(args.workload, "--tokens", std::to_string(shape.tokens) + " (the file's) or 0",
                     std::to_string(args.tokens));
  }
  const std::vector<int> kv = parse_index_set(args.heads, shape.kv_heads, {"simulate", "--heads", "KV heads"});
  if (args.allow_nonfinite) {
    require_finite(w, layers, kv, args.workload,
                   "in the selected layers and KV heads (--allow-nonfinite accepts the file, but eviction needs "
                   "finite attention: leave the layer or head out with --layers or --heads)");
  }
  for (double b : budgets) {
    const int k = to_budget(b).resolve(shape.tokens, 0);
    for (const auto& spec : specs) greedy::check_policy_budget(spec, shape.tokens, k, "simulate", "--policies");
  }
  for (const auto& file : recorded.files) greedy::check_decisions_fit(file, shape, layers);
  if (args.budget_curve > shape.tokens) {
    throw InputError("simulate", "--budget-curve", "K <= " + std::to_string(shape.tokens) + " (the tokens)",
                     std::to_string(args.budget_curve));
  }
  check_stored_gains_limit(args, optimum, shape.tokens);
  const int threads = args.threads == 0 ? int(std::max(1u, std::thread::hardware_concurrency())) : args.threads;
  if (!args.share.empty()) {
    ShareRequest request;
    request.model = args.share == "model";
    request.rules = share_rules;
    request.scorers = specs;
    request.budget = to_budget(main_budget).resolve(shape.tokens, 0);
    request.budget_text = args.budget;
    request.curves = args.curves;
    request.shared_seconds = args.shared_seconds;
    request.threads = threads;
    request.quiet = args.quiet;
    request.seed = args.seed;
    request.output = args.output;
    request.json = args.json;
    run_share(w, layers, request);
    return;
  }
  std::vector<std::pair<int, int>> heads;
  for (int l : layers)
    for (int h : kv) heads.emplace_back(l, h);
  SimulateArgs run_args = args;
  run_args.threads = threads;

  BatchedRuns batched;
  if (backend != kernels::Backend::kReference) {
    for (const auto& spec : specs) {
      if (!kernels::is_batched_policy(spec.name)) continue;
      for (double b : budgets) {
        kernels::BatchedOptions options;
        options.policy = kernels::parse_batched_policy(spec.name);
        options.budget = to_budget(b).resolve(shape.tokens, 0);
        options.params = spec.params;
        batched.emplace(std::pair{spec.label(), b}, kernels::simulate_batched(w, options, backend));
      }
    }
  }
  std::vector<greedy::BudgetCurve> curves;
  const std::vector<Cell> cells = run_cells(w, heads, budgets, specs, run_args, batched, recorded, curves);
  const Outputs outputs = build_outputs(cells, curves, specs, budgets, main_budget, w, layers, kv, args);
  std::map<std::string, std::string> files = outputs.files;
  files["results.json"] = outputs.doc.dump(2) + "\n";
  const std::string written = publish_directory(args.output, files, !args.no_plots);
  if (!args.json.empty()) write_json(args.json, outputs.doc);

  // The headline table: aggregated mean retained mass per policy at the main budget.
  std::cout << "simulate: " << to_string(shape) << "; layers " << format_index_set(layers) << ", KV heads "
            << format_index_set(kv) << ": " << heads.size() << " (layer, KV head) groups, budgets";
  for (double b : budgets) std::cout << ' ' << fmt(b);
  std::cout << "\nmean retained mass at budget " << fmt(main_budget) << ":\n";
  std::map<std::string, double> at_main;  // series -> mean retained mass at the main budget
  for (const auto& a : outputs.doc["aggregate"]) {
    if (a["budget"].get<double>() == main_budget) at_main[a["policy"].get<std::string>()] = a["mean_retained_mass"];
  }
  const bool all_exact = at_main.count("OPT") && !std::any_of(cells.begin(), cells.end(), [](const Cell& c) {
    return c.has_interval && !c.has_optimum;
  });
  for (const auto& a : outputs.doc["aggregate"]) {
    if (a["budget"].get<double>() != main_budget) continue;
    const std::string name = a["policy"].get<std::string>();
    const double mass = a["mean_retained_mass"].get<double>();
    const int skipped = a["uncompressed_heads"].get<int>();
    std::string ratio;  // policy / OPT: a value when OPT is exact on every head, else the certified interval
    if (name.rfind("OPT", 0) != 0 && name != "sum_U") {
      if (all_exact) {
        ratio = "  policy/OPT " + significant_digits(mass / at_main["OPT"], 6);
      } else if (at_main.count("OPT_lower")) {
        ratio = "  policy/OPT in [" + significant_digits(mass / at_main["OPT_upper"], 6) + ", " +
                significant_digits(mass / at_main["OPT_lower"], 6) + "]";
      }
    }
    std::printf("  %-16s %.6f%s%s\n", name.c_str(), mass, ratio.c_str(),
                skipped > 0 ? ("  (" + std::to_string(skipped) + " heads not compressed)").c_str() : "");
  }
  std::cout << "policy <= OPT_irreversible <= sum U_i <= n: "
            << (outputs.doc["decomposition_holds"].get<bool>() ? "holds on every head" : "VIOLATED")
            << (args.optimum == "flow" ? "" : " (checked for the parts computed)") << "\n"
            << "wrote " << written << "\n";
  // Say which recorded schedules were evaluated in converted form (--decisions-to-process).
  std::map<std::string, std::pair<int, int>> converted;  // label -> (heads, tokens changed)
  for (const Cell& c : cells) {
    for (const auto& [label, tokens] : c.converted) {
      converted[label].first += 1;
      converted[label].second += tokens;
    }
  }
  for (const auto& [label, count] : converted) {
    std::cout << label << ": not a process schedule on " << count.first << " head(s); evaluated after conversion "
              << "to the process form (" << count.second << " tokens kept longer; --decisions-to-process)\n";
  }
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "simulate", "Run eviction policies per (layer, KV head) against the offline optimum and the per-step oracle");
  cmd->add_option("--preset", args->preset, "Generate an LLM-like workload of this model shape");
  cmd->add_option("--workload", args->workload, "Read a workload: FILE.safetensors or a q/k/v.npy directory");
  cmd->add_option("--tokens", args->tokens, "Tokens of a generated workload (0: the preset's default)");
  cmd->add_option("--layers", args->layers,
                  "Layers to run: a list of layers and ranges such as 0,14,20-29, or all; a single number N is "
                  "layer N alone (not the first N layers: write 0-3 for those); a preset generates layers 0 up "
                  "to the last one listed")
      ->capture_default_str();
  cmd->add_option("--heads", args->heads,
                  "KV heads to run, in the same syntax (e.g. 1 or 0,2-3); a preset generates only these on the "
                  "reference backend")
      ->capture_default_str();
  cmd->add_option("--budget", args->budget,
                  "Budget of the per-step outputs: a ratio in (0, 1) of the sequence length, or an integer size")
      ->capture_default_str();
  cmd->add_option("--budgets", args->budgets, "Further budgets for the budget curve, comma-separated (e.g. 0.04,0.1,0.2,0.6)");
  cmd->add_option("--policies", args->policies,
                  "Policies, comma-separated, each NAME or NAME:KEY=VALUE,... (e.g. h2o:heavy=52,recent=50,local); "
                  "--list-policies shows every name, key and default")
      ->capture_default_str();
  cmd->add_flag("--list-policies", args->list_policies, "List the policies with their parameters and defaults, and exit");
  cmd->add_option("--optimum", args->optimum,
                  "none | flow (exact offline optimum and oracle) | certified (a feasible schedule and a certified "
                  "upper bound per budget, stopping at --gap) | oracle (per-step U_i only). Beyond 32768 tokens the "
                  "optimum streams the head's attention instead of storing it, and there is no oracle")
      ->capture_default_str();
  cmd->add_option("--gap", args->gap, "Relative gap (upper - lower) / upper at which --optimum certified stops")
      ->capture_default_str();
  cmd->add_option("--budget-curve", args->budget_curve,
                  "Also compute OPT(k) for every k = 1..K per head in one solve (budget_curve.csv, and the "
                  "retained-vs-budget plot); needs --optimum flow or certified");
  cmd->add_option("--seed", args->seed, "Seed of the generator and of randomized policies")->capture_default_str();
  cmd->add_option("--horizon", args->horizon, "Lookahead window L of the lookahead policy")->capture_default_str();
  cmd->add_option("--threads", args->threads, "Worker threads over heads (0: all cores)")->capture_default_str();
  cmd->add_option("-o,--output", args->output, "Output directory (required)");
  cmd->add_option("--json", args->json, "Also write results.json to this file");
  cmd->add_flag("--no-plots", args->no_plots, "Skip the gnuplot plots");
  cmd->add_flag("--quiet", args->quiet, "No progress on stderr");
  cmd->add_flag("--allow-nonfinite", args->allow_nonfinite,
                "Read a --workload file holding NaN/Inf; the selected layers and KV heads must still be finite");
  cmd->add_option("--backend", args->backend,
                  "reference | portable | cuda (default: the fastest available): runs h2o, local, streamingllm, "
                  "l2norm and tova batched over all heads; other policies, the oracle and the optimum always run "
                  "on the reference; output formats are identical");
  cmd->add_option("--decisions", args->decisions,
                  "Evaluate a recorded eviction schedule (.npy: eviction steps or keep masks, docs/eviction.md) as "
                  "policy recorded:NAME at the main budget, against the same optimum; repeatable");
  cmd->add_flag("--decisions-to-process", args->decisions_to_process,
                "Convert a recorded schedule that evicts before the cache is full or several tokens in one step to "
                "the process form (keeps every token at least as long) instead of rejecting it");
  cmd->add_option("--share", args->share,
                  "layer or model: run adaptive budget rules (--share-rules) with each scorer of --policies on one "
                  "cache per layer or for the whole model, against the uniform, static and shared optima");
  cmd->add_option("--share-rules", args->share_rules,
                  "uniform, adakv[:alpha_safeguard=A], pyramidkv[:window_size=W,beta=B] (model only), "
                  "duo[:head_compression_ratio=R,sink_size=S,recent_size=N,calibration=C] (default: all the scope allows)");
  cmd->add_option("--shared-seconds", args->shared_seconds,
                  "With --share, where the shared optimum needs the column generation (the explicit network does not "
                  "fit 8 GB): stop after the round past this many seconds with its certified interval (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--curves", args->curves,
                  "With --share: read the static optimum's curves from this budget_curve.csv instead of computing them");
  cmd->add_flag("--schedules", args->schedules,
                "Also write every policy's and the optimum's eviction schedule (schedule_*.npy) and each policy's "
                "per-step overlap with the optimum's cache (overlap.csv and summary columns)");
  cmd->callback([args]() { run_simulate(*args); });
}

}  // namespace subevict::cli
