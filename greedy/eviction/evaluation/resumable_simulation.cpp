#include "greedy/eviction/evaluation/resumable_simulation.hpp"

#include <cmath>
#include <new>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/attention.hpp"

namespace subevict::greedy {

namespace {

[[noreturn]] void refuse(const std::string& what) { throw std::invalid_argument("resumable simulation: " + what); }

}  // namespace

ResumableSimulation::ResumableSimulation(std::unique_ptr<EvictionPolicy> policy, const ResumableShape& shape,
                                         const SimulationOptions& options)
    : policy_(std::move(policy)), shape_(shape), options_(options),
      group_{std::vector<ConstHeadMap>{}, ConstHeadMap(nullptr, 0, std::max(shape.head_dim, 1)),
             ConstHeadMap(nullptr, 0, std::max(shape.head_dim, 1)), shape.scale, shape.layer, shape.kv_head,
             shape.window} {
  if (!policy_) refuse("no policy");
  if (shape.group_size < 1 || shape.head_dim < 1 || shape.capacity < 1) {
    refuse("group_size, head_dim and capacity must be >= 1");
  }
  if (!(std::isfinite(shape.scale) && shape.scale > 0.0)) refuse("scale must be finite and > 0");
  if (shape.window < 0) refuse("window must be >= 0");
  if (options.budget < 1) refuse("budget must be >= 1");
  if (options.prefill < 0 || options.prefill > shape.capacity) refuse("prefill must be in [0, capacity]");
  if (options.threads < 1) refuse("threads must be >= 1");
  if (policy_->is_oracle()) {
    refuse("policy " + policy_->name() + " is an oracle: it reads rows that have not arrived");
  }
  q_.assign(std::size_t(shape.group_size), RowMatrixf::Zero(shape.capacity, shape.head_dim));
  k_.setZero(shape.capacity, shape.head_dim);
  v_.setZero(shape.capacity, shape.head_dim);
}

ResumableSimulation::~ResumableSimulation() = default;

ResumableSimulation::ResumableSimulation(const ResumableSimulation& other, Forked)
    : shape_(other.shape_), options_(other.options_), q_(other.q_), k_(other.k_), v_(other.v_), group_(other.group_),
      trace_(other.trace_), filled_(other.filled_), k_used_(other.k_used_), prefill_evicted_(other.prefill_evicted_) {
  map_rows();
  policy_ = other.policy_->copy_onto(group_);
  if (other.head_) head_ = std::make_unique<StreamingHead>(*other.head_, group_, no_exact_, trace_);
}

std::unique_ptr<ResumableSimulation> ResumableSimulation::fork() const {
  return std::unique_ptr<ResumableSimulation>(new ResumableSimulation(*this, Forked{}));
}

void ResumableSimulation::map_rows() {
  const int d = shape_.head_dim;
  group_.q.clear();
  for (const RowMatrixf& q : q_) group_.q.emplace_back(q.data(), filled_, d);
  // Eigen maps are re-pointed by construction (assignment would copy the data).
  new (&group_.k) ConstHeadMap(k_.data(), filled_, d);
  new (&group_.v) ConstHeadMap(v_.data(), filled_, d);
}

std::vector<Token> ResumableSimulation::cache() const { return head_ ? head_->sorted() : std::vector<Token>{}; }

ResumedSteps ResumableSimulation::extend(const std::vector<ConstHeadMap>& q, const ConstHeadMap& k,
                                         const ConstHeadMap& v, bool record_cache) {
  const int m = int(k.rows()), d = shape_.head_dim, g = shape_.group_size, n = shape_.capacity;
  if (int(q.size()) != g) refuse("expected " + std::to_string(g) + " query heads, got " + std::to_string(q.size()));
  bool shapes = k.cols() == d && v.rows() == m && v.cols() == d;
  for (const ConstHeadMap& rows : q) shapes = shapes && rows.rows() == m && rows.cols() == d;
  if (!shapes) refuse("q[h], k and v must all be m x " + std::to_string(d));
  if (m < 1) refuse("no rows to append");
  if (m > n - filled_) {
    refuse(std::to_string(m) + " rows exceed the capacity left (" + std::to_string(n - filled_) + " of " +
           std::to_string(n) + ")");
  }
  const bool first = filled_ == 0;
  const int from = filled_;
  for (int h = 0; h < g; ++h) q_[std::size_t(h)].middleRows(from, m) = q[std::size_t(h)];
  k_.middleRows(from, m) = k;
  v_.middleRows(from, m) = v;
  filled_ += m;
  map_rows();

  int i = from;
  ResumedSteps out;
  out.first = from;
  if (first) {
    PolicyContext context{&group_, n, options_.budget, options_.prefill, options_.aggregation, options_.seed};
    policy_->reset(context);
    const bool compresses = policy_->compresses() && (shape_.window == 0 || options_.budget < shape_.window);
    k_used_ = compresses ? options_.budget : n;
    if (options_.prefill > k_used_ && m < options_.prefill) {
      filled_ = 0;
      map_rows();
      refuse("the first rows (" + std::to_string(m) + ") must hold the prefill of " + std::to_string(options_.prefill) +
             " tokens");
    }
    trace_.steps.resize(std::size_t(n));
    head_ = std::make_unique<StreamingHead>(group_, std::min(k_used_, n) + 1, false, no_exact_, options_.aggregation,
                                            trace_, kStepBlock, options_.threads);
    if (options_.prefill > k_used_) {
      for (; i < options_.prefill; ++i) {
        out.evicted.push_back(kNoEviction);
        if (record_cache) {
          std::vector<Token>& s = out.cache.emplace_back(std::size_t(i + 1 - first_visible_key(i + 1, shape_.window)));
          std::iota(s.begin(), s.end(), first_visible_key(i + 1, shape_.window));  // the tokens step i + 1 sees
        }
      }
      prefill_evicted_ = run_prefill_rule(*head_, *policy_, options_.prefill, k_used_, shape_.window);
      if (record_cache) out.cache.back() = head_->sorted();
    }
  } else {
    policy_->rows_added(from);
  }
  for (; i < filled_; ++i) {
    out.evicted.push_back(run_policy_step(*head_, *policy_, i, k_used_));
    if (record_cache) out.cache.push_back(head_->sorted());
  }
  return out;
}

}  // namespace subevict::greedy
