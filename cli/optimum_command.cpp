// `subevict optimum`: greedy against the optimum (or a certified bound) of a monotone submodular
// function: facility location from a similarity .npy or an OR-Library p-median file, or weighted
// coverage from an incidence .npy.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "core/input_error.hpp"
#include "core/npy.hpp"
#include "core/number_text.hpp"
#include "core/progress.hpp"
#include "greedy/exact/branch_and_bound.hpp"
#include "greedy/exact/exhaustive.hpp"
#include "greedy/functions/facility_location.hpp"
#include "greedy/exact/facility_location_bound.hpp"
#include "greedy/exact/integer_program.hpp"
#include "greedy/optimizers/lazy_greedy.hpp"
#include "greedy/optimizers/naive_greedy.hpp"
#include "greedy/optimizers/online_bound.hpp"
#include "greedy/functions/pmedian.hpp"
#include "greedy/optimizers/stochastic_greedy.hpp"
#include "greedy/functions/weighted_coverage.hpp"

namespace subevict::cli {
namespace {

using greedy::Selection;

struct OptimumArgs {
  std::string function = "facility-location";
  std::string similarity;
  std::string coverage;
  std::string weights;
  std::string pmed;
  std::size_t k = 0;
  std::string method = "bnb";
  double time_limit = 0.0;
  std::uint64_t node_limit = 0;
  double epsilon = 0.01;
  std::uint64_t seed = 0;
  std::string json;
  bool quiet = false;
};

/// The function under study, with what the report needs to know about its origin.
struct Problem {
  std::unique_ptr<greedy::SetFunction> function;
  std::string source;
  std::optional<greedy::PMedianInstance> pmedian;
  std::optional<double> published_optimum;  // p-median, when pmedopt.txt lists the file
};

/// Weighted coverage from an incidence matrix (items x candidates; item u is in set j iff the
/// entry is > 0) and optional item weights (1-D, one per item; all 1 without the file).
std::unique_ptr<greedy::SetFunction> read_coverage(const std::string& path,
                                                   const std::string& weights_path) {
  const Tensor<double> incidence = read_npy<double>(path);
  if (incidence.shape.size() != 2 || incidence.shape[0] == 0 || incidence.shape[1] == 0) {
    throw InputError(path, "shape", "a non-empty 2-D incidence matrix (items x candidate sets)");
  }
  const std::size_t items = incidence.shape[0];
  const std::size_t sets = incidence.shape[1];
  std::vector<double> weights(items, 1.0);
  if (!weights_path.empty()) {
    const Tensor<double> w = read_npy<double>(weights_path);
    if (w.shape.size() != 1 || w.shape[0] != items) {
      throw InputError(weights_path, "shape", "a 1-D vector of " + std::to_string(items) +
                                                  " item weights (the rows of " + path + ")");
    }
    for (std::size_t u = 0; u < items; ++u) {
      if (w.data[u] < 0.0) {
        throw InputError(weights_path, "weight " + std::to_string(u), "a nonnegative weight",
                         std::to_string(w.data[u]));
      }
    }
    weights = w.data;
  }
  std::vector<std::vector<std::size_t>> lists(sets);
  for (std::size_t u = 0; u < items; ++u) {
    for (std::size_t j = 0; j < sets; ++j) {
      const double x = incidence.data[u * sets + j];
      if (x < 0.0) {
        throw InputError(path, "entry (" + std::to_string(u) + ", " + std::to_string(j) + ")",
                         "a nonnegative incidence", std::to_string(x));
      }
      if (x > 0.0) lists[j].push_back(u);
    }
  }
  return std::make_unique<greedy::WeightedCoverage>(std::move(weights), lists);
}

Problem read_problem(OptimumArgs& args) {
  Problem problem;
  if (!args.pmed.empty()) {
    if (!args.similarity.empty() || !args.coverage.empty()) {
      throw InputError("--pmed", "input", "no --similarity or --coverage with --pmed");
    }
    problem.pmedian = greedy::read_pmedian(args.pmed);
    problem.function = std::make_unique<greedy::FacilityLocation>(
        greedy::to_facility_location(*problem.pmedian));
    problem.source = args.pmed;
    args.function = "facility-location";
    if (args.k == 0) args.k = problem.pmedian->p;
    const auto table = std::filesystem::path(args.pmed).parent_path() / "pmedopt.txt";
    if (args.k == problem.pmedian->p && std::filesystem::exists(table)) {
      const auto optima = greedy::read_pmedian_optima(table.string());
      const auto found = optima.find(std::filesystem::path(args.pmed).stem().string());
      if (found != optima.end()) problem.published_optimum = found->second;
    }
  } else if (args.function == "facility-location") {
    if (args.similarity.empty()) {
      throw InputError("--similarity", "input", "a similarity .npy for facility location (or --pmed)");
    }
    problem.function =
        std::make_unique<greedy::FacilityLocation>(greedy::FacilityLocation::from_npy(args.similarity));
    problem.source = args.similarity;
  } else if (args.function == "weighted-coverage") {
    if (args.coverage.empty()) {
      throw InputError("--coverage", "input", "an incidence .npy for weighted coverage");
    }
    problem.function = read_coverage(args.coverage, args.weights);
    problem.source = args.coverage;
  } else {
    throw InputError("--function", "value", "facility-location or weighted-coverage", args.function);
  }
  const std::size_t n = problem.function->ground_size();
  if (args.k == 0 || args.k > n) {
    throw InputError("-k", "value", "1 <= k <= n = " + std::to_string(n) + " (candidates of " +
                                        problem.source + ")",
                     std::to_string(args.k));
  }
  return problem;
}

/// The greedy run the ratio is measured on: naive for `greedy`, stochastic for `stochastic`, lazy
/// (the same selection as naive, fewer oracle calls) otherwise. Its upper_bound is the online
/// bound at the greedy set when the method does not compute one.
Selection run_greedy(const greedy::SetFunction& f, const OptimumArgs& args) {
  Selection s;
  if (args.method == "greedy") {
    s = greedy::naive_greedy(f, {args.k});
  } else if (args.method == "stochastic") {
    s = greedy::stochastic_greedy(f, {args.k, args.epsilon, args.seed});
  } else {
    s = greedy::lazy_greedy(f, {args.k});
  }
  if (!std::isfinite(s.upper_bound)) {
    auto state = f.empty_state();
    for (greedy::Element e : s.set) state->add(e);
    s.upper_bound = greedy::online_bound(*state, args.k, s.oracle_calls);
  }
  return s;
}

/// True for the methods that search for the optimum (bnb, cbc, exhaustive); the others run greedy
/// alone.
bool searches_optimum(const std::string& method) {
  return method == "bnb" || method == "cbc" || method == "exhaustive";
}

/// The search of a method that searches_optimum, or nothing for the others.
std::optional<Selection> run_exact(const Problem& problem, const OptimumArgs& args,
                                   const Selection& greedy_run) {
  if (!searches_optimum(args.method)) return std::nullopt;
  const greedy::SetFunction& f = *problem.function;
  const auto* facility = dynamic_cast<const greedy::FacilityLocation*>(&f);
  const auto* coverage = dynamic_cast<const greedy::WeightedCoverage*>(&f);
  if (args.method == "bnb") {
    greedy::BranchAndBoundOptions options;
    options.node_limit = args.node_limit;
    options.time_limit_seconds = args.time_limit;
    options.initial_set = greedy_run.set;
    std::optional<greedy::FacilityLocationBound> lagrangian;
    if (facility != nullptr) {
      lagrangian.emplace(*facility);
      options.node_bound = &*lagrangian;
      options.pairwise_bound = false;  // the Lagrangian bound dominates in practice
    }
    return greedy::branch_and_bound(f, args.k, options);
  }
  if (args.method == "cbc") {
    const greedy::IntegerProgramOptions options{args.time_limit, false};
    return facility != nullptr ? greedy::facility_location_ip(*facility, args.k, options)
                               : greedy::weighted_coverage_ip(*coverage, args.k, options);
  }
  if (args.method == "exhaustive") return greedy::exhaustive_optimum(f, {args.k});
  throw InputError("--method", "value", "greedy, lazy, stochastic, bnb, cbc or exhaustive", args.method);
}

nlohmann::json to_json(const Selection& s) {
  nlohmann::json doc = {{"set", s.set},          {"value", s.value},
                        {"optimal", s.optimal},  {"oracle_calls", s.oracle_calls},
                        {"nodes", s.nodes},      {"seconds", s.seconds}};
  doc["upper_bound"] = std::isfinite(s.upper_bound) ? nlohmann::json(s.upper_bound) : nlohmann::json();
  return doc;
}

void run(OptimumArgs args) {
  if (args.method != "greedy" && args.method != "lazy" && args.method != "stochastic" &&
      args.method != "bnb" && args.method != "cbc" && args.method != "exhaustive") {
    throw InputError("--method", "value", "greedy, lazy, stochastic, bnb, cbc or exhaustive", args.method);
  }
  const Problem problem = read_problem(args);
  const greedy::SetFunction& f = *problem.function;
  const std::string greedy_name =
      args.method == "greedy" || args.method == "stochastic" ? args.method : std::string("lazy");
  const bool searches = searches_optimum(args.method);
  Selection greedy_run;
  std::optional<Selection> exact;
  {
    // Phases, not oracle calls: the search's length is unknown in advance, so in a log its phase
    // shows as the heartbeat's "still running" line at least every 30 s. Closed before the report
    // is printed (on a terminal the redrawn line is ended first).
    Progress progress("optimum", searches ? 2 : 1, "phases", args.quiet);
    progress.advance(0, "(" + greedy_name + " greedy)");
    greedy_run = run_greedy(f, args);
    progress.advance(1, "(" + greedy_name + " greedy, " + significant_digits(greedy_run.seconds, 3) + " s)");
    if (searches) {
      progress.advance(0, "(" + args.method + ")");
      exact = run_exact(problem, args, greedy_run);
      progress.advance(1, "(" + args.method + ", " + significant_digits(exact->seconds, 3) + " s)");
    }
  }

  // OPT if proven, else the best proven upper bound: the ratio is then a lower bound.
  const bool proven = exact.has_value() && exact->optimal;
  const double best_value = exact.has_value() ? std::max(exact->value, greedy_run.value) : greedy_run.value;
  const double upper = proven ? exact->value
                              : std::min(greedy_run.upper_bound,
                                         exact.has_value() ? exact->upper_bound : greedy_run.upper_bound);
  const double ratio = upper > 0.0 ? greedy_run.value / upper : 1.0;

  std::printf("%s on %s: n = %zu, k = %zu\n", f.name().c_str(), problem.source.c_str(),
              f.ground_size(), args.k);
  std::printf("greedy (%s): value %.10g, oracle calls %llu, %.4f s, online bound %.10g\n",
              greedy_name.c_str(), greedy_run.value, static_cast<unsigned long long>(greedy_run.oracle_calls),
              greedy_run.seconds, greedy_run.upper_bound);
  if (exact.has_value()) {
    std::printf("%s: value %.10g (%s), upper bound %.10g, nodes %llu, oracle calls %llu, %.4f s\n",
                args.method.c_str(), exact->value, exact->optimal ? "optimal" : "not proven",
                exact->upper_bound, static_cast<unsigned long long>(exact->nodes),
                static_cast<unsigned long long>(exact->oracle_calls), exact->seconds);
  }
  std::printf("ratio greedy / %s: %.6f\n", proven ? "OPT" : "upper bound (a lower bound on the ratio)",
              ratio);
  nlohmann::json doc = {{"function", f.name()},
                        {"source", problem.source},
                        {"n", f.ground_size()},
                        {"k", args.k},
                        {"method", args.method},
                        {"greedy", to_json(greedy_run)},
                        {"optimum", exact.has_value() ? to_json(*exact) : nlohmann::json()},
                        {"opt_proven", proven},
                        {"best_value", best_value},
                        {"upper_bound", upper},
                        {"ratio", ratio}};
  if (problem.pmedian.has_value()) {
    const double nD = double(problem.pmedian->n) * greedy::max_distance(*problem.pmedian);
    nlohmann::json pm = {{"greedy", nD - greedy_run.value}, {"best", nD - best_value},
                         {"lower_bound", nD - upper}, {"offset_nD", nD}};
    std::printf("p-median: greedy %.10g, best %.10g%s, lower bound %.10g", nD - greedy_run.value,
                nD - best_value, proven ? " (optimal)" : "", nD - upper);
    if (problem.published_optimum.has_value()) {
      std::printf(", published optimum %.10g", *problem.published_optimum);
      pm["published_optimum"] = *problem.published_optimum;
    }
    std::printf("\n");
    doc["pmedian"] = pm;
  }
  if (!args.json.empty()) write_json(args.json, doc);
}

}  // namespace

void add_optimum_command(CLI::App& app) {
  auto args = std::make_shared<OptimumArgs>();
  CLI::App* cmd = app.add_subcommand(
      "optimum", "Greedy against the optimum (or a certified bound) of a submodular function");
  cmd->add_option("--function", args->function, "facility-location | weighted-coverage")
      ->capture_default_str();
  cmd->add_option("--similarity", args->similarity,
                  "Facility location: 2-D .npy, rows = clients, columns = candidates (sim >= 0)");
  cmd->add_option("--coverage", args->coverage,
                  "Weighted coverage: 2-D .npy, rows = items, columns = candidate sets (entry > 0: "
                  "the set holds the item)");
  cmd->add_option("--weights", args->weights, "Weighted coverage: 1-D .npy of item weights (default 1)");
  cmd->add_option("--pmed", args->pmed,
                  "OR-Library p-median file (facility location with sim = D - d; k defaults to p)");
  cmd->add_option("-k", args->k, "Cardinality budget (1 <= k <= n)");
  cmd->add_option("--method", args->method, "greedy | lazy | stochastic | bnb | cbc | exhaustive")
      ->capture_default_str();
  cmd->add_option("--time-limit", args->time_limit, "Seconds for bnb and cbc (0: none)");
  cmd->add_option("--node-limit", args->node_limit, "Nodes for bnb (0: none)");
  cmd->add_option("--epsilon", args->epsilon, "Stochastic greedy's epsilon")->capture_default_str();
  cmd->add_option("--seed", args->seed, "Stochastic greedy's seed")->capture_default_str();
  cmd->add_option("--json", args->json, "Also write the report as JSON");
  cmd->add_flag("--quiet", args->quiet, "No progress on stderr");
  cmd->callback([args]() { run(*args); });
}

}  // namespace subevict::cli
