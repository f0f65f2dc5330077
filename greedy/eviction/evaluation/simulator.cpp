#include "greedy/eviction/evaluation/simulator.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "core/attention.hpp"
#include "core/cached_scores.hpp"
#include "core/exact_attention_rows.hpp"
#include "core/input_error.hpp"
#include "core/weighted_rows.hpp"
#include "greedy/eviction/policies/policy_support.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"

namespace subevict::greedy {

namespace {

void validate_options(const SimulationOptions& options, int n) {
  if (options.budget < 1) throw std::invalid_argument("simulate: budget must be >= 1");
  if (options.prefill < 0 || options.prefill > n) throw std::invalid_argument("simulate: prefill must be in [0, n]");
}

[[noreturn]] void contract_error(const EvictionPolicy& policy, int step, const std::string& what) {
  throw std::logic_error("eviction policy " + policy.name() + " at step " + std::to_string(step) + ": " + what);
}

/// The cache G_i as dense arrays: entries 0..size−1 hold tokens, their keys (scaled queries' dot
/// partners) and values in double, and both as given (float, for the AVX2 path, which reads half
/// the bytes); removal moves the last entry into the hole.
struct DenseCache {
  std::vector<Token> tokens;
  RowMatrixd keys, values;
  RowMatrixf float_keys_t, float_values;  // keys transposed: d x capacity
  int size = 0;

  DenseCache(int capacity, int d)
      : tokens(std::size_t(capacity)), keys(capacity, d), values(capacity, d), float_keys_t(d, capacity),
        float_values(capacity, d) {}
  void push(const HeadGroup& in, Token t) {
    tokens[std::size_t(size)] = t;
    keys.row(size) = in.k.row(t).cast<double>();
    values.row(size) = in.v.row(t).cast<double>();
    float_keys_t.col(size) = in.k.row(t).transpose();
    float_values.row(size) = in.v.row(t);
    ++size;
  }
  /// Removes token t; returns false when t is not an entry.
  bool remove(Token t) {
    const auto end = tokens.begin() + size;
    const auto it = std::find(tokens.begin(), end, t);
    if (it == end) return false;
    const int e = int(it - tokens.begin()), last = size - 1;
    if (e != last) {
      tokens[std::size_t(e)] = tokens[std::size_t(last)];
      keys.row(e) = keys.row(last);
      values.row(e) = values.row(last);
      float_keys_t.col(e) = float_keys_t.col(last);
      float_values.row(e) = float_values.row(last);
    }
    --size;
    return true;
  }
  [[nodiscard]] std::vector<Token> sorted() const {
    std::vector<Token> s(tokens.begin(), tokens.begin() + size);
    std::sort(s.begin(), s.end());
    return s;
  }
};

}  // namespace

int Budget::resolve(int tokens, int prefill) const {
  if (kind == Kind::kAbsolute) {
    if (!(value >= 1.0 && value == std::floor(value) && value <= 2147483647.0)) {
      throw InputError("budget", "absolute size", "an integer >= 1", std::to_string(value));
    }
    return std::min(int(value), std::max(tokens, 1));
  }
  if (!(value > 0.0 && value <= 1.0)) {
    throw InputError("budget", "ratio", "a ratio in (0, 1]", std::to_string(value));
  }
  if (kind == Kind::kRatioOfPrompt && prefill <= 0) {
    throw InputError("budget", "ratio of the prompt", "a prefill length > 0", std::to_string(prefill));
  }
  const int base = kind == Kind::kRatioOfPrompt ? prefill : tokens;
  return std::clamp(int(std::lround(value * double(base))), 1, std::max(tokens, 1));
}

double Trace::total_retained_mass() const {
  const int start = prefill > budget ? prefill : 0;
  double total = 0.0;
  for (std::size_t e = std::size_t(start) * std::size_t(heads); e < head_retained_mass.size(); ++e) {
    total += head_retained_mass[e];
  }
  return total;
}

std::vector<int> Trace::last_step() const {
  std::vector<int> last(std::size_t(tokens), tokens - 1);
  for (Token t : prefill_evicted) last[std::size_t(t)] = prefill - 2;
  for (const StepRecord& record : steps) {
    if (record.evicted != kNoEviction) last[std::size_t(record.evicted)] = record.step - 1;
  }
  return drop_outside_window(std::move(last), window);
}

std::vector<ExactRows> group_exact_rows(const HeadGroup& input) {
  input.validate();
  const CpuPath path = active_cpu_path();
  std::vector<ExactRows> exact;
  for (const ConstHeadMap& q : input.q) {
    exact.push_back(exact_attention_rows(q, input.k, input.v, input.scale, path, input.window));
  }
  return exact;
}

Trace simulate(const HeadGroup& input, EvictionPolicy& policy, const SimulationOptions& options) {
  input.validate();
  validate_options(options, input.tokens());
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<ExactRows> exact = options.compute_metrics ? group_exact_rows(input) : std::vector<ExactRows>{};
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Trace trace = simulate(input, policy, options, exact);
  trace.precompute_seconds = seconds;
  return trace;
}

Trace simulate(const HeadGroup& input, EvictionPolicy& policy, const SimulationOptions& options,
               const std::vector<ExactRows>& exact) {
  input.validate();
  const int n = input.tokens(), d = input.head_dim(), g = input.group_size();
  validate_options(options, n);
  if (options.compute_metrics) {
    bool fits = exact.size() == std::size_t(g);
    for (const ExactRows& rows : exact) {
      fits = fits && rows.log_normalizer.size() == std::size_t(n) && rows.output.rows() == n && rows.output.cols() == d;
    }
    if (!fits) throw std::invalid_argument("simulate: the exact rows do not belong to this group (g, n or d differ)");
  }

  PolicyContext context{&input, n, options.budget, options.prefill, options.aggregation, options.seed};
  policy.reset(context);
  // A window of W ≤ k keys never fills a cache of k: the run compresses nothing (budget n).
  const bool compresses = policy.compresses() && (input.window == 0 || context.budget < input.window);
  const int k = compresses ? context.budget : n;
  const bool prefill = options.prefill > k;
  const int start = prefill ? options.prefill : 0;

  Trace trace;
  trace.policy = policy.name();
  trace.oracle = policy.is_oracle();
  trace.layer = input.layer;
  trace.kv_head = input.kv_head;
  trace.tokens = n;
  trace.heads = g;
  trace.budget = k;
  trace.prefill = options.prefill;
  trace.window = input.window;
  trace.steps.resize(std::size_t(n));
  const bool metrics = options.compute_metrics;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (metrics) {
    trace.head_retained_mass.assign(std::size_t(n) * g, 1.0);
    trace.head_output_error.assign(std::size_t(n) * g, 0.0);
  }
  if (options.record_cache) trace.cache.resize(std::size_t(n));

  using Clock = std::chrono::steady_clock;
  // The path of the tracked outputs (metrics) and of the scores (core/cached_scores.hpp: the same
  // bits on every path, so the decisions never depend on it).
  const CpuPath path = active_cpu_path();
  const int capacity = std::min(k, n) + 1;  // |G_i| ≤ min(k + 1, i + 1)
  DenseCache cache(capacity, d);
  const auto t1 = Clock::now();
  bool evicted_any = false;
  // Prefill steps attend over the whole prefix (r = 1, error 0); then the prefill rule compresses.
  for (int i = 0; i < start; ++i) {
    trace.steps[std::size_t(i)] = {i, metrics ? 1.0 : nan, metrics ? 0.0 : nan, metrics ? 0.0 : nan, kNoEviction};
    if (options.record_cache) {
      const Token from = first_visible_key(i + 1, input.window);  // the tokens step i + 1 can see
      trace.cache[std::size_t(i)].resize(std::size_t(i + 1 - from));
      std::iota(trace.cache[std::size_t(i)].begin(), trace.cache[std::size_t(i)].end(), from);
    }
  }
  if (prefill) {
    const std::vector<Token> kept = policy.prefill();
    if (int(kept.size()) > k || !std::is_sorted(kept.begin(), kept.end()) ||
        std::adjacent_find(kept.begin(), kept.end()) != kept.end() ||
        (!kept.empty() && (kept.front() < 0 || kept.back() >= options.prefill))) {
      contract_error(policy, options.prefill - 1, "prefill must keep at most k distinct prompt tokens, ascending");
    }
    std::size_t next = 0;
    for (Token t = 0; t < options.prefill; ++t) {
      if (next < kept.size() && kept[next] == t) {
        cache.push(input, t);
        ++next;
      } else {
        trace.prefill_evicted.push_back(t);
      }
    }
    evicted_any = !trace.prefill_evicted.empty();
    for (Token t = 0; t < first_visible_key(start, input.window); ++t) cache.remove(t);  // left the window
    if (options.record_cache) trace.cache[std::size_t(start - 1)] = cache.sorted();
  }

  Eigen::MatrixXd queries(d, g), logits(capacity, g), outputs(d, g);
  std::vector<double> attention(static_cast<std::size_t>(capacity) * g),
      aggregated(static_cast<std::size_t>(capacity)), group(static_cast<std::size_t>(g)),
      head_max(static_cast<std::size_t>(g)), head_sum(static_cast<std::size_t>(g));

  for (int i = start; i < n; ++i) {
    const bool full = cache.size == k;
    cache.push(input, i);
    const int m = cache.size;
    for (int h = 0; h < g; ++h) queries.col(h) = input.scale * input.q[std::size_t(h)].row(i).transpose().cast<double>();
    if (path == CpuPath::kAvx2Fma && g == 1) {  // the same scores bit for bit, from the float keys
      cached_scores(cache.float_keys_t.leftCols(m), queries.col(0), logits.col(0).head(m), path);
    } else {
      logits.topRows(m).noalias() = cache.keys.topRows(m) * queries;
    }
    for (int h = 0; h < g; ++h) {
      Eigen::Map<Eigen::ArrayXd> row(attention.data() + std::size_t(h) * m, m);
      const double top = logits.col(h).head(m).maxCoeff();
      row = underflow_exp(logits.col(h).head(m).array() - top);
      const double sum = row.sum();
      row /= sum;
      head_max[std::size_t(h)] = top;
      head_sum[std::size_t(h)] = sum;
    }
    std::span<const double> agg(attention.data(), std::size_t(m));
    if (g > 1) {
      for (int e = 0; e < m; ++e) {
        for (int h = 0; h < g; ++h) group[std::size_t(h)] = attention[std::size_t(h) * m + e];
        aggregated[std::size_t(e)] = policies::aggregate(options.aggregation, group);
      }
      agg = std::span<const double>(aggregated.data(), std::size_t(m));
    }

    StepRecord& record = trace.steps[std::size_t(i)];
    record.step = i;
    if (metrics) {
      double mass = 0.0, error = 0.0;
      if (evicted_any) {
        const Eigen::Map<const Eigen::MatrixXd> weights(attention.data(), m, g);
        if (path == CpuPath::kPortable) {
          outputs.noalias() = cache.values.topRows(m).transpose() * weights;
        } else {
          weighted_rows(cache.float_values.topRows(m), weights, outputs, path);
        }
      }
      for (int h = 0; h < g; ++h) {
        double r = 1.0, err = 0.0;
        if (evicted_any) {
          const ExactRows& ex = exact[std::size_t(h)];
          r = std::min(1.0, std::exp(head_max[std::size_t(h)] - ex.log_normalizer[std::size_t(i)]) *
                                head_sum[std::size_t(h)]);
          const double norm = ex.output.row(i).norm();
          const double diff = (ex.output.row(i).transpose() - outputs.col(h)).norm();
          err = norm > 0.0 ? diff / norm : diff;
        }
        trace.head_retained_mass[std::size_t(i) * g + h] = r;
        trace.head_output_error[std::size_t(i) * g + h] = err;
        mass += r;
        error += err;
      }
      record.retained_mass = mass / g;
      record.total_variation = 1.0 - record.retained_mass;
      record.output_error = error / g;
    } else {
      record.retained_mass = record.total_variation = record.output_error = nan;
    }

    const StepView view{i, full, std::span<const Token>(cache.tokens.data(), std::size_t(m)), agg,
                        std::span<const double>(attention.data(), std::size_t(m) * g), g};
    const Token evicted = policy.step(view);
    if (!full) {
      if (evicted != kNoEviction) contract_error(policy, i, "evicted while the cache was not full");
    } else {
      if (evicted == kNoEviction || !cache.remove(evicted)) {
        contract_error(policy, i, "a full step must evict one member of G_i, got " + std::to_string(evicted));
      }
      evicted_any = true;
    }
    record.evicted = evicted;
    // The token step i + 1 no longer sees leaves the cache (sliding window); not an eviction.
    if (input.window > 0 && i + 1 - input.window >= 0) cache.remove(i + 1 - input.window);
    if (options.record_cache) trace.cache[std::size_t(i)] = cache.sorted();
  }
  trace.step_seconds = std::chrono::duration<double>(Clock::now() - t1).count();
  return trace;
}

std::vector<Trace> simulate_workload(const Workload& workload, const PolicyFactory& make_policy,
                                     const SimulationOptions& options, int threads,
                                     const std::function<void(int, int)>& progress) {
  const Shape& shape = workload.shape();
  const int total = shape.layers * shape.kv_heads;
  std::vector<Trace> traces(static_cast<std::size_t>(total));
  std::exception_ptr failure;
  int done = 0;
  const int workers = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel num_threads(workers)
  {
    std::unique_ptr<EvictionPolicy> policy;
#pragma omp critical(subevict_simulate_policy)
    try {
      policy = make_policy();
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
#pragma omp for schedule(dynamic)
    for (int index = 0; index < total; ++index) {
      if (!policy) continue;
      try {
        const HeadGroup group = head_group(workload, index / shape.kv_heads, index % shape.kv_heads);
        traces[std::size_t(index)] = simulate(group, *policy, options);
      } catch (...) {
#pragma omp critical(subevict_simulate_failure)
        if (!failure) failure = std::current_exception();
        continue;
      }
#pragma omp critical(subevict_simulate_progress)
      {
        ++done;
        if (progress) progress(done, total);
      }
    }
  }
  if (failure) std::rethrow_exception(failure);
  return traces;
}

}  // namespace subevict::greedy
