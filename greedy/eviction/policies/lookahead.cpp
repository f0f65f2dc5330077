#include "greedy/eviction/policies/lookahead.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <stdexcept>

#include "core/input_error.hpp"
#include "greedy/eviction/optimum/offline_optimum.hpp"

namespace subevict::greedy {
namespace {

void check_horizon(int horizon) {
  if (horizon < 1) throw InputError("lookahead", "horizon", "an integer >= 1", std::to_string(horizon));
}

}  // namespace

Token lookahead_victim(const Eigen::MatrixXd& gains, const std::vector<Token>& members, int step,
                       int horizon) {
  if (horizon < 1 || members.empty()) {
    throw std::invalid_argument("lookahead_victim: needs horizon >= 1 and a non-empty G_i");
  }
  std::vector<Token> sorted = members;
  std::sort(sorted.begin(), sorted.end());
  if (sorted.back() > step || std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw std::invalid_argument("lookahead_victim: members must be distinct tokens <= step");
  }
  const int n = static_cast<int>(gains.rows());
  const int m = static_cast<int>(sorted.size());  // k + 1
  const int future = std::min(horizon, n - 1 - step);
  // Window instance: virtual tokens 0..m-1 are G_i (arriving at virtual steps 0..m-1 with no
  // gain), virtual step m + s is real step step + 1 + s, whose new token is virtual m + s.
  Eigen::MatrixXd window = Eigen::MatrixXd::Zero(m + future, m + future);
  for (int s = 0; s < future; ++s) {
    const int real = step + 1 + s;
    for (int v = 0; v < m; ++v) window(m + s, v) = gains(real, sorted[v]);
    for (int u = 0; u <= s; ++u) window(m + s, m + u) = gains(real, step + 1 + u);
  }
  OfflineOptimumOptions options;
  options.certify = false;
  const ScheduleSummary best = offline_optimum(window, m - 1, options);
  // Process form: virtual steps 0..m-2 fill the cache, virtual step m-1 (real step i) evicts one.
  for (int v = 0; v < m; ++v) {
    if (best.last_step[v] == m - 2) return sorted[v];
  }
  throw std::logic_error("lookahead_victim: the window optimum evicted no member of G_i");
}

ScheduleSummary lookahead_schedule(const Eigen::MatrixXd& gains, int budget, int horizon) {
  const auto start = std::chrono::steady_clock::now();
  validate_gains(gains, "lookahead_schedule");
  validate_budget(budget, "lookahead_schedule");
  check_horizon(horizon);
  const int n = static_cast<int>(gains.rows());
  ScheduleSummary out;
  out.last_step.resize(n);
  std::vector<Token> cache;
  for (int i = 0; i < n; ++i) {
    cache.push_back(i);
    if (static_cast<int>(cache.size()) > budget) {
      const Token victim = lookahead_victim(gains, cache, i, horizon);
      ++out.model_size;
      out.last_step[victim] = i - 1;
      cache.erase(std::find(cache.begin(), cache.end(), victim));
    }
  }
  for (Token j : cache) out.last_step[j] = n - 1;
  finish_summary(gains, out);
  out.status = ScheduleStatus::kFeasible;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

LookaheadPolicy::LookaheadPolicy(int horizon) : horizon_(horizon) { check_horizon(horizon); }

void LookaheadPolicy::reset(const PolicyContext& context) {
  context_ = context;
  gains_ = gain_matrix(*context.input);
}

std::vector<Token> LookaheadPolicy::prefill() {
  const int p = context_.prefill, n = context_.tokens;
  std::vector<double> future(p, 0.0);
  for (int i = p; i < std::min(n, p + horizon_); ++i) {
    for (int j = 0; j < p; ++j) future[j] += gains_(i, j);
  }
  std::vector<Token> order(p);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](Token a, Token b) { return future[a] > future[b]; });
  order.resize(std::min(p, context_.budget));
  std::sort(order.begin(), order.end());
  return order;
}

Token LookaheadPolicy::step(const StepView& view) {
  if (!view.full) return kNoEviction;
  return lookahead_victim(gains_, std::vector<Token>(view.tokens.begin(), view.tokens.end()),
                          view.step, horizon_);
}

}  // namespace subevict::greedy
