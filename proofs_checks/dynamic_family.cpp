#include "proofs_checks/dynamic_family.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <stdexcept>

#include "core/attention.hpp"
#include "core/tolerance.hpp"
#include "greedy/optimizers/random.hpp"

namespace subevict::proofs_checks {
namespace {

/// Calls visit(subset) for every subset of `pool` with at most `max_size` elements (ascending
/// within each subset), the empty set included.
template <class Visit>
void for_each_subset(const std::vector<int>& pool, int max_size, Visit visit) {
  std::vector<int> current;
  const auto recurse = [&](auto&& self, std::size_t from) -> void {
    visit(current);
    if (int(current.size()) == max_size) return;
    for (std::size_t e = from; e < pool.size(); ++e) {
      current.push_back(pool[e]);
      self(self, e + 1);
      current.pop_back();
    }
  };
  recurse(recurse, 0);
}

}  // namespace

Eigen::VectorXd tracked_row(const SmallHead& head, int i, const std::vector<int>& set) {
  std::vector<bool> in_set(std::size_t(i) + 1, false);
  for (int t : set) in_set[std::size_t(t)] = true;
  const Eigen::VectorXd logits = head.logits.row(i).head(i + 1).transpose();
  Eigen::VectorXd full = Eigen::VectorXd::Zero(head.tokens());
  full.head(i + 1) = tracked_attention(logits, in_set);
  return full;
}

Transform transform_of(greedy::Concave h) {
  return [h](double z) { return greedy::concave_value(h, z); };
}

greedy::HeadGroup SmallHead::group() const {
  const auto view = [](const RowMatrixf& m) { return ConstHeadMap(m.data(), m.rows(), m.cols()); };
  return greedy::HeadGroup{{view(q)}, view(k), view(v), scale, 0, 0};
}

SmallHead make_small_head(RowMatrixf q, RowMatrixf k, RowMatrixf v, double scale,
                          std::string label) {
  if (k.rows() < 1 || q.rows() != k.rows() || v.rows() != k.rows() || q.cols() != k.cols() ||
      v.cols() != k.cols()) {
    throw std::invalid_argument("make_small_head: expected Q, K, V of one shape n x d with n >= 1");
  }
  SmallHead head{std::move(q), std::move(k), std::move(v), scale, std::move(label), {}, {}};
  const int n = head.tokens();
  const ConstHeadMap qm(head.q.data(), n, head.q.cols());
  const ConstHeadMap km(head.k.data(), n, head.k.cols());
  head.attention = causal_attention(qm, km, scale);
  head.logits = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < n; ++i) head.logits.row(i).head(i + 1) = causal_logits(qm, km, i, scale).transpose();
  return head;
}

HeadIndex spread_head(const Shape& shape, int c, int count, const std::vector<int>& layers) {
  const long long spanned = layers.empty() ? shape.layers : (long long)layers.size();
  const long long index = (long long)c * spanned * shape.q_heads / count;
  const int position = int(index / shape.q_heads);
  return {layers.empty() ? position : layers[std::size_t(position)], int(index % shape.q_heads)};
}

std::vector<SmallHead> heads_from_workload(const Workload& workload, int tokens, int count,
                                           const std::vector<int>& layers) {
  const Shape& s = workload.shape();
  if (tokens < 1 || tokens > s.tokens || count < 1) {
    throw std::invalid_argument("heads_from_workload: expected 1 <= tokens <= " +
                                std::to_string(s.tokens) + " and count >= 1");
  }
  std::vector<SmallHead> heads;
  for (int c = 0; c < count; ++c) {
    const auto [layer, q_head] = spread_head(s, c, count, layers);
    const int kv = s.kv_head_of(q_head);
    heads.push_back(make_small_head(workload.q(layer, q_head).topRows(tokens),
                                    workload.k(layer, kv).topRows(tokens),
                                    workload.v(layer, kv).topRows(tokens), workload.score_scale(),
                                    "layer " + std::to_string(layer) + " head " +
                                        std::to_string(q_head) + ", first " +
                                        std::to_string(tokens) + " tokens"));
  }
  return heads;
}

std::vector<SmallHead> random_heads(int tokens, int dim, int count, std::uint64_t seed) {
  if (tokens < 1 || dim < 1 || count < 0) {
    throw std::invalid_argument("random_heads: expected tokens >= 1, dim >= 1, count >= 0");
  }
  std::mt19937_64 engine(seed);
  const auto normal = [&] {
    const double u1 = 1.0 - greedy::uniform_unit(engine), u2 = greedy::uniform_unit(engine);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  };
  const auto draw = [&] {
    RowMatrixf m(tokens, dim);
    for (Eigen::Index e = 0; e < m.size(); ++e) m.data()[e] = float(normal());
    return m;
  };
  std::vector<SmallHead> heads;
  for (int c = 0; c < count; ++c) {
    RowMatrixf q = draw(), k = draw(), v = draw();
    heads.push_back(make_small_head(std::move(q), std::move(k), std::move(v), 1.0 / std::sqrt(dim),
                                    "gaussian head " + std::to_string(c) + ", " +
                                        std::to_string(tokens) + " tokens"));
  }
  return heads;
}

std::vector<std::vector<int>> policy_caches(const SmallHead& head,
                                            const greedy::PolicyFactory& make_policy, int budget,
                                            std::uint64_t seed) {
  greedy::SimulationOptions options;
  options.budget = budget;
  options.record_cache = true;
  options.compute_metrics = false;
  options.seed = seed;
  const auto policy = make_policy();
  return greedy::simulate(head.group(), *policy, options).cache;
}

DynamicFamily::DynamicFamily(const SmallHead& head, std::vector<std::vector<int>> caches,
                             Transform h, Knowledge knowledge)
    : head_(&head), caches_(std::move(caches)), h_(std::move(h)), knowledge_(knowledge), h0_(h_(0.0)) {
  const int n = head.tokens();
  if (int(caches_.size()) != n) {
    throw std::invalid_argument("DynamicFamily: expected one cache per step (" + std::to_string(n) +
                                "), got " + std::to_string(caches_.size()));
  }
  acc_ = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < n; ++i) {
    for (int t : caches_[std::size_t(i)]) {
      if (t < 0 || t > i) throw std::invalid_argument("DynamicFamily: cache of step " + std::to_string(i) + " holds token " + std::to_string(t));
    }
    if (i > 0) acc_.row(i) = acc_.row(i - 1);
    acc_.row(i) += knowledge_ == Knowledge::kExact ? Eigen::VectorXd(head.attention.row(i).transpose())
                                                   : tracked_row(head, i, candidates(i));
  }
}

std::vector<int> DynamicFamily::candidates(int i) const {
  std::vector<int> g = i > 0 ? caches_[std::size_t(i) - 1] : std::vector<int>{};
  g.push_back(i);
  std::sort(g.begin(), g.end());
  return g;
}

double DynamicFamily::value_of(const Eigen::VectorXd& weights, const std::vector<int>& set) const {
  double z = 0.0;
  for (int t : set) z += weights[t];
  return h_(z) - h0_;
}

double DynamicFamily::value(int i, const std::vector<int>& set) const {
  double z = 0.0;
  for (int t : set) z += acc_(i, t);
  return h_(z) - h0_;
}

Eigen::VectorXd DynamicFamily::accumulated_after(int i, const std::vector<int>& previous) const {
  if (knowledge_ == Knowledge::kExact) return accumulated(i);
  std::vector<int> g = previous;
  g.push_back(i);
  Eigen::VectorXd acc = i > 0 ? Eigen::VectorXd(acc_.row(i - 1).transpose())
                              : Eigen::VectorXd::Zero(head_->tokens());
  return acc + tracked_row(*head_, i, g);
}

double DynamicFamily::opt(int i, int budget) const {
  std::vector<int> past(std::size_t(i), 0);
  for (int t = 0; t < i; ++t) past[std::size_t(t)] = t;
  double best = -std::numeric_limits<double>::infinity();
  for_each_subset(past, budget, [&](const std::vector<int>& x) {
    const Eigen::VectorXd acc = accumulated_after(i, x);
    std::vector<int> pool = x;
    pool.push_back(i);
    for_each_subset(pool, budget, [&](const std::vector<int>& y) { best = std::max(best, value_of(acc, y)); });
  });
  return best;
}

double smallest_shrink(double lhs, double rhs) {
  if (lhs >= rhs) return 0.0;
  if (rhs > 0.0) return 1.0 - lhs / rhs;
  return std::numeric_limits<double>::infinity();
}

ConditionTrace measure_conditions(const DynamicFamily& f, const DynamicFamily* approximate,
                                  int budget) {
  const int n = f.steps();
  ConditionTrace c;
  c.opt.resize(std::size_t(n));
  for (int i = 0; i < n; ++i) c.opt[std::size_t(i)] = f.opt(i, budget);
  const auto zeros = [n] { return std::vector<double>(std::size_t(n), 0.0); };
  c.theta = c.gamma = c.gamma_printed = c.epsilon0 = c.next_value = c.own_value = zeros();
  c.monotone.assign(std::size_t(n), 1);
  const double tol = Tol<double>::sum(std::size_t(n));
  for (int i = 0; i < n; ++i) {
    const auto u = std::size_t(i);
    const std::vector<int>& s = f.cache(i);
    c.own_value[u] = f.value(i, s);
    if (i > 0) {
      c.theta[u] = smallest_shrink(c.own_value[u], f.value(i - 1, s));
      c.gamma_printed[u] = smallest_shrink(c.opt[u], c.opt[u - 1]);
    }
    if (i + 1 < n) {
      c.gamma[u] = smallest_shrink(c.opt[u], c.opt[u + 1]);
      c.next_value[u] = f.value(i, f.cache(i + 1));
    }
    for (int x = 0; x <= i; ++x) {
      if (std::find(s.begin(), s.end(), x) != s.end()) continue;
      std::vector<int> bigger = s;
      bigger.push_back(x);
      if (f.value(i, bigger) < c.own_value[u] - tol * std::max(1.0, std::abs(c.own_value[u]))) {
        c.monotone[u] = 0;
      }
    }
    if (approximate != nullptr) {
      std::vector<std::vector<int>> sets = {s};
      if (i + 1 < n) {
        const std::vector<int> g = f.candidates(i + 1);
        for (std::size_t drop = 0; drop < g.size(); ++drop) {
          std::vector<int> t;
          for (std::size_t e = 0; e < g.size(); ++e) {
            if (e != drop) t.push_back(g[e]);
          }
          sets.push_back(std::move(t));
        }
      }
      for (const std::vector<int>& t : sets) {
        c.epsilon0[u] = std::max(c.epsilon0[u], approximate->value(i, t) - f.value(i, t));
      }
    }
  }
  return c;
}

const Workload& context_workload(const CheckContext& context, const std::string& checks) {
  if (context.workload == nullptr) throw std::invalid_argument(checks + ": the check context has no workload");
  return *context.workload;
}

int small_budget(double ratio, int tokens) {
  return std::max(1, std::min(4, int(std::ceil(ratio * tokens))));
}

}  // namespace subevict::proofs_checks
