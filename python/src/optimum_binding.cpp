// The offline optimum (min-cost flow), the per-step oracle U_i and the gain matrix W of one
// (layer, KV head): every call into greedy/eviction/optimum/ goes through this file (optimum.hpp).
#include <algorithm>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "core/input_error.hpp"
#include "greedy/eviction/budgets/budget_allocation.hpp"
#include "greedy/eviction/budgets/budget_curve.hpp"
#include "greedy/eviction/optimum/offline_optimum.hpp"
#include "greedy/eviction/optimum/shared_columns.hpp"
#include "greedy/eviction/optimum/shared_optimum.hpp"
#include "greedy/eviction/policies/lookahead.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"
#include "greedy/eviction/process/triangular_gains.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "optimum.hpp"

namespace subevict::python {

using namespace nb::literals;

namespace {

greedy::PivotRule parse_pivot(const std::string& name) {
  if (name == "block-search") return greedy::PivotRule::kBlockSearch;
  if (name == "first-eligible") return greedy::PivotRule::kFirstEligible;
  if (name == "best-eligible") return greedy::PivotRule::kBestEligible;
  if (name == "candidate-list") return greedy::PivotRule::kCandidateList;
  if (name == "altering-list") return greedy::PivotRule::kAlteringList;
  throw InputError("offline_optimum", "pivot",
                   "block-search, first-eligible, best-eligible, candidate-list or altering-list", name);
}

}  // namespace

std::vector<greedy::HeadEvaluation> head_optima(const Workload& workload, int layer, int kv_head,
                                                const std::vector<int>& budgets, greedy::OptimumMode mode,
                                                double relative_gap, bool oracle_sets,
                                                std::vector<std::vector<std::vector<int>>> schedules,
                                                std::vector<int> optimum_rows, bool oracle) {
  greedy::HeadEvaluationOptions options;
  options.schedules = std::move(schedules);
  options.optimum_rows = std::move(optimum_rows);
  options.optimum = mode;
  options.relative_gap = relative_gap;
  options.oracle_sets = oracle_sets;
  options.oracle = oracle;
  return greedy::evaluate_head_budgets(workload, layer, kv_head, {}, budgets, options);
}

nb::dict schedule_dict(greedy::ScheduleSummary&& s, double scale) {
  nb::dict d;
  d["status"] = greedy::to_string(s.status);
  d["total"] = s.value / scale;
  d["upper_bound"] = s.upper_bound / scale;
  Eigen::VectorXd mass = s.step_mass / scale;
  d["step_mass"] = owned_array(std::move(mass));
  d["last_step"] = owned_array<int>(std::move(s.last_step));
  d["arcs"] = s.model_size;
  d["nodes"] = s.nodes;
  d["seconds"] = s.seconds;
  d["message"] = s.message;
  return d;
}

nb::dict oracle_dict(greedy::StepOracle&& o, double scale) {
  nb::dict d;
  d["total"] = o.total / scale;
  Eigen::VectorXd per_step = o.per_step / scale;
  d["per_step"] = owned_array(std::move(per_step));
  if (!o.chosen.empty()) {
    nb::list chosen;
    for (std::vector<int>& c : o.chosen) chosen.append(owned_array<int>(std::move(c)));
    d["chosen"] = chosen;
  }
  return d;
}

void bind_optimum(nb::module_& m) {
  m.def(
      "gain_matrix",
      [](const Workload& w, int layer, int kv_head, bool weight_by_value_norm) {
        const greedy::HeadGroup group = [&] {
          try {
            return greedy::head_group(w, layer, kv_head);
          } catch (const std::out_of_range& e) {
            throw InputError("gain_matrix", "layer, kv_head", "indices inside the workload", e.what());
          }
        }();
        Eigen::MatrixXd gains;
        {
          nb::gil_scoped_release release;
          gains = greedy::gain_matrix(group, weight_by_value_norm);
        }
        return matrix_array(gains);
      },
      "workload"_a, "layer"_a, "kv_head"_a, "weight_by_value_norm"_a = false,
      "W (n x n float64) of one (layer, KV head): the exact causal attention of its g query heads, summed (times "
      "||v_j|| per token when weight_by_value_norm). The objective every offline solver maximizes.");

  m.def(
      "offline_optimum",
      [](const AnyArray& gains_array, int budget, const std::string& pivot, bool prune_dominated_arcs, bool certify,
         bool process_form) {
        greedy::OfflineOptimumOptions options;
        options.pivot = parse_pivot(pivot);
        options.prune_dominated_arcs = prune_dominated_arcs;
        options.certify = certify;
        options.process_form = process_form;
        const Eigen::MatrixXd gains = to_matrix(gains_array, "offline_optimum", "gains");
        greedy::ScheduleSummary summary;
        {
          nb::gil_scoped_release release;
          summary = greedy::offline_optimum(gains, budget, options);
        }
        return schedule_dict(std::move(summary), 1.0);
      },
      "gains"_a, "budget"_a, "pivot"_a = "block-search", "prune_dominated_arcs"_a = true, "certify"_a = true,
      "process_form"_a = true,
      "The exact offline optimum OPT of the irreversible eviction process for gains W (n x n float64, "
      "lower-triangular, finite, >= 0: gain_matrix()) at cache budget k, as a min-cost flow. Returns {'status', "
      "'total' (OPT), 'upper_bound' (certified: total <= OPT <= upper_bound), 'step_mass' (r_i per step), "
      "'last_step' (t_j: the last step token j is cached; j - 1 when never), 'arcs', 'nodes', 'seconds', "
      "'message'}.");

  m.def(
      "budget_curve",
      [](const Workload& w, int layer, int kv_head, int max_budget, double gap, int threads) {
        if (layer < 0 || layer >= w.shape().layers || kv_head < 0 || kv_head >= w.shape().kv_heads) {
          throw InputError("budget_curve", "layer, kv_head",
                           "indices inside the workload (" + std::to_string(w.shape().layers) + " layers, " +
                               std::to_string(w.shape().kv_heads) + " KV heads)",
                           std::to_string(layer) + ", " + std::to_string(kv_head));
        }
        greedy::BudgetCurve curve;
        {
          nb::gil_scoped_release release;
          curve = greedy::optimum_budget_curve(w, layer, kv_head, max_budget, gap, {}, threads);
        }
        const double g = curve.heads;
        Eigen::VectorXd total(curve.points.size()), upper(curve.points.size());
        std::vector<int> budget(curve.points.size());
        nb::list status;
        for (std::size_t i = 0; i < curve.points.size(); ++i) {
          budget[i] = curve.points[i].budget;
          total[Eigen::Index(i)] = curve.points[i].value / g;
          upper[Eigen::Index(i)] = curve.points[i].upper_bound / g;
          status.append(greedy::to_string(curve.points[i].status));
        }
        nb::dict d;
        d["budget"] = owned_array<int>(std::move(budget));
        d["total"] = owned_array(std::move(total));
        d["upper_bound"] = owned_array(std::move(upper));
        d["status"] = status;
        d["group_size"] = curve.heads;
        d["tokens"] = curve.tokens;
        d["seconds"] = curve.seconds;
        return d;
      },
      "workload"_a, "layer"_a, "kv_head"_a, "max_budget"_a, "gap"_a = 0.0, "threads"_a = 1,
      "The budget curve OPT(k), k = 1..max_budget, of one (layer, KV head) as subevict simulate --budget-curve "
      "computes it, in simulate's units (masses / g). gap = 0: exact at every budget by successive shortest "
      "paths ('status' 'optimal'); gap > 0: the implicit-arc column generation stops each budget at that "
      "relative gap, OPT(k) in [total, "
      "upper_bound]. Returns {'budget' (int32), 'total', 'upper_bound' (float64), 'status', 'group_size', "
      "'tokens', 'seconds'}. Concave and nondecreasing in k when exact. threads >= 1: the exact curve's budgets "
      "in that many runs on as many threads (each run of 256 budgets at least), the same points.");

  m.def(
      "allocate",
      [](const std::vector<std::vector<double>>& curves, long long total, const std::string& by,
         const std::optional<std::vector<int>>& layers, const std::optional<int>& low) {
        if (by != "head" && by != "layer" && by != "classes") {
          throw InputError("allocate", "by", "'head', 'layer' or 'classes'", "'" + by + "'");
        }
        if ((by == "layer") != layers.has_value()) {
          throw InputError("allocate", "layers", "each head's layer with by='layer', and only then",
                           layers ? "layers with by='" + by + "'" : "none");
        }
        if ((by == "classes") != low.has_value()) {
          throw InputError("allocate", "low", "the streaming heads' budget with by='classes', and only then",
                           low ? "low with by='" + by + "'" : "none");
        }
        const greedy::BudgetAllocation a =
            by == "head"    ? greedy::allocate_budget(curves, total, "allocate")
            : by == "layer" ? greedy::allocate_layer_budgets(curves, *layers, total, "allocate")
                            : greedy::allocate_two_classes(curves, *low, total, "allocate");
        nb::dict d;
        d["budgets"] = owned_array<int>(std::vector<int>(a.budgets));
        d["value"] = a.value;
        return d;
      },
      "curves"_a, "total"_a, "by"_a = "head", "layers"_a = nb::none(), "low"_a = nb::none(),
      "The optimal static allocation of `total` cache slots over heads (subevict allocate): curves[h][k - 1] = "
      "OPT_h(k) for k = 1..K_h (budget_curve()['total'] of each head), each nondecreasing and concave. "
      "by='head': each head its own budget; by='layer': every head of a layer the same (layers[h] = head h's "
      "layer, every layer with as many heads, every curve as long, total a multiple of the heads per layer); "
      "by='classes': each head `low` slots or the curves' common length K (streaming and full heads; slots that "
      "fill no whole full head stay unused). Returns {'budgets' (int32), 'value' (sum of OPT_h(k_h), the largest "
      "the form reaches)}. Exact; a curve that is not concave, or a total the form cannot split, raises InputError.");

  m.def(
      "shared_optimum",
      [](const std::vector<AnyArray>& gains_arrays, long long total, const std::string& method, double gap,
         double max_seconds, int threads) {
        if (method != "auto" && method != "explicit" && method != "columns") {
          throw InputError("shared_optimum", "method", "'auto', 'explicit' or 'columns'", "'" + method + "'");
        }
        if (!(gap >= 0.0) || !(max_seconds >= 0.0)) {
          throw InputError("shared_optimum", "gap, max_seconds", "numbers >= 0",
                           std::to_string(gap) + ", " + std::to_string(max_seconds));
        }
        std::vector<Eigen::MatrixXd> gains;
        for (std::size_t h = 0; h < gains_arrays.size(); ++h) {
          gains.push_back(to_matrix(gains_arrays[h], "shared_optimum", "gains[" + std::to_string(h) + "]"));
        }
        const int n = gains.empty() ? 0 : int(gains.front().rows());
        const bool explicit_network =
            method == "explicit" || (method == "auto" && greedy::shared_network_bytes(gains.size(), n) <=
                                                             greedy::kExplicitSharedNetworkLimitBytes);
        greedy::SharedOptimum shared;
        if (explicit_network) {
          nb::gil_scoped_release release;
          shared = greedy::shared_optimum(gains, total);
        } else {
          std::vector<greedy::TriangularGains<double>> stored;
          for (std::size_t h = 0; h < gains.size(); ++h) {
            stored.push_back(greedy::TriangularGains<double>::from_dense(gains[h], "shared_optimum: gains[" +
                                                                                      std::to_string(h) + "]"));
            gains[h].resize(0, 0);  // the triangle holds it now
          }
          std::vector<const greedy::TriangularGains<double>*> pointers;
          for (const auto& g : stored) pointers.push_back(&g);
          greedy::SharedColumnOptions options;
          options.relative_gap = gap;
          options.max_seconds = max_seconds;
          options.threads = threads;
          nb::gil_scoped_release release;
          shared = greedy::shared_optimum_columns(pointers, total, options);
        }
        nb::list last_step;
        for (std::vector<int>& steps : shared.last_step) last_step.append(owned_array<int>(std::move(steps)));
        std::vector<int> occupancy(std::size_t(shared.occupancy.size()));
        Eigen::Map<Eigen::Matrix<int, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
            occupancy.data(), shared.occupancy.rows(), shared.occupancy.cols()) = shared.occupancy;
        const std::size_t rows = std::size_t(shared.occupancy.rows()), cols = std::size_t(shared.occupancy.cols());
        nb::dict d;
        d["status"] = greedy::to_string(shared.status);
        d["total"] = shared.value;
        d["upper_bound"] = shared.upper_bound;
        d["last_step"] = last_step;
        d["occupancy"] = owned_array<int>(std::move(occupancy), {rows, cols});
        d["arcs"] = shared.arcs;
        d["seconds"] = shared.seconds;
        d["method"] = explicit_network ? "explicit" : "columns";
        return d;
      },
      "gains"_a, "total"_a, "method"_a = "auto", "gap"_a = 1e-4, "max_seconds"_a = 0.0, "threads"_a = 0,
      "The exact offline optimum of one cache of `total` (head, token) entries shared by several heads that move "
      "in lockstep: gains is a list of n x n float64 gain matrices (gain_matrix(), one per head, all of one n). "
      "Uniform per-head optimum <= allocate(...)['value'] <= this optimum. method='explicit': the whole network "
      "(H n(n+1)/2 arcs, about 60 bytes each), optimal; 'columns': column generation on the implicit network "
      "(for many heads, e.g. a whole model), stopped once the certified relative gap is <= gap (0: at "
      "optimality) or after the round that ends past max_seconds (0: no limit), pricing on `threads` workers "
      "(0: all); 'auto' (default): explicit where its network needs at most 8 GB, as simulate --share. Returns "
      "{'status' ('optimal', or 'feasible' when stopped at a gap), 'total' (the schedule's value), 'upper_bound' "
      "(certified: total <= OPT <= upper_bound), 'last_step' (per head, t_j; j - 1 when never cached), "
      "'occupancy' (n x H int32: entries of head h cached after step i), 'arcs', 'seconds', 'method'}.");

  m.def(
      "step_oracle",
      [](const AnyArray& gains_array, int budget, bool keep_sets) {
        const Eigen::MatrixXd gains = to_matrix(gains_array, "step_oracle", "gains");
        greedy::StepOracle oracle;
        {
          nb::gil_scoped_release release;
          oracle = greedy::step_oracle(gains, budget, keep_sets);
        }
        return oracle_dict(std::move(oracle), 1.0);
      },
      "gains"_a, "budget"_a, "keep_sets"_a = false,
      "The per-step reversible oracle U_i = W_ii + (the k largest W_ij, j < i): an upper bound on every schedule, "
      "step by step. Returns {'total', 'per_step', 'chosen' (keep_sets: the chosen past tokens of each step)}.");

  m.def(
      "optimal_victims",
      [](const AnyArray& gains_array, const std::vector<int>& steps, const std::vector<int>& offsets,
         const std::vector<int>& tokens, int horizon) {
        const Eigen::MatrixXd gains = to_matrix(gains_array, "optimal_victims", "gains");
        greedy::validate_gains(gains, "optimal_victims");
        const int n = static_cast<int>(gains.rows());
        if (horizon < 1) throw InputError("optimal_victims", "horizon", "an integer >= 1", std::to_string(horizon));
        if (offsets.size() != steps.size() + 1 || offsets.front() != 0 || offsets.back() != int(tokens.size())) {
          throw InputError("optimal_victims", "offsets",
                           "len(steps) + 1 entries from 0 to len(tokens) (" + std::to_string(tokens.size()) + ")",
                           std::to_string(offsets.size()) + " entries");
        }
        std::vector<std::vector<greedy::Token>> members(steps.size());
        for (std::size_t s = 0; s < steps.size(); ++s) {
          if (steps[s] < 0 || steps[s] >= n || offsets[s + 1] <= offsets[s]) {
            throw InputError("optimal_victims", "steps[" + std::to_string(s) + "]",
                             "a step in [0, " + std::to_string(n) + ") with at least one member",
                             std::to_string(steps[s]));
          }
          members[s].assign(tokens.begin() + offsets[s], tokens.begin() + offsets[s + 1]);
          const greedy::Token lowest = *std::min_element(members[s].begin(), members[s].end());
          if (lowest < 0) {
            throw InputError("optimal_victims", "tokens of step " + std::to_string(steps[s]), "tokens >= 0",
                             std::to_string(lowest));
          }
        }
        std::vector<int> victims(steps.size());
        {
          nb::gil_scoped_release release;
          for (std::size_t s = 0; s < steps.size(); ++s) {
            try {
              victims[s] = greedy::lookahead_victim(gains, members[s], steps[s], horizon);
            } catch (const std::invalid_argument& e) {
              throw InputError("optimal_victims", "tokens of step " + std::to_string(steps[s]),
                               "distinct tokens <= the step", e.what());
            }
          }
        }
        return owned_array<int>(std::move(victims));
      },
      "gains"_a, "steps"_a, "offsets"_a, "tokens"_a, "horizon"_a,
      "Per recorded step s (a feature trace's steps, offsets, tokens: G_i at step i = steps[s] is "
      "tokens[offsets[s]:offsets[s+1]]), the member of G_i that the exact optimum of the next `horizon` steps, "
      "started from that cache, evicts at step i (greedy::lookahead_victim; horizon >= n - 1 - i: the exact "
      "optimal continuation of the whole run from that cache). int32 [S].");

  m.def(
      "schedule_value",
      [](const AnyArray& gains_array, const std::vector<int>& last_step) {
        const Eigen::MatrixXd gains = to_matrix(gains_array, "schedule_value", "gains");
        if (last_step.size() != std::size_t(gains.rows())) {
          throw InputError("schedule_value", "last_step", "one entry per token (" + std::to_string(gains.rows()) + ")",
                           std::to_string(last_step.size()));
        }
        for (std::size_t j = 0; j < last_step.size(); ++j) {
          if (last_step[j] < int(j) - 1 || last_step[j] >= int(last_step.size())) {
            throw InputError("schedule_value", "last_step[" + std::to_string(j) + "]",
                             "a step in [j - 1, n - 1]", std::to_string(last_step[j]));
          }
        }
        return greedy::schedule_value(gains, last_step);
      },
      "gains"_a, "last_step"_a,
      "The objective sum_i sum_{j in G_i} W_ij of a schedule given as last_step (t_j per token).");
}

}  // namespace subevict::python
