// `simulate`: built-in and Python eviction policies on chosen (layer, KV head) groups of a
// workload against the offline optimum and the per-step oracle, with per-step traces as arrays.
// The same building blocks as `subevict simulate` (greedy::evaluate_head's: head_group, simulate,
// gain_matrix, step_oracle, offline_optimum), in the same units: masses are means over the g
// query heads of a KV head (optimum and oracle divided by g).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <omp.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <set>

#include "bindings.hpp"
#include "core/input_error.hpp"
#include "core/workload_io.hpp"
#include "greedy/eviction/evaluation/head_evaluation.hpp"
#include "greedy/eviction/evaluation/mass_order.hpp"
#include "greedy/eviction/evaluation/recorded_decisions.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"
#include "greedy/eviction/process/schedule_overlap.hpp"
#include "greedy/eviction/process/query_rows.hpp"
#include "optimum.hpp"
#include "python_policy.hpp"

namespace subevict::python {

using namespace nb::literals;

namespace {

/// One policy as given: a built-in spec, a recorded schedule (subevict.Decisions) or a Python object.
struct PolicyItem {
  std::string label;
  std::optional<greedy::PolicySpec> spec;
  nb::object object;  // a Python policy when neither spec nor decisions
  std::shared_ptr<const greedy::DecisionsFile> decisions;
  greedy::ScheduleAdmission admission = greedy::ScheduleAdmission::kExact;
};

/// A subevict.Decisions object as the library's decisions file, named "decisions LABEL" in
/// errors; its array is checked (dtype, C order, shape), copied once, never converted.
std::shared_ptr<const greedy::DecisionsFile> decisions_of(const nb::handle& object, const std::string& label) {
  const std::string name = "decisions " + label;
  AnyArray array;
  if (!nb::try_cast(object.attr("array"), array)) {
    throw InputError("simulate", name, "a NumPy array", nb::str(nb::type_name(object.attr("array").type())).c_str());
  }
  std::vector<std::size_t> shape(array.ndim());
  for (std::size_t a = 0; a < shape.size(); ++a) shape[a] = array.shape(a);
  auto file = std::make_shared<greedy::DecisionsFile>(greedy::decisions_layout(name, shape));
  if (file->form == greedy::DecisionsForm::kKeepMask) {
    const std::uint8_t* data = checked_data<std::uint8_t>(array, -1, "simulate", name + " (a keep mask)");
    file->mask.assign(data, data + array.size());
  } else {
    const std::int64_t* data = checked_data<std::int64_t>(array, -1, "simulate", name + " (eviction steps)");
    file->steps.assign(data, data + array.size());
  }
  return file;
}

std::vector<PolicyItem> parse_policies(const nb::list& policies, int horizon) {
  std::vector<PolicyItem> items;
  std::set<std::string> labels;
  for (nb::handle p : policies) {
    if (nb::isinstance<nb::str>(p)) {
      for (greedy::PolicySpec& spec :
           greedy::parse_policy_list(nb::str(p).c_str(), "simulate", "policies", horizon)) {
        PolicyItem item{spec.label(), std::move(spec), nb::none()};
        items.push_back(std::move(item));
      }
    } else if (nb::hasattr(p, "_subevict_decisions")) {
      PolicyItem item{nb::cast<std::string>(p.attr("name")), std::nullopt, nb::none()};
      item.decisions = decisions_of(p, item.label);
      item.admission = nb::cast<bool>(p.attr("to_process")) ? greedy::ScheduleAdmission::kToProcess
                                                            : greedy::ScheduleAdmission::kExact;
      items.push_back(std::move(item));
    } else {
      const std::string label = python_policy_label(p);
      check_python_policy(p, label);
      items.push_back(PolicyItem{label, std::nullopt, nb::borrow(p)});
    }
  }
  for (const PolicyItem& item : items) {
    if (!labels.insert(item.label).second) {
      throw InputError("simulate", "policies", "each label once (give a Python policy a distinct `name`)",
                       item.label + " (listed twice)");
    }
  }
  return items;
}

nb::dict trace_dict(greedy::Trace&& t, double g, int k) {
  const std::size_t n = t.steps.size();
  std::vector<double> retained(n), tv(n), error(n);
  std::vector<int> evicted(n);
  for (std::size_t i = 0; i < n; ++i) {
    retained[i] = t.steps[i].retained_mass;
    tv[i] = t.steps[i].total_variation;
    error[i] = t.steps[i].output_error;
    evicted[i] = t.steps[i].evicted;
  }
  const double total = t.total_retained_mass() / g;
  nb::dict d;
  d["total_retained_mass"] = total;
  d["mean_retained_mass"] = total / double(t.tokens);
  d["mean_output_error"] = greedy::mean_output_error(t);
  d["oracle_policy"] = t.oracle;
  d["compressed"] = t.budget == k;
  d["budget_size"] = t.budget;
  d["last_step"] = owned_array<int>(t.last_step());
  d["retained_mass"] = owned_array<double>(std::move(retained));
  d["total_variation"] = owned_array<double>(std::move(tv));
  d["output_error"] = owned_array<double>(std::move(error));
  d["evicted"] = owned_array<int>(std::move(evicted));
  const std::size_t heads = std::size_t(t.heads);
  if (!t.head_retained_mass.empty()) {
    d["head_retained_mass"] = owned_array<double>(std::move(t.head_retained_mass), {n, heads});
    d["head_output_error"] = owned_array<double>(std::move(t.head_output_error), {n, heads});
  }
  if (!t.cache.empty()) {
    nb::list cache;
    for (std::vector<greedy::Token>& c : t.cache) cache.append(owned_array<int>(std::move(c)));
    d["cache"] = cache;
  }
  d["precompute_seconds"] = t.precompute_seconds;
  d["step_seconds"] = t.step_seconds;
  return d;
}

/// trace_dict of a trace run without metrics, its retained mass per step from the gains
/// (`step_mass`: sums over the g query heads); no output error (None).
nb::dict gains_trace_dict(greedy::Trace&& t, const Eigen::VectorXd& step_mass, double g, int k) {
  const Eigen::VectorXd retained = step_mass / g;
  nb::dict d = trace_dict(std::move(t), g, k);
  const double total = retained.sum();
  d["total_retained_mass"] = total;
  d["mean_retained_mass"] = total / double(retained.size());
  d["retained_mass"] = owned_array(Eigen::VectorXd(retained));
  d["total_variation"] = owned_array(Eigen::VectorXd(1.0 - retained.array()));
  d["mean_output_error"] = nb::none();
  d["output_error"] = nb::none();
  return d;
}

nb::list run_simulate(const Workload& w, const nb::list& policy_list, const std::vector<double>& budget_values,
                      const std::vector<int>& layers, std::optional<std::vector<int>> kv_heads_arg,
                      const std::string& optimum_name, double gap, std::uint64_t seed, int horizon,
                      bool record_cache, bool overlap, std::optional<int> model_layer, bool oracle_sets,
                      bool policy_mass_from_gains, std::optional<std::vector<int>> optimum_rows, bool oracle) {
  const Shape& shape = w.shape();
  if (horizon < 1) throw InputError("simulate", "horizon", "an integer >= 1", std::to_string(horizon));
  const greedy::OptimumMode optimum = greedy::parse_optimum_mode(optimum_name, "simulate");
  const std::vector<PolicyItem> items = parse_policies(policy_list, horizon);
  if (items.empty() && optimum == greedy::OptimumMode::kNone) {
    throw InputError("simulate", "policies", "at least one policy (or an optimum to compute)");
  }
  if (budget_values.empty()) throw InputError("simulate", "budget", "at least one budget");
  if (layers.empty()) throw InputError("simulate", "layers", "at least one layer");
  if (model_layer && (layers.size() != 1 || *model_layer < 0)) {
    throw InputError("simulate", "model_layer", "an index >= 0 with exactly one selected layer",
                     std::to_string(*model_layer) + " with " + std::to_string(layers.size()) + " layers");
  }
  for (int l : layers) {
    if (l < 0 || l >= shape.layers) {
      throw InputError("simulate", "layers", "layers in [0, " + std::to_string(shape.layers) + ")", std::to_string(l));
    }
  }
  std::vector<int> kv_heads;
  if (kv_heads_arg) {
    kv_heads = *kv_heads_arg;
  } else {
    for (int h = 0; h < shape.kv_heads; ++h) kv_heads.push_back(h);
  }
  if (kv_heads.empty()) throw InputError("simulate", "kv_heads", "at least one KV head");
  for (int h : kv_heads) {
    if (h < 0 || h >= shape.kv_heads) {
      throw InputError("simulate", "kv_heads", "KV heads in [0, " + std::to_string(shape.kv_heads) + ")",
                       std::to_string(h));
    }
  }
  std::vector<int> budgets;
  for (double b : budget_values) {
    budgets.push_back(greedy::budget_from_value(b, "simulate").resolve(shape.tokens, 0));
    for (const PolicyItem& item : items) {
      if (item.spec) greedy::check_policy_budget(*item.spec, shape.tokens, budgets.back(), "simulate", "policies");
    }
  }
  if (optimum_rows) {
    if (optimum == greedy::OptimumMode::kNone) {
      throw InputError("simulate", "optimum_rows", "an optimum to restrict (optimum flow, certified or oracle)",
                       "optimum none");
    }
    (void)greedy::query_row_mask(*optimum_rows, shape.tokens, "simulate");
  }
  const std::vector<int> rows = optimum_rows ? *optimum_rows : std::vector<int>{};
  require_finite(w, layers, kv_heads, "simulate", "in the selected layers and KV heads");
  // With optimum_rows the gains are restricted: the policies' mass comes from the simulator (full rows).
  const bool from_gains = policy_mass_from_gains && !optimum_rows && optimum != greedy::OptimumMode::kNone && !items.empty() &&
                          shape.tokens <= greedy::kStoredGainsTokens &&
                          std::all_of(items.begin(), items.end(), [](const PolicyItem& item) { return bool(item.spec); });
  for (const PolicyItem& item : items) {
    if (item.decisions) greedy::check_decisions_fit(*item.decisions, shape, layers);
  }

  nb::list out;
  for (int layer : layers) {
    for (int kv : kv_heads) {
      greedy::HeadGroup group = greedy::head_group(w, layer, kv);
      if (model_layer) group.layer = *model_layer;  // per-layer policy rules and seeds read the model's index
      const double g = group.group_size();
      std::vector<greedy::HeadEvaluation> optima;
      // [budget][item]: the built-in policies run without metrics, their mass valued on the gains.
      std::vector<std::vector<greedy::Trace>> decided;
      if (from_gains) {
        nb::gil_scoped_release release;
        std::vector<std::vector<std::vector<int>>> schedules(budgets.size());
        decided.resize(budgets.size());
        for (std::size_t b = 0; b < budgets.size(); ++b) {
          greedy::SimulationOptions options;
          options.budget = budgets[b];
          options.seed = seed;
          options.record_cache = record_cache;
          options.compute_metrics = false;
          for (const PolicyItem& item : items) {
            greedy::Trace trace = greedy::simulate(group, *greedy::make_policy(*item.spec), options);
            trace.policy = item.label;
            schedules[b].push_back(trace.last_step());
            decided[b].push_back(std::move(trace));
          }
        }
        optima = head_optima(w, layer, kv, budgets, optimum, gap, oracle_sets, std::move(schedules), {}, oracle);
      } else if (optimum != greedy::OptimumMode::kNone) {
        nb::gil_scoped_release release;
        // Every budget of the head in one solve, as `subevict simulate` runs each (layer, KV head).
        optima = head_optima(w, layer, kv, budgets, optimum, gap, oracle_sets, {}, rows, oracle);
      }
      for (std::size_t b = 0; b < budgets.size(); ++b) {
        const int k = budgets[b];
        greedy::SimulationOptions options;
        options.budget = k;
        options.seed = seed;
        options.record_cache = record_cache;
        nb::dict cell;
        cell["layer"] = layer;
        cell["kv_head"] = kv;
        cell["budget"] = budget_values[b];
        cell["budget_size"] = k;
        cell["group_size"] = group.group_size();
        cell["tokens"] = shape.tokens;
        nb::dict traces;
        std::vector<std::pair<std::string, std::vector<int>>> schedules;  // (label, t_j) for the overlap
        if (!decided.empty()) {
          for (std::size_t i = 0; i < items.size(); ++i) {
            greedy::Trace& trace = decided[b][i];
            if (overlap) schedules.emplace_back(items[i].label, trace.last_step());
            traces[items[i].label.c_str()] = gains_trace_dict(std::move(trace), optima[b].schedule_step_mass[i], g, k);
          }
        }
        for (std::size_t i = 0; decided.empty() && i < items.size(); ++i) {  // metrics from the simulator
          const PolicyItem& item = items[i];
          if (item.decisions) {
            greedy::RecordedRun run;
            {
              nb::gil_scoped_release release;
              run = greedy::simulate_recorded(w, layer, kv, *item.decisions, item.label, options, item.admission);
            }
            if (overlap) schedules.emplace_back(item.label, run.trace.last_step());
            nb::dict d = trace_dict(std::move(run.trace), g, k);
            d["converted"] = run.admitted.converted;
            d["changed_tokens"] = run.admitted.changed_tokens;
            traces[item.label.c_str()] = d;
            continue;
          }
          std::unique_ptr<greedy::EvictionPolicy> policy =
              item.spec ? greedy::make_policy(*item.spec) : std::make_unique<PythonPolicy>(item.object, item.label);
          greedy::Trace trace;
          {
            nb::gil_scoped_release release;
            trace = greedy::simulate(group, *policy, options);
          }
          trace.policy = item.label;
          if (overlap) schedules.emplace_back(item.label, trace.last_step());
          traces[item.label.c_str()] = trace_dict(std::move(trace), g, k);
        }
        if (overlap && !optima.empty() && optima[b].has_optimum) {
          // Each trace's cache against the optimum's, step by step (simulate --schedules' overlap.csv).
          const std::vector<int>& optimal = optima[b].optimum.last_step;
          for (const auto& [label, schedule] : schedules) {
            greedy::ScheduleOverlap o;
            {
              nb::gil_scoped_release release;
              o = greedy::schedule_overlap(group, schedule, optimal);  // streamed: O(n) memory per row block
            }
            nb::dict od;
            od["mean_jaccard"] = o.mean_jaccard();
            od["mean_policy_only_mass"] = o.mean_only_first_mass() / g;
            od["mean_optimum_only_mass"] = o.mean_only_second_mass() / g;
            Eigen::VectorXd policy_only = o.only_first_mass / g, optimum_only = o.only_second_mass / g;
            od["jaccard"] = owned_array(std::move(o.jaccard));
            od["policy_only_mass"] = owned_array(std::move(policy_only));
            od["optimum_only_mass"] = owned_array(std::move(optimum_only));
            nb::cast<nb::dict>(traces[label.c_str()])["overlap_with_optimum"] = od;
          }
        }
        cell["policies"] = traces;
        cell["optimum"] = nb::none();
        cell["oracle"] = nb::none();
        if (!optima.empty()) {
          greedy::HeadEvaluation& e = optima[b];
          if (e.has_oracle) {
            cell["oracle_total"] = e.oracle.total / g;
            cell["oracle"] = oracle_dict(std::move(e.oracle), g);
          }
          if (e.has_optimum || e.has_interval) cell["optimum"] = schedule_dict(std::move(e.optimum), g);
        }
        out.append(cell);
      }
    }
  }
  return out;
}

}  // namespace

void bind_simulate(nb::module_& m) {
  m.def("_simulate", &run_simulate, "workload"_a, "policies"_a, "budgets"_a, "layers"_a, "kv_heads"_a.none(),
        "optimum"_a, "gap"_a, "seed"_a, "horizon"_a, "record_cache"_a, "overlap"_a, "model_layer"_a.none(),
        "oracle_sets"_a = false, "policy_mass_from_gains"_a = false, "optimum_rows"_a = nb::none(), "oracle"_a = true,
        "The engine of subevict.simulate (see its docstring); arguments already normalized to lists. "
        "oracle_sets: each cell's oracle also holds its chosen sets ('chosen'; up to the stored-gains length). "
        "policy_mass_from_gains: where every policy is a built-in, an optimum is computed and the gains are "
        "stored, the policies run without metrics and their retained mass is valued on the optimum's gains "
        "(the same decisions; output_error and mean_output_error are None). "
        "optimum_rows: query rows R (indices in [0, n)); the oracle and the optimum are those of the gains restricted "
        "to R's rows (the optimum's 'total' and 'step_mass' count R's rows only; policy_mass_from_gains is then "
        "ignored: the policies' masses are full rows, sum their 'retained_mass' over R). "
        "oracle: False skips the per-step oracle beside an optimum flow or certified (each cell's 'oracle' is then "
        "None), for a caller that reads the optimum alone.");
  m.def(
      "_set_threads", [](int threads) {
        if (threads < 1) throw InputError("_set_threads", "threads", "an integer >= 1", std::to_string(threads));
        omp_set_num_threads(threads);
      },
      "threads"_a,
      "The OpenMP threads of the calling thread's later library calls (Eigen's products in one head's optimum); "
      "the closed loop runs KV heads on threads of its own and gives each 1.");
  m.def(
      "policy_specs",
      [](const std::string& text, const std::string& source, int horizon) {
        std::vector<std::string> labels;
        for (const greedy::PolicySpec& spec : greedy::parse_policy_list(text, source, "policies", horizon)) {
          labels.push_back(spec.label());
        }
        return labels;
      },
      "text"_a, "source"_a = "simulate", "horizon"_a = 16,
      "The policies of a policy list (as simulate reads it), one spec string each: its label, which parses back "
      "to that policy alone. InputError (naming `source`) as simulate for unknown names, keys or values.");
  m.def(
      "budget_size",
      [](double value, int tokens, const std::string& source) {
        if (tokens < 1) throw InputError(source, "tokens", "an integer >= 1", std::to_string(tokens));
        return greedy::budget_from_value(value, source).resolve(tokens, 0);
      },
      "value"_a, "tokens"_a, "source"_a = "simulate",
      "The cache size k of a budget value for n tokens, as simulate resolves it: a ratio in (0, 1) gives "
      "max(1, round(ratio n)), an integer size is capped at n. InputError (naming `source`) otherwise.");
  m.def(
      "parse_budgets",
      [](const std::string& text, const std::string& source, const std::string& field) {
        nb::list out;
        for (double value : greedy::parse_budget_list(text, source, field)) {
          if (value >= 1.0) {
            out.append(nb::int_(static_cast<long long>(value)));
          } else {
            out.append(nb::float_(value));
          }
        }
        if (out.size() == 0) throw InputError(source, field, "at least one budget", text.empty() ? "none" : text);
        return out;
      },
      "text"_a, "source"_a = "simulate", "field"_a = "budget",
      "The budgets of a comma-separated list as the command line reads them (\"0.05,0.1,64\"): ratios in (0, 1) "
      "as floats, sizes as ints. The library's one budget parser (`subevict simulate --budgets`); InputError "
      "(naming `source` and `field`) for an item that is not such a number (inf, nan, 0, 2.5, 3e9, text) or "
      "an empty list.");
  m.def("mass_order_slack", &greedy::mass_order_slack, "float_gains"_a = false,
        "The relative slack of mass_order_violations on a head whose optimum ran on float-rounded gains or not.");
  m.def(
      "mass_order_violations",
      [](std::optional<double> policy, std::optional<double> optimum, std::optional<double> optimum_upper,
         std::optional<double> oracle, std::optional<double> tokens, bool policy_is_optimum, bool float_gains,
         const std::string& policy_name) {
        greedy::HeadMasses masses;
        masses.policy_name = policy_name;
        masses.policy = policy;
        masses.policy_is_optimum = policy_is_optimum;
        masses.optimum = optimum;
        masses.optimum_upper = optimum_upper;
        masses.oracle = oracle;
        masses.tokens = tokens;
        return greedy::mass_order_violations(masses, greedy::mass_order_slack(float_gains));
      },
      "policy"_a = nb::none(), "optimum"_a = nb::none(), "optimum_upper"_a = nb::none(), "oracle"_a = nb::none(),
      "tokens"_a = nb::none(), "policy_is_optimum"_a = false, "float_gains"_a = false, "policy_name"_a = "policy",
      "The relations of policy <= OPT <= sum U <= tokens that one head's masses (one scale, one budget) break, as "
      "`subevict simulate` checks them (the library's one order check, at the slack of the optimum's precision: "
      "float_gains for an optimum on float-rounded gains); e.g. ['h2o > OPT']; [] when every relation holds. A mass "
      "left None is not checked; optimum_upper: OPT known within [optimum, optimum_upper]; policy_is_optimum: the "
      "policy replays the optimum's schedule and must equal OPT.");
  m.def("policy_names", &greedy::spec_policy_names, "The built-in policies' names (simulate --list-policies).");
  m.def(
      "policy_parameters",
      [](const std::string& name) {
        nb::list out;
        for (const greedy::PolicyParameter& p : greedy::policy_parameters(name)) {
          nb::dict d;
          d["key"] = p.key;
          d["meaning"] = p.meaning;
          d["default"] = p.default_value;
          out.append(d);
        }
        return out;
      },
      "name"_a, "The parameters of a built-in policy: [{'key', 'meaning', 'default'}].");
}

}  // namespace subevict::python
