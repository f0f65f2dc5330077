// The static set functions (facility location, weighted coverage, modular), the greedy
// optimizers and the exact optima, with `subevict optimum`'s rule for the bound the ratio is
// measured against.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <optional>

#include "bindings.hpp"
#include "core/input_error.hpp"
#include "greedy/exact/branch_and_bound.hpp"
#include "greedy/exact/exhaustive.hpp"
#include "greedy/exact/facility_location_bound.hpp"
#include "greedy/exact/integer_program.hpp"
#include "greedy/functions/facility_location.hpp"
#include "greedy/functions/modular.hpp"
#include "greedy/functions/set_function.hpp"
#include "greedy/functions/weighted_coverage.hpp"
#include "greedy/optimizers/lazy_greedy.hpp"
#include "greedy/optimizers/naive_greedy.hpp"
#include "greedy/optimizers/online_bound.hpp"
#include "greedy/optimizers/stochastic_greedy.hpp"

namespace subevict::python {

using namespace nb::literals;
using greedy::Element;
using greedy::Selection;
using greedy::SetFunction;

namespace {

nb::dict selection_dict(Selection&& s) {
  nb::dict d;
  d["set"] = std::move(s.set);
  d["value"] = s.value;
  d["upper_bound"] = s.upper_bound;
  d["optimal"] = s.optimal;
  d["oracle_calls"] = s.oracle_calls;
  d["nodes"] = s.nodes;
  d["seconds"] = s.seconds;
  return d;
}

std::vector<double> checked_vector(const AnyArray& a, const char* source, const char* field) {
  const double* data = checked_data<double>(a, 1, source, field);
  std::vector<double> out(data, data + a.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i]) || out[i] < 0) {
      throw InputError(source, std::string(field) + "[" + std::to_string(i) + "]", "a finite value >= 0",
                       std::to_string(out[i]));
    }
  }
  return out;
}

void check_k(const SetFunction& f, std::size_t k, const char* caller) {
  if (k > f.ground_size()) {
    throw InputError(caller, "k", "0 <= k <= n = " + std::to_string(f.ground_size()), std::to_string(k));
  }
}

/// A greedy run as `subevict optimum` makes it: "greedy" naive, "stochastic", else lazy; the online
/// bound at the greedy set when the method computes none.
Selection run_greedy(const SetFunction& f, std::size_t k, const std::string& method, double epsilon,
                     std::uint64_t seed) {
  Selection s;
  if (method == "greedy") {
    s = greedy::naive_greedy(f, {k});
  } else if (method == "stochastic") {
    s = greedy::stochastic_greedy(f, {k, epsilon, seed});
  } else {
    s = greedy::lazy_greedy(f, {k});
  }
  if (!std::isfinite(s.upper_bound) && f.monotone_submodular()) {
    auto state = f.empty_state();
    for (Element e : s.set) state->add(e);
    s.upper_bound = greedy::online_bound(*state, k, s.oracle_calls);
  }
  return s;
}

}  // namespace

void bind_set_functions(nb::module_& m) {
  nb::class_<SetFunction>(m, "SetFunction",
                          "A set function f over the ground set {0..n-1} (immutable). Made by facility_location(), "
                          "weighted_coverage() or modular().")
      .def_prop_ro("ground_size", &SetFunction::ground_size, "n")
      .def_prop_ro("name", &SetFunction::name)
      .def_prop_ro("monotone_submodular", &SetFunction::monotone_submodular)
      .def(
          "__call__",
          [](const SetFunction& f, const std::vector<Element>& set) {
            std::vector<bool> seen(f.ground_size(), false);
            for (Element e : set) {
              if (e >= f.ground_size() || seen[e]) {
                throw InputError(f.name(), "set", "distinct elements < n = " + std::to_string(f.ground_size()),
                                 std::to_string(e));
              }
              seen[e] = true;
            }
            return f.evaluate(set);
          },
          "set"_a, "f(set) for distinct elements < n.");

  m.def(
      "facility_location",
      [](const AnyArray& similarity) -> std::unique_ptr<SetFunction> {
        return std::make_unique<greedy::FacilityLocation>(to_matrix(similarity, "facility_location", "similarity"));
      },
      "similarity"_a,
      "Facility location f(S) = sum_i max_{j in S} sim_ij: similarity float64 (clients x candidates), >= 0.");
  m.def(
      "weighted_coverage",
      [](const AnyArray& incidence, std::optional<AnyArray> weights) -> std::unique_ptr<SetFunction> {
        const Eigen::MatrixXd a = to_matrix(incidence, "weighted_coverage", "incidence");
        const std::size_t items = std::size_t(a.rows()), sets = std::size_t(a.cols());
        std::vector<double> w(items, 1.0);
        if (weights) {
          w = checked_vector(*weights, "weighted_coverage", "weights");
          if (w.size() != items) {
            throw InputError("weighted_coverage", "weights", "one weight per item (" + std::to_string(items) + ")",
                             std::to_string(w.size()));
          }
        }
        std::vector<std::vector<std::size_t>> lists(sets);
        for (std::size_t u = 0; u < items; ++u) {
          for (std::size_t j = 0; j < sets; ++j) {
            if (a(Eigen::Index(u), Eigen::Index(j)) < 0) {
              throw InputError("weighted_coverage", "incidence", "entries >= 0", "a negative entry");
            }
            if (a(Eigen::Index(u), Eigen::Index(j)) > 0) lists[j].push_back(u);
          }
        }
        return std::make_unique<greedy::WeightedCoverage>(std::move(w), lists);
      },
      "incidence"_a, "weights"_a = nb::none(),
      "Weighted coverage: incidence float64 (items x candidate sets; entry > 0: the set holds the item), "
      "weights float64 per item (default 1). f(S) = total weight of the items covered.");
  m.def(
      "modular",
      [](const AnyArray& weights) -> std::unique_ptr<SetFunction> {
        return std::make_unique<greedy::Modular>(checked_vector(weights, "modular", "weights"));
      },
      "weights"_a, "The modular function f(S) = sum_{j in S} w_j (weights float64, >= 0).");

  m.def(
      "greedy",
      [](const SetFunction& f, std::size_t k, const std::string& method, double epsilon, std::uint64_t seed) {
        check_k(f, k, "greedy");
        if (method != "greedy" && method != "lazy" && method != "stochastic") {
          throw InputError("greedy", "method", "greedy, lazy or stochastic", method);
        }
        nb::gil_scoped_release release;
        Selection s = run_greedy(f, k, method, epsilon, seed);
        nb::gil_scoped_acquire gil;
        return selection_dict(std::move(s));
      },
      "f"_a, "k"_a, "method"_a = "lazy", "epsilon"_a = 0.01, "seed"_a = 0,
      "A greedy selection of k elements ('greedy': naive, 'lazy': the same set with fewer oracle calls, "
      "'stochastic': epsilon, seed). Returns {'set' (in the order picked), 'value', 'upper_bound' (the online "
      "bound for monotone submodular f, else inf), 'optimal', 'oracle_calls', 'nodes', 'seconds'}.");

  m.def(
      "exact_optimum",
      [](const SetFunction& f, std::size_t k, const std::string& method, double time_limit, std::uint64_t node_limit) {
        check_k(f, k, "exact_optimum");
        const auto* facility = dynamic_cast<const greedy::FacilityLocation*>(&f);
        const auto* coverage = dynamic_cast<const greedy::WeightedCoverage*>(&f);
        if (method != "bnb" && method != "cbc" && method != "exhaustive") {
          throw InputError("exact_optimum", "method", "bnb, cbc or exhaustive", method);
        }
        if (method == "cbc" && facility == nullptr && coverage == nullptr) {
          throw InputError("exact_optimum", "method", "bnb or exhaustive for " + f.name() +
                                                          " (cbc solves facility location and weighted coverage)",
                           method);
        }
        Selection s;
        {
          nb::gil_scoped_release release;
          if (method == "bnb") {
            // As `subevict optimum --method bnb`: warm-started from lazy greedy, the Lagrangian bound
            // for facility location.
            greedy::BranchAndBoundOptions options;
            options.node_limit = node_limit;
            options.time_limit_seconds = time_limit;
            options.initial_set = greedy::lazy_greedy(f, {k}).set;
            std::optional<greedy::FacilityLocationBound> lagrangian;
            if (facility != nullptr) {
              lagrangian.emplace(*facility);
              options.node_bound = &*lagrangian;
              options.pairwise_bound = false;
            }
            s = greedy::branch_and_bound(f, k, options);
          } else if (method == "cbc") {
            const greedy::IntegerProgramOptions options{time_limit, false};
            s = facility != nullptr ? greedy::facility_location_ip(*facility, k, options)
                                    : greedy::weighted_coverage_ip(*coverage, k, options);
          } else {
            s = greedy::exhaustive_optimum(f, {k});
          }
        }
        return selection_dict(std::move(s));
      },
      "f"_a, "k"_a, "method"_a = "bnb", "time_limit"_a = 0.0, "node_limit"_a = 0,
      "OPT_k = max_{|S| <= k} f(S): 'bnb' (branch and bound, as `subevict optimum`), 'cbc' (integer program), "
      "'exhaustive'. 'optimal' says whether it is proven (limits: 0 = none); 'upper_bound' is proven either way.");
}

}  // namespace subevict::python
