#include "greedy/eviction/evaluation/head_evaluation.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/input_error.hpp"
#include "core/number_text.hpp"
#include "core/tolerance.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/policies/lookahead.hpp"
#include "greedy/eviction/optimum/implicit_flow.hpp"
#include "greedy/eviction/optimum/streamed_flow.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"
#include "greedy/eviction/process/query_rows.hpp"
#include "greedy/eviction/process/streamed_gains.hpp"
#include "greedy/eviction/process/triangular_gains.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"

namespace subevict::greedy {

std::string to_string(OptimumMode mode) {
  switch (mode) {
    case OptimumMode::kNone: return "none";
    case OptimumMode::kOracle: return "oracle";
    case OptimumMode::kFlow: return "flow";
    case OptimumMode::kCertified: return "certified";
  }
  return "none";
}

OptimumMode parse_optimum_mode(const std::string& name, const std::string& source, const std::string& field) {
  if (name == "none") return OptimumMode::kNone;
  if (name == "oracle") return OptimumMode::kOracle;
  if (name == "flow") return OptimumMode::kFlow;
  if (name == "certified") return OptimumMode::kCertified;
  throw InputError(source, field, "none, flow, certified or oracle", name);
}

Budget budget_from_value(double value, const std::string& source) {
  if (!(value > 0.0) || !std::isfinite(value) || (value >= 1.0 && value != std::floor(value)) ||
      value > double(std::numeric_limits<int>::max())) {
    throw InputError(source, "budget", kBudgetExpectation, significant_digits(value, 10));
  }
  return value < 1.0 ? Budget::ratio_of_tokens(value) : Budget::absolute(int(value));
}

double parse_budget_value(const std::string& text, const std::string& source, const std::string& field) {
  const std::size_t first = text.find_first_not_of(" \t");
  const std::size_t last = text.find_last_not_of(" \t");
  const std::string item = first == std::string::npos ? "" : text.substr(first, last - first + 1);
  double value = 0.0;
  try {
    std::size_t used = 0;
    value = std::stod(item, &used);
    if (used != item.size()) throw std::invalid_argument("trailing text");
    (void)budget_from_value(value, source);
  } catch (const std::exception&) {  // not a number, out of range, or a value no budget takes
    throw InputError(source, field, kBudgetExpectation, text.empty() ? "an empty item" : text);
  }
  return value;
}

std::vector<double> parse_budget_list(const std::string& text, const std::string& source, const std::string& field) {
  std::vector<double> values;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    if (item.find_first_not_of(" \t") != std::string::npos) values.push_back(parse_budget_value(item, source, field));
    begin = end + 1;
  }
  return values;
}

std::unique_ptr<EvictionPolicy> make_named_policy(const std::string& name, int horizon) {
  if (name == "lookahead") return std::make_unique<LookaheadPolicy>(horizon);
  return make_policy(name);
}

HeadEvaluation evaluate_head(const Workload& workload, int layer, int kv_head,
                             const std::vector<std::string>& policies,
                             const HeadEvaluationOptions& options) {
  std::vector<PolicySpec> specs;
  for (const std::string& name : policies) {
    PolicySpec spec;
    spec.name = name;
    spec.horizon = options.horizon;
    specs.push_back(std::move(spec));
  }
  return evaluate_head(workload, layer, kv_head, specs, options);
}

HeadEvaluation evaluate_head(const Workload& workload, int layer, int kv_head,
                             const std::vector<PolicySpec>& policies,
                             const HeadEvaluationOptions& options) {
  return evaluate_head_budgets(workload, layer, kv_head, policies, {options.budget}, options).front();
}

namespace {

/// The solver options of a mode: certified stops at the requested gap.
ImplicitFlowOptions flow_options(const HeadEvaluationOptions& options) {
  ImplicitFlowOptions flow;
  if (options.optimum == OptimumMode::kCertified) flow.relative_gap = options.relative_gap;
  flow.on_round = options.on_optimum_round;
  return flow;
}

/// Each budget's optimum (or certified interval) into its evaluation, its schedule without the
/// tokens a sliding window no longer shows (the optimum may keep them at no gain).
void store_optima(const std::vector<ImplicitFlowResult>& optima, int window, std::vector<HeadEvaluation>& out) {
  for (std::size_t b = 0; b < optima.size(); ++b) {
    out[b].optimum = optima[b].summary;
    out[b].optimum.last_step = drop_outside_window(std::move(out[b].optimum.last_step), window);
    out[b].has_optimum = out[b].optimum.status == ScheduleStatus::kOptimal;
    out[b].has_interval = out[b].optimum.status != ScheduleStatus::kFailed;
  }
}

/// Query rows R are computed row by row (row_gain_matrix) when |R| · kRowGainsFraction ≤ n: one
/// GEMV per row and head against the whole head's blocked GEMMs, which take less CPU time beyond
/// about n / 4 rows at the end of a 4096-token head and less wall time beyond n / 8
/// (bench/results/greedy_optimum_rows.md).
constexpr std::ptrdiff_t kRowGainsFraction = 8;

/// The oracle and (unless mode kOracle) the optimum of every budget of one head into `out`, on the
/// gains restricted to `rows` (a query_row_mask, or empty: every row).
template <class Scalar>
void add_stored_optima(const HeadGroup& group, const std::vector<int>& budgets, const HeadEvaluationOptions& options,
                       const std::vector<char>& rows, std::vector<HeadEvaluation>& out) {
  // A few query rows (and no oracle sets, which are the full rows' choice) are computed row by row.
  const bool by_rows = !rows.empty() && !options.oracle_sets &&
                       std::count(rows.begin(), rows.end(), char(1)) * kRowGainsFraction <= std::ptrdiff_t(rows.size());
  TriangularGains<Scalar> gains = by_rows ? row_gain_matrix<Scalar>(group, rows) : triangular_gain_matrix<Scalar>(group);
  // The oracle on the whole rows (its sets are the full rows' choice everywhere), then its mass on R.
  if (options.oracle || options.oracle_sets || options.optimum == OptimumMode::kOracle) {
    const std::vector<StepOracle> oracles = step_oracles(gains, budgets, options.oracle_sets);
    for (std::size_t b = 0; b < budgets.size(); ++b) {
      out[b].oracle = oracles[b];
      if (!rows.empty()) restrict_to_rows(out[b].oracle, rows);
      out[b].has_oracle = true;
    }
  }
  if (!rows.empty() && !by_rows) restrict_to_rows(gains, rows);
  for (std::size_t b = 0; b < options.schedules.size(); ++b) {
    for (const std::vector<int>& last_step : options.schedules[b]) {
      out[b].schedule_step_mass.push_back(schedule_step_mass(gains, last_step));
    }
  }
  if (options.optimum == OptimumMode::kFlow || options.optimum == OptimumMode::kCertified) {
    store_optima(implicit_flow_optima(gains, budgets, flow_options(options)), group.window, out);
  }
}

/// The optimum of every budget of one head on streamed gains into `out` (no oracle), with the
/// normalizers of the policies' exact rows when they were computed, restricted to `rows` (a
/// query_row_mask, or empty: every row). Precondition: mode kFlow or kCertified
/// (evaluate_head_budgets refuses kOracle here).
void add_streamed_optima(const HeadGroup& group, const std::vector<int>& budgets, const HeadEvaluationOptions& options,
                         const std::vector<ExactRows>& exact, const std::vector<char>& rows,
                         std::vector<HeadEvaluation>& out) {
  StreamedGains gains =
      exact.empty() ? StreamedGains(group, options.threads) : StreamedGains(group, exact, options.threads);
  if (!rows.empty()) gains.restrict_to_rows(rows);
  store_optima(streamed_flow_optima(gains, budgets, flow_options(options)), group.window, out);
}

}  // namespace

std::vector<HeadEvaluation> evaluate_head_budgets(const Workload& workload, int layer, int kv_head,
                                                  const std::vector<PolicySpec>& policies,
                                                  const std::vector<int>& budgets,
                                                  const HeadEvaluationOptions& options) {
  if (options.optimum == OptimumMode::kCertified &&
      !(std::isfinite(options.relative_gap) && options.relative_gap > 0.0)) {
    throw InputError("evaluate_head", "gap", "a finite value > 0", significant_digits(options.relative_gap, 10));
  }
  for (int budget : budgets) {
    if (budget < 1) throw InputError("evaluate_head", "budget", "an integer >= 1", std::to_string(budget));
  }
  const HeadGroup group = head_group(workload, layer, kv_head);
  const std::vector<char> rows = options.optimum_rows.empty()
                                     ? std::vector<char>{}
                                     : query_row_mask(options.optimum_rows, group.tokens(), "evaluate_head");
  if (!options.schedules.empty() &&
      (options.schedules.size() != budgets.size() || options.optimum == OptimumMode::kNone ||
       group.tokens() > options.stored_gains_tokens)) {
    throw InputError("evaluate_head", "schedules",
                     "one list per budget, with an optimum on stored gains (at most " +
                         std::to_string(options.stored_gains_tokens) + " tokens)",
                     std::to_string(options.schedules.size()) + " lists for " + std::to_string(budgets.size()) +
                         " budgets at " + std::to_string(group.tokens()) + " tokens");
  }
  if (options.optimum == OptimumMode::kOracle && group.tokens() > options.stored_gains_tokens) {
    throw InputError("evaluate_head", "optimum",
                     "flow, certified or none for more than " + std::to_string(options.stored_gains_tokens) +
                         " tokens (the oracle sorts rows of the stored gains)",
                     "oracle at " + std::to_string(group.tokens()) + " tokens");
  }
  const auto report = [&](const std::string& what) {
    if (options.on_progress) options.on_progress(what);
  };
  // Shared by every policy and budget; none to compute for the optimum alone.
  if (!policies.empty()) report("exact rows");
  const std::vector<ExactRows> exact = policies.empty() ? std::vector<ExactRows>{} : group_exact_rows(group, options.threads);
  std::vector<HeadEvaluation> out(budgets.size());
  for (std::size_t b = 0; b < budgets.size(); ++b) {
    HeadEvaluation& e = out[b];
    e.layer = layer;
    e.kv_head = kv_head;
    e.heads = group.group_size();
    e.tokens = workload.shape().tokens;
    e.budget = budgets[b];
  }
  // The policies write their traces, the optimum the rest of each evaluation: no field is shared.
  const auto run_policies = [&](int threads) {
    for (std::size_t b = 0; b < budgets.size(); ++b) {
      SimulationOptions sim;
      sim.budget = budgets[b];
      sim.seed = options.seed;
      sim.threads = threads;
      for (const PolicySpec& spec : policies) {
        if (options.on_progress) {
          sim.on_steps = [&, label = spec.label() + " at k = " + std::to_string(budgets[b])](int done, int n) {
            report(label + ": step " + std::to_string(done) + "/" + std::to_string(n));
          };
        }
        auto policy = make_policy(spec);
        out[b].traces.push_back(simulate(group, *policy, sim, exact));
        out[b].traces.back().policy = spec.label();
      }
    }
  };
  const auto run_optimum = [&] {
    report("optimum");
    const auto start = std::chrono::steady_clock::now();
    const int double_gains = options.double_gains_tokens < 0 ? kDoubleGainsTokens : options.double_gains_tokens;
    if (group.tokens() <= std::min(double_gains, options.stored_gains_tokens)) {
      add_stored_optima<double>(group, budgets, options, rows, out);
    } else if (group.tokens() <= options.stored_gains_tokens) {
      add_stored_optima<float>(group, budgets, options, rows, out);
      for (HeadEvaluation& e : out) e.float_gains = true;
    } else {
      add_streamed_optima(group, budgets, options, exact, rows, out);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (HeadEvaluation& e : out) e.optimum_seconds = seconds;
  };
  if (options.optimum == OptimumMode::kNone) {
    run_policies(options.threads);
  } else if (options.threads < 2 || policies.empty()) {
    run_policies(options.threads);
    run_optimum();
  } else {
    // A head with threads to spare: the policies' step loop (sequential) runs on a thread of its
    // own beside the optimum, whose passes take the threads and whose pivots leave one idle.
    std::exception_ptr failure;
    std::thread side([&] {
      try {
        run_policies(1);
        report("optimum");  // what is left to wait for
      } catch (...) {
        failure = std::current_exception();
      }
    });
    try {
      run_optimum();
    } catch (...) {
      side.join();
      throw;
    }
    side.join();
    if (failure) std::rethrow_exception(failure);
  }
  return out;
}

double mean_output_error(const Trace& trace) {
  double sum = 0.0;
  for (const auto& s : trace.steps) sum += s.output_error;
  return trace.steps.empty() ? 0.0 : sum / double(trace.steps.size());
}

double mean_total_variation(const Trace& trace) {
  double sum = 0.0;
  for (const auto& s : trace.steps) sum += s.total_variation;
  return trace.steps.empty() ? 0.0 : sum / double(trace.steps.size());
}

}  // namespace subevict::greedy
