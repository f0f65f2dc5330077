#include "greedy/eviction/evaluation/streaming_head.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/attention.hpp"
#include "core/cached_scores.hpp"
#include "core/weighted_rows.hpp"
#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy {

DenseCache::DenseCache(int capacity, int d)
    : tokens(std::size_t(capacity)), keys(capacity, d), values(capacity, d), float_keys_t(d, capacity),
      float_values(capacity, d) {}

void DenseCache::push(const HeadGroup& in, Token t) {
  tokens[std::size_t(size)] = t;
  keys.row(size) = in.k.row(t).cast<double>();
  values.row(size) = in.v.row(t).cast<double>();
  float_keys_t.col(size) = in.k.row(t).transpose();
  float_values.row(size) = in.v.row(t);
  ++size;
}

bool DenseCache::remove(Token t) {
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

std::vector<Token> DenseCache::sorted() const {
  std::vector<Token> s(tokens.begin(), tokens.begin() + size);
  std::sort(s.begin(), s.end());
  return s;
}

Trace empty_trace(const HeadGroup& input, const EvictionPolicy& policy, int budget, int prefill, bool metrics) {
  const int n = input.tokens(), g = input.group_size();
  Trace trace;
  trace.policy = policy.name();
  trace.oracle = policy.is_oracle();
  trace.layer = input.layer;
  trace.kv_head = input.kv_head;
  trace.tokens = n;
  trace.heads = g;
  trace.budget = budget;
  trace.prefill = prefill;
  trace.window = input.window;
  trace.steps.resize(std::size_t(n));
  if (metrics) {
    trace.head_retained_mass.assign(std::size_t(n) * g, 1.0);
    trace.head_output_error.assign(std::size_t(n) * g, 0.0);
  }
  return trace;
}

StreamingHead::StreamingHead(const HeadGroup& input, int capacity, bool metrics, const std::vector<ExactRows>& exact,
                             GroupAggregation aggregation, Trace& trace)
    : input_(input), metrics_(metrics), exact_(exact), aggregation_(aggregation), trace_(trace),
      path_(active_cpu_path()), cache_(capacity, input.head_dim()) {
  const int d = input.head_dim(), g = input.group_size();
  queries_.resize(d, g);
  logits_.resize(capacity, g);
  outputs_.resize(d, g);
  attention_.resize(std::size_t(capacity) * std::size_t(g));
  aggregated_.resize(std::size_t(capacity));
  group_.resize(std::size_t(g));
  head_max_.resize(std::size_t(g));
  head_sum_.resize(std::size_t(g));
}

bool StreamingHead::evict(Token t) {
  if (!cache_.remove(t)) return false;
  lost_ = true;
  return true;
}

StepView StreamingHead::arrive(int i, bool full) {
  const int g = input_.group_size();
  cache_.push(input_, i);
  const int m = cache_.size;
  for (int h = 0; h < g; ++h) queries_.col(h) = input_.scale * input_.q[std::size_t(h)].row(i).transpose().cast<double>();
  if (path_ == CpuPath::kAvx2Fma && g == 1) {  // the same scores bit for bit, from the float keys
    cached_scores(cache_.float_keys_t.leftCols(m), queries_.col(0), logits_.col(0).head(m), path_);
  } else {
    logits_.topRows(m).noalias() = cache_.keys.topRows(m) * queries_;
  }
  for (int h = 0; h < g; ++h) {
    Eigen::Map<Eigen::ArrayXd> row(attention_.data() + std::size_t(h) * m, m);
    const double top = logits_.col(h).head(m).maxCoeff();
    row = underflow_exp(logits_.col(h).head(m).array() - top);
    const double sum = row.sum();
    row /= sum;
    head_max_[std::size_t(h)] = top;
    head_sum_[std::size_t(h)] = sum;
  }
  std::span<const double> agg(attention_.data(), std::size_t(m));
  if (g > 1) {
    for (int e = 0; e < m; ++e) {
      for (int h = 0; h < g; ++h) group_[std::size_t(h)] = attention_[std::size_t(h) * m + e];
      aggregated_[std::size_t(e)] = policies::aggregate(aggregation_, group_);
    }
    agg = std::span<const double>(aggregated_.data(), std::size_t(m));
  }

  StepRecord& record = trace_.steps[std::size_t(i)];
  record.step = i;
  record.evicted = kNoEviction;
  if (metrics_) {
    double mass = 0.0, error = 0.0;
    if (lost_) {
      const Eigen::Map<const Eigen::MatrixXd> weights(attention_.data(), m, g);
      if (path_ == CpuPath::kPortable) {
        outputs_.noalias() = cache_.values.topRows(m).transpose() * weights;
      } else {
        weighted_rows(cache_.float_values.topRows(m), weights, outputs_, path_);
      }
    }
    for (int h = 0; h < g; ++h) {
      double r = 1.0, err = 0.0;
      if (lost_) {
        const ExactRows& ex = exact_[std::size_t(h)];
        r = std::min(1.0, std::exp(head_max_[std::size_t(h)] - ex.log_normalizer[std::size_t(i)]) *
                              head_sum_[std::size_t(h)]);
        const double norm = ex.output.row(i).norm();
        const double diff = (ex.output.row(i).transpose() - outputs_.col(h)).norm();
        err = norm > 0.0 ? diff / norm : diff;
      }
      trace_.head_retained_mass[std::size_t(i) * g + h] = r;
      trace_.head_output_error[std::size_t(i) * g + h] = err;
      mass += r;
      error += err;
    }
    record.retained_mass = mass / g;
    record.total_variation = 1.0 - record.retained_mass;
    record.output_error = error / g;
  } else {
    record.retained_mass = record.total_variation = record.output_error = std::numeric_limits<double>::quiet_NaN();
  }
  return StepView{i, full, std::span<const Token>(cache_.tokens.data(), std::size_t(m)), agg,
                  std::span<const double>(attention_.data(), std::size_t(m) * g), g};
}

void StreamingHead::leave_window(int i) {
  if (input_.window > 0 && i + 1 - input_.window >= 0) cache_.remove(i + 1 - input_.window);
}

}  // namespace subevict::greedy
