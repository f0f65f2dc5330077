#include "greedy/eviction/evaluation/shared_simulator.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>

#include "core/input_error.hpp"
#include "greedy/eviction/evaluation/streaming_head.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"

namespace subevict::greedy {

double SharedRun::total_retained_mass() const {
  double total = 0.0;
  for (const Trace& t : traces) total += t.total_retained_mass();
  return total;
}

namespace {

void validate(const std::vector<HeadGroup>& heads, const std::vector<EvictionPolicy*>& policies,
              const SharedSimulationOptions& options, long long total) {
  const std::string source = "shared cache";
  if (heads.empty()) throw InputError(source, "heads", "at least one head");
  if (policies.size() != heads.size()) {
    throw InputError(source, "policies", "one per head (" + std::to_string(heads.size()) + ")",
                     std::to_string(policies.size()));
  }
  for (const HeadGroup& h : heads) {
    h.validate();
    if (h.tokens() != heads.front().tokens()) {
      throw InputError(source, "heads", "heads of one length (" + std::to_string(heads.front().tokens()) + " tokens)",
                       std::to_string(h.tokens()) + " tokens");
    }
  }
  if (options.budget < 1) throw InputError(source, "budget", "k >= 1", std::to_string(options.budget));
  if (options.floor < 0 || options.floor > options.budget) {
    throw InputError(source, "floor", "0 <= floor <= k = " + std::to_string(options.budget),
                     std::to_string(options.floor));
  }
  const long long least = (long long)heads.size() * options.floor;
  if (total < std::max(1LL, least)) {
    throw InputError(source, "total", "T >= max(1, H * floor) = " + std::to_string(std::max(1LL, least)),
                     std::to_string(total));
  }
  for (const EvictionPolicy* p : policies) {
    if (p == nullptr || !p->ranks()) {
      throw InputError(source, "policy", "a policy that ranks its members (evicts the smallest key)",
                       p == nullptr ? std::string("none") : p->name());
    }
  }
}

/// One eviction candidate: (key, token, head), ordered ascending.
using Candidate = std::tuple<double, Token, int>;

}  // namespace

SharedRun simulate_shared(const std::vector<HeadGroup>& heads, const std::vector<EvictionPolicy*>& policies,
                          const SharedSimulationOptions& options,
                          const std::vector<const std::vector<ExactRows>*>& exact) {
  const long long total = options.total > 0 ? options.total : (long long)heads.size() * options.budget;
  validate(heads, policies, options, total);
  const int count = int(heads.size()), n = heads.front().tokens();
  const bool metrics = options.compute_metrics;
  const int workers = options.threads > 0 ? options.threads : omp_get_max_threads();
  std::vector<std::vector<ExactRows>> own;
  std::vector<const std::vector<ExactRows>*> rows = exact;
  if (metrics && exact.empty()) {
    own.resize(std::size_t(count));
#pragma omp parallel for schedule(dynamic) num_threads(workers)
    for (int h = 0; h < count; ++h) own[std::size_t(h)] = group_exact_rows(heads[std::size_t(h)]);
    for (const auto& r : own) rows.push_back(&r);
  }
  if (metrics && (rows.size() != heads.size() ||
                  std::any_of(rows.begin(), rows.end(), [](const auto* r) { return r == nullptr; }))) {
    throw InputError("shared cache", "exact rows", "one set per head", std::to_string(rows.size()));
  }

  SharedRun run;
  run.traces.reserve(std::size_t(count));
  for (int h = 0; h < count; ++h) {
    EvictionPolicy& policy = *policies[std::size_t(h)];
    const HeadGroup& input = heads[std::size_t(h)];
    policy.reset({&input, n, options.budget, 0, options.aggregation, options.seed});
    if (!policy.compresses()) {
      throw InputError("shared cache", "policy", "a policy that compresses every head",
                       policy.name() + " leaves layer " + std::to_string(input.layer) + " uncompressed");
    }
    run.traces.push_back(empty_trace(input, policy, options.budget, 0, metrics));
  }
  const int capacity = int(std::min<long long>(n, total)) + 1;
  std::vector<std::unique_ptr<StreamingHead>> streams;
  for (int h = 0; h < count; ++h) {
    static const std::vector<ExactRows> none;
    streams.push_back(std::make_unique<StreamingHead>(heads[std::size_t(h)], capacity, metrics,
                                                      metrics ? *rows[std::size_t(h)] : none, options.aggregation,
                                                      run.traces[std::size_t(h)]));
  }
  run.last_step.assign(std::size_t(count), std::vector<int>(std::size_t(n), n - 1));
  run.occupancy = Eigen::MatrixXi::Zero(n, count);
  std::vector<std::vector<Token>> members(static_cast<std::size_t>(count));
  std::vector<std::vector<double>> keys(static_cast<std::size_t>(count));
  std::vector<Candidate> candidates;
  std::vector<int> sizes(static_cast<std::size_t>(count));
  std::vector<Token> exits(static_cast<std::size_t>(count));
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    // Σ_h |G^h_i| less the tokens that leave the windows at the end of step i: they leave first.
    long long held = 0;
    for (int h = 0; h < count; ++h) {
      held += streams[std::size_t(h)]->size_without_eviction(i);
      exits[std::size_t(h)] = streams[std::size_t(h)]->window_exit(i);
    }
    const long long excess = held - total;
    const bool full = excess > 0;
    std::exception_ptr failure;
#pragma omp parallel for schedule(static) num_threads(workers) if (count > 1 && workers > 1)
    for (int h = 0; h < count; ++h) {
      try {
        const StepView view = streams[std::size_t(h)]->arrive(i, full);
        members[std::size_t(h)].assign(view.tokens.begin(), view.tokens.end());
        keys[std::size_t(h)].assign(view.tokens.size(), 0.0);
        policies[std::size_t(h)]->rank(view, keys[std::size_t(h)]);
      } catch (...) {
#pragma omp critical(subevict_shared_failure)
        if (!failure) failure = std::current_exception();
      }
    }
    if (failure) std::rethrow_exception(failure);
    if (full) {
      candidates.clear();
      for (int h = 0; h < count; ++h) {
        const Token exit = exits[std::size_t(h)];  // leaves anyway: no candidate
        sizes[std::size_t(h)] = int(members[std::size_t(h)].size()) - (exit != kNoEviction ? 1 : 0);
        for (std::size_t e = 0; e < members[std::size_t(h)].size(); ++e) {
          if (members[std::size_t(h)][e] == exit) continue;
          const double key = keys[std::size_t(h)][e];
          if (std::isnan(key)) {
            throw std::logic_error("eviction policy " + policies[std::size_t(h)]->name() + " ranked a member NaN at step " +
                                   std::to_string(i));
          }
          if (key != std::numeric_limits<double>::infinity()) candidates.emplace_back(key, members[std::size_t(h)][e], h);
        }
      }
      std::sort(candidates.begin(), candidates.end());
      long long evicted = 0;
      for (const auto& [key, token, h] : candidates) {
        if (evicted == excess) break;
        if (sizes[std::size_t(h)] <= options.floor) continue;
        streams[std::size_t(h)]->evict(token);
        --sizes[std::size_t(h)];
        run.last_step[std::size_t(h)][std::size_t(token)] = i - 1;
        StepRecord& record = run.traces[std::size_t(h)].steps[std::size_t(i)];
        if (record.evicted == kNoEviction || token < record.evicted) record.evicted = token;
        ++evicted;
      }
      if (evicted < excess) {
        throw std::runtime_error("shared cache: at step " + std::to_string(i) + " only " + std::to_string(evicted) +
                                 " of the " + std::to_string(excess) +
                                 " entries that must leave may: the floor of " + std::to_string(options.floor) +
                                 " per head and the members the policies never evict hold the rest (lower the "
                                 "floor or raise the budget)");
      }
    }
    for (int h = 0; h < count; ++h) {
      streams[std::size_t(h)]->leave_window(i);
      run.occupancy(i, h) = streams[std::size_t(h)]->size();
    }
  }
  for (auto& stream : streams) stream->finish();
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int h = 0; h < count; ++h) {
    run.last_step[std::size_t(h)] = drop_outside_window(std::move(run.last_step[std::size_t(h)]), heads[std::size_t(h)].window);
  }
  return run;
}

}  // namespace subevict::greedy
