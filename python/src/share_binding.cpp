// The share study (greedy/eviction/budgets/share_study.hpp), as `subevict simulate --share` runs
// it: adaptive budget rules with scoring policies against the uniform, static and shared optima of
// one total budget, returned as plain Python data (subevict.share formats nothing).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "bindings.hpp"
#include "core/input_error.hpp"
#include "greedy/eviction/budgets/share_rule.hpp"
#include "greedy/eviction/budgets/share_study.hpp"
#include "greedy/eviction/evaluation/head_evaluation.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"

namespace subevict::python {

using namespace nb::literals;

namespace {

nb::object optional_float(const std::optional<double>& v) { return v ? nb::object(nb::float_(*v)) : nb::none(); }

/// The study as dicts and lists: heads, units and runs in the study's order.
nb::dict study_dict(const greedy::ShareStudy& s, int tokens) {
  nb::dict out;
  out["scope"] = s.model ? "model" : "layer";
  out["budget_size"] = s.budget;
  out["tokens"] = tokens;
  out["curve_length"] = s.optima.curve_length;
  out["static_capped"] = s.optima.capped;
  out["shared_note"] = s.optima.shared_note;
  nb::list heads;
  for (std::size_t x = 0; x < s.shares.heads.size(); ++x) {
    nb::dict h;
    h["layer"] = s.shares.heads[x].first;
    h["kv_head"] = s.shares.heads[x].second;
    h["uniform_opt"] = s.optima.uniform[x];
    h["static_budget"] = s.optima.allocation[x];
    h["static_opt"] = s.optima.fixed[x];
    heads.append(h);
  }
  nb::list units;
  for (std::size_t u = 0; u < s.shares.units.size(); ++u) {
    nb::dict d;
    d["name"] = s.unit_name(u);
    d["heads"] = s.shares.units[u];
    d["shared_opt"] = optional_float(s.optima.shared[u]);
    d["shared_bound"] = optional_float(s.optima.shared_bound[u]);
    d["shared_mean_slots"] = s.optima.shared_slots[u];
    units.append(d);
  }
  nb::list runs;
  for (const greedy::ShareRuleRun& r : s.runs) {
    nb::dict d;
    d["rule"] = r.rule;
    d["scorer"] = r.scorer;
    d["note"] = r.note;
    d["retained"] = r.mass;
    d["mean_slots"] = r.mean_slots;
    d["peak"] = r.peak;
    runs.append(d);
  }
  out["heads"] = heads;
  out["units"] = units;
  out["runs"] = runs;
  return out;
}

}  // namespace

void bind_share(nb::module_& m) {
  m.def(
      "_share",
      [](const Workload& w, const std::vector<int>& layers, double budget, const std::string& rules,
         const std::string& policies, const std::string& scope, const std::string& curves, double shared_seconds,
         int threads, std::uint64_t seed, bool quiet) {
        const std::string source = "share";
        if (scope != "layer" && scope != "model") throw InputError(source, "scope", "layer or model", scope);
        if (layers.empty()) throw InputError(source, "layers", "at least one layer", "none");
        for (int l : layers) {
          if (l < 0 || l >= w.shape().layers) {
            throw InputError(source, "layers", "layers in [0, " + std::to_string(w.shape().layers) + ")",
                             std::to_string(l));
          }
        }
        if (threads < 1) throw InputError(source, "threads", "an integer >= 1", std::to_string(threads));
        const int n = w.shape().tokens;
        greedy::ShareStudyOptions options;
        options.model = scope == "model";
        options.budget = greedy::budget_from_value(budget, source).resolve(n, 0);
        options.curves = curves;
        options.shared_seconds = shared_seconds;
        options.threads = threads;
        options.quiet = quiet;
        options.seed = seed;
        const std::vector<greedy::PolicySpec> scorers = greedy::parse_policy_list(policies, source, "policies", 16);
        for (const auto& spec : scorers) greedy::check_policy_budget(spec, n, options.budget, source, "policies");
        const std::vector<greedy::ShareRule> parsed = greedy::parse_share_rules(
            rules.empty() ? greedy::default_share_rules(options.model) : rules, source, "rules");
        greedy::ShareStudy study;
        {
          nb::gil_scoped_release release;
          study = greedy::share_study(w, layers, parsed, scorers, options);
        }
        return study_dict(study, n);
      },
      "workload"_a, "layers"_a, "budget"_a, "rules"_a, "policies"_a, "scope"_a, "curves"_a, "shared_seconds"_a,
      "threads"_a, "seed"_a, "quiet"_a, "The engine of subevict.share (see its docstring).");
}

}  // namespace subevict::python
