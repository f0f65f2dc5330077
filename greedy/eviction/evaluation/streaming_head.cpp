#include "greedy/eviction/evaluation/streaming_head.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/attention.hpp"
#include "core/cached_scores.hpp"
#include "core/weighted_rows.hpp"
#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy {

DenseCache::DenseCache(int capacity, int d)
    : tokens(std::size_t(capacity)), keys(capacity, d), values(capacity, d), float_keys_t(d, capacity) {}

void DenseCache::push(const HeadGroup& in, Token t) {
  tokens[std::size_t(size)] = t;
  keys.row(size) = in.k.row(t).cast<double>();
  values.row(size) = in.v.row(t).cast<double>();
  float_keys_t.col(size) = in.k.row(t).transpose();
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
  }
  --size;
  return true;
}

bool DenseCache::holds(Token t) const {
  return std::find(tokens.begin(), tokens.begin() + size, t) != tokens.begin() + size;
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
                             GroupAggregation aggregation, Trace& trace, int block_steps, int threads)
    : input_(&input), metrics_(metrics), exact_(&exact), aggregation_(aggregation), trace_(&trace),
      path_(active_cpu_path()), cache_(capacity, input.head_dim()), block_steps_(block_steps), threads_(threads) {
  if (block_steps < 1 || threads < 1) throw std::invalid_argument("StreamingHead: block_steps and threads must be >= 1");
  const int d = input.head_dim(), g = input.group_size();
  queries_.resize(d, g);
  logits_.resize(capacity, g);
  outputs_.resize(d, g);
  attention_.resize(std::size_t(capacity) * std::size_t(g));
  aggregated_.resize(std::size_t(capacity));
  group_.resize(std::size_t(g));
  head_max_.resize(std::size_t(g));
  head_sum_.resize(std::size_t(g));
  if (path_ != CpuPath::kPortable) {
    blocked_scores_ = g == 1;  // a group's scores come from one product of its g queries
    blocked_outputs_ = metrics;
    const int tokens = capacity + block_steps;  // |U| ≤ |S_{i−1}| + the block's arrivals
    column_.assign(std::size_t(input.tokens()), -1);
    if (blocked_scores_) {
      block_keys_t_.resize(d, tokens);
      block_queries_.resize(block_steps, d);
      block_scores_.resize(block_steps, tokens);
    }
    if (blocked_outputs_) {
      block_weights_.resize(std::size_t(block_steps) * g, tokens);
      block_outputs_.resize(std::size_t(block_steps) * g, d);
    }
  }
}

namespace {

/// ‖o − õ‖ / ‖o‖ (‖o − õ‖ when o = 0): step i's output error of one query head.
double relative_error(const Eigen::Ref<const Eigen::RowVectorXd>& exact, const Eigen::Ref<const Eigen::RowVectorXd>& tracked) {
  const double norm = exact.norm(), diff = (exact - tracked).norm();
  return norm > 0.0 ? diff / norm : diff;
}

}  // namespace

void StreamingHead::start_block(int i) {
  finish();
  block_first_ = i;
  block_end_ = std::min(input_->tokens(), i + block_steps_);
  lost_from_ = block_end_;
  block_tokens_.assign(cache_.tokens.begin(), cache_.tokens.begin() + cache_.size);
  for (Token t = i; t < block_end_; ++t) block_tokens_.push_back(t);
  std::sort(block_tokens_.begin(), block_tokens_.end());
  if (column_.size() < std::size_t(block_end_)) column_.resize(std::size_t(block_end_), -1);  // the group grew
  const int u = int(block_tokens_.size()), steps = block_end_ - i;
  for (int c = 0; c < u; ++c) column_[std::size_t(block_tokens_[std::size_t(c)])] = c;
  if (blocked_scores_) {
    for (int c = 0; c < u; ++c) block_keys_t_.col(c) = input_->k.row(block_tokens_[std::size_t(c)]).transpose();
    for (int b = 0; b < steps; ++b) block_queries_.row(b) = input_->scale * input_->q[0].row(i + b).cast<double>();
    cached_score_block(block_keys_t_.leftCols(u), block_queries_.topRows(steps), block_scores_.topLeftCorner(steps, u),
                       path_, threads_);
  }
}

bool StreamingHead::block_scores(int i, int m) {
  const int u = int(block_tokens_.size()), d = input_->head_dim();
  if (!blocked_scores_ || cached_scores_by_kernel(m, d) != cached_scores_by_kernel(u, d)) return false;
  const auto row = block_scores_.row(i - block_first_);
  for (int e = 0; e < m; ++e) logits_(e, 0) = row(column_[std::size_t(cache_.tokens[std::size_t(e)])]);
  return true;
}

void StreamingHead::keep_weights(int i, int m) {
  const int g = input_->group_size();
  lost_from_ = std::min(lost_from_, i);
  for (int h = 0; h < g; ++h) {
    auto row = block_weights_.row(std::size_t(i - block_first_) * g + h);
    row.head(Eigen::Index(block_tokens_.size())).setZero();
    const double* a = attention_.data() + std::size_t(h) * m;
    for (int e = 0; e < m; ++e) row(column_[std::size_t(cache_.tokens[std::size_t(e)])]) = a[e];
  }
}

void StreamingHead::finish() {
  if (!blocked_outputs_ || lost_from_ > block_last_) return;
  const int g = input_->group_size(), u = int(block_tokens_.size());
  const int first = lost_from_ - block_first_, steps = block_last_ + 1 - lost_from_;
  auto outputs = block_outputs_.topRows(Eigen::Index(steps) * g);
  gathered_weighted_rows(input_->v, block_tokens_, block_weights_.block(Eigen::Index(first) * g, 0, Eigen::Index(steps) * g, u),
                         outputs, path_, threads_);
  for (int s = 0; s < steps; ++s) {
    const int i = lost_from_ + s;
    double error = 0.0;
    for (int h = 0; h < g; ++h) {
      const double err = relative_error((*exact_)[std::size_t(h)].output.row(i), outputs.row(Eigen::Index(s) * g + h));
      trace_->head_output_error[std::size_t(i) * g + h] = err;
      error += err;
    }
    trace_->steps[std::size_t(i)].output_error = error / g;
  }
  lost_from_ = block_last_ + 1;
}

bool StreamingHead::evict(Token t) {
  if (!cache_.remove(t)) return false;
  lost_ = true;
  return true;
}

StepView StreamingHead::arrive(int i, bool full) {
  const int g = input_->group_size();
  if ((blocked_scores_ || blocked_outputs_) && (i < block_first_ || i >= block_end_)) start_block(i);
  block_last_ = i;
  cache_.push(*input_, i);
  const int m = cache_.size;
  for (int h = 0; h < g; ++h) queries_.col(h) = input_->scale * input_->q[std::size_t(h)].row(i).transpose().cast<double>();
  if (block_scores(i, m)) {
    // the block's product gave these scores
  } else if (path_ == CpuPath::kAvx2Fma && g == 1) {  // the same scores bit for bit, from the float keys
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

  StepRecord& record = trace_->steps[std::size_t(i)];
  record.step = i;
  record.evicted = kNoEviction;
  if (metrics_) {
    double mass = 0.0, error = 0.0;
    if (lost_ && blocked_outputs_) {
      keep_weights(i, m);
    } else if (lost_) {  // the portable path: every step's outputs at once
      const Eigen::Map<const Eigen::MatrixXd> weights(attention_.data(), m, g);
      outputs_.noalias() = cache_.values.topRows(m).transpose() * weights;
    }
    for (int h = 0; h < g; ++h) {
      double r = 1.0, err = 0.0;
      if (lost_) {
        const ExactRows& ex = (*exact_)[std::size_t(h)];
        r = std::min(1.0, std::exp(head_max_[std::size_t(h)] - ex.log_normalizer[std::size_t(i)]) *
                              head_sum_[std::size_t(h)]);
        if (blocked_outputs_) {
          err = std::numeric_limits<double>::quiet_NaN();  // finish() writes it at the block's end
        } else {
          err = relative_error(ex.output.row(i), outputs_.col(h).transpose());
        }
      }
      trace_->head_retained_mass[std::size_t(i) * g + h] = r;
      trace_->head_output_error[std::size_t(i) * g + h] = err;
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

Token StreamingHead::window_exit(int i) const {
  if (input_->window == 0) return kNoEviction;
  const Token t = i + 1 - input_->window;  // W = 1: token i itself, which no later query sees
  return t >= 0 && (t == i || cache_.holds(t)) ? t : kNoEviction;
}

void StreamingHead::leave_window(int i) {
  const Token t = window_exit(i);
  if (t != kNoEviction) cache_.remove(t);
}

namespace {

[[noreturn]] void contract_error(const EvictionPolicy& policy, int step, const std::string& what) {
  throw std::logic_error("eviction policy " + policy.name() + " at step " + std::to_string(step) + ": " + what);
}

}  // namespace

Token run_policy_step(StreamingHead& head, EvictionPolicy& policy, int i, int k) {
  const bool full = head.size_without_eviction(i) > k;
  const StepView view = head.arrive(i, full);
  const Token evicted = policy.step(view);
  if (!full) {
    if (evicted != kNoEviction) contract_error(policy, i, "evicted while the cache was not full");
  } else if (evicted == kNoEviction || !head.evict(evicted)) {
    contract_error(policy, i, "a full step must evict one member of G_i, got " + std::to_string(evicted));
  }
  head.leave_window(i);  // the token step i + 1 no longer sees leaves the cache; not an eviction
  return evicted;
}

std::vector<Token> run_prefill_rule(StreamingHead& head, EvictionPolicy& policy, int prefill, int k, int window) {
  const std::vector<Token> kept = policy.prefill();
  if (int(kept.size()) > k || !std::is_sorted(kept.begin(), kept.end()) ||
      std::adjacent_find(kept.begin(), kept.end()) != kept.end() ||
      (!kept.empty() && (kept.front() < 0 || kept.back() >= prefill))) {
    contract_error(policy, prefill - 1, "prefill must keep at most k distinct prompt tokens, ascending");
  }
  // The tokens step P no longer sees leave with the window first: neither kept nor evicted (so
  // the cache, its slot order included, depends only on what the rule did with visible tokens).
  const Token visible = first_visible_key(prefill, window);
  std::vector<Token> dropped;
  std::size_t next = 0;
  for (Token t = 0; t < prefill; ++t) {
    const bool keep = next < kept.size() && kept[next] == t;
    if (keep) ++next;
    if (t < visible) continue;
    if (keep) {
      head.admit(t);
    } else {
      dropped.push_back(t);
    }
  }
  if (!dropped.empty()) head.mark_loss();
  return dropped;
}

}  // namespace subevict::greedy
