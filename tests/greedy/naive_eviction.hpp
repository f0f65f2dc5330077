#pragma once
// Independent naive implementations of the eviction process (theory.md §2) and of every policy of
// greedy/eviction/policies/policy_registry.hpp, for the tests: plain O(n^2)-per-step loops over the full attention
// matrices from core/attention.hpp causal_attention, sharing no code with greedy/policies/. Each
// rule is restated here from its documentation; ties go to the lowest token (ascending scans with
// strict comparisons).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/attention.hpp"
#include "core/counter_rng.hpp"
#include "core/metrics.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"

namespace subevict::greedy::naive {

/// A random (layer, KV head) with g query heads, entries N(0, 1) from Philox (no exact ties),
/// queries multiplied by `sharpness` so attention is peaked like an LLM's.
struct Instance {
  int n = 1, d = 1, g = 1, layer = 0, kv_head = 0;
  double scale = 1.0;
  std::vector<std::vector<float>> q;
  std::vector<float> k, v;

  [[nodiscard]] HeadGroup group() const {
    std::vector<ConstHeadMap> qs;
    for (const auto& head : q) qs.emplace_back(head.data(), n, d);
    return HeadGroup{qs, ConstHeadMap(k.data(), n, d), ConstHeadMap(v.data(), n, d), scale, layer, kv_head};
  }
};

inline Instance random_instance(std::uint64_t seed, int n, int d, int g, double sharpness, int layer = 0) {
  Instance in;
  in.n = n;
  in.d = d;
  in.g = g;
  in.layer = layer;
  in.kv_head = int(seed % 3);
  in.scale = 1.0 / std::sqrt(double(d));
  const auto fill = [&](std::uint64_t tensor, double factor) {
    std::vector<float> x(std::size_t(n) * d);
    for (std::size_t e = 0; e < x.size(); ++e) x[e] = float(factor * normal(seed, tensor, e));
    return x;
  };
  for (int h = 0; h < g; ++h) in.q.push_back(fill(10 + std::uint64_t(h), sharpness));
  in.k = fill(1, 1.0);
  in.v = fill(2, 1.0);
  return in;
}

inline double combine(GroupAggregation rule, const std::vector<double>& x) {
  double out = rule == GroupAggregation::kMax ? x[0] : 0.0;
  for (double value : x) out = rule == GroupAggregation::kMax ? std::max(out, value) : out + value;
  return rule == GroupAggregation::kMean ? out / double(x.size()) : out;
}

/// What the naive process produced.
struct Result {
  std::vector<int> evicted;                // per step, −1 for none
  std::vector<int> prefill_kept;           // ascending; empty without prefill
  std::vector<std::vector<int>> cache;     // S_i ascending
  std::vector<std::vector<double>> mass;   // [step][head]
  std::vector<std::vector<double>> error;  // [step][head]
  int budget = 0;
};

struct Setup {
  std::string policy;
  PolicyParams params;
  int budget = 1;
  int prefill = 0;
  GroupAggregation rule = GroupAggregation::kSum;
  std::uint64_t seed = 0;
};

inline std::uint64_t stream(std::uint64_t id, const Instance& in) {
  return (id << 48) | (std::uint64_t(in.layer) << 24) | std::uint64_t(in.kv_head);
}

/// Lowest-token argmin of score over the members of `set` (ascending) with ok(j); −1 if none.
template <class Score, class Ok>
int lowest_argmin(const std::vector<int>& set, Score score, Ok ok) {
  int best = -1;
  double best_score = 0;
  for (int j : set) {
    if (!ok(j)) continue;
    const double s = score(j);
    if (best < 0 || s < best_score) {
      best = j;
      best_score = s;
    }
  }
  return best;
}

inline Result simulate(const Instance& in, const Setup& setup) {
  const int n = in.n, g = in.g;
  const HeadGroup group = in.group();
  std::vector<Eigen::MatrixXd> a;
  for (int h = 0; h < g; ++h) a.push_back(causal_attention(group.q[h], group.k, in.scale));
  const auto full_agg = [&](int i, int j) {
    std::vector<double> x;
    for (int h = 0; h < g; ++h) x.push_back(a[h](i, j));
    return combine(setup.rule, x);
  };
  const std::string& name = setup.policy;
  const PolicyParams& p = setup.params;

  bool compress = true;
  if (name == "l2norm") {
    compress = std::find(p.skipped_layers.begin(), p.skipped_layers.end(), in.layer) == p.skipped_layers.end();
  }
  const int k = compress ? setup.budget : n;
  int heavy = int(p.heavy_ratio * k), recent = k - heavy;
  if (p.heavy >= 0 && p.recent >= 0) {
    heavy = p.heavy;
    recent = p.recent;
  } else if (p.heavy >= 0) {
    recent = k - p.heavy;
  } else if (p.recent >= 0) {
    recent = p.recent;
  }
  const int hh = (k + 1) / 2;  // FlexGen's hh_k
  const int window = p.window == 0 ? p.stride : p.window;
  const int w = p.observation_window;

  std::vector<double> norm(n), acc(n, 0.0), oracle(n, 0.0);
  for (int j = 0; j < n; ++j) norm[j] = group.k.row(j).cast<double>().norm();
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j <= i; ++j) oracle[j] += full_agg(i, j);
  }
  std::vector<std::vector<double>> seen(n, std::vector<double>(n, 0.0));  // attention step s paid j
  const auto noise = [&](int i, int j) {
    return p.epsilon * (2.0 * uniform(setup.seed, stream(0x102, in), std::uint64_t(i) * n + j) - 1.0);
  };
  const auto strided_class = [&](int i, int j) { return j > i - window ? 2.0 : (j % p.stride == 0 ? 1.0 : 0.0); };
  const auto fixed_class = [&](int i, int j) {
    return j / p.stride == i / p.stride ? 2.0 : (j % p.stride >= p.stride - p.summary ? 1.0 : 0.0);
  };
  const bool accumulates = name.rfind("h2o", 0) == 0 && name != "h2o-oracle";

  Result out;
  out.budget = k;
  out.evicted.assign(n, -1);
  out.cache.resize(n);
  out.mass.assign(n, std::vector<double>(g, 1.0));
  out.error.assign(n, std::vector<double>(g, 0.0));
  std::vector<char> cached(n, 0);
  const bool prefill = setup.prefill > k;
  const int P = setup.prefill;
  int start = 0;
  if (prefill) {
    start = P;
    for (int s = 0; s < P; ++s) {
      for (int j = 0; j <= s; ++j) seen[s][j] = full_agg(s, j);
      out.cache[s].clear();
      for (int j = 0; j <= s; ++j) out.cache[s].push_back(j);
    }
    for (int j = 0; j < P; ++j) {
      if (accumulates) {
        for (int s = j; s < P; ++s) acc[j] += full_agg(s, j);
      }
    }
    // Prefill score and eligibility, then evict the lowest-token argmin until `keep` remain.
    std::vector<double> score(P, 0.0);
    std::vector<char> ok(P, 1);
    int keep = k;
    if (name == "h2o-alg1" || name.rfind("h2o-alg2", 0) == 0) {
      score = std::vector<double>(acc.begin(), acc.begin() + P);
    } else if (name == "h2o-noisy") {
      for (int j = 0; j < P; ++j) score[j] = acc[j] + noise(P - 1, j);
    } else if (name == "h2o") {
      for (int j = 0; j < P; ++j) score[j] = acc[j], ok[j] = j < P - recent;
    } else if (name == "h2o-flexgen") {
      keep = std::min(k, 2 * hh - 1);
      for (int j = 0; j < P; ++j) score[j] = acc[j], ok[j] = j < P - hh + 1;
    } else if (name == "h2o-oracle") {
      for (int j = 0; j < P; ++j) score[j] = oracle[j], ok[j] = j < P - recent;
    } else if (name == "streamingllm") {
      for (int j = 0; j < P; ++j) ok[j] = j >= p.sinks;
    } else if (name == "sparse-strided") {
      for (int j = 0; j < P; ++j) score[j] = strided_class(P - 1, j);
    } else if (name == "sparse-fixed") {
      for (int j = 0; j < P; ++j) score[j] = fixed_class(P - 1, j);
    } else if (name == "random") {
      for (int j = 0; j < P; ++j) score[j] = uniform(setup.seed, stream(0x101, in), std::uint64_t(j));
    } else if (name == "l2norm") {
      for (int j = 0; j < P; ++j) score[j] = -norm[j];
    } else if (name == "tova") {
      for (int j = 0; j < P; ++j) score[j] = full_agg(P - 1, j);
    } else if (name == "snapkv") {
      const int m = P - w;
      std::vector<std::vector<double>> pooled(g, std::vector<double>(m, 0.0));
      for (int h = 0; h < g; ++h) {
        std::vector<double> sums(m, 0.0);
        for (int j = 0; j < m; ++j) {
          for (int s = m; s < P; ++s) sums[j] += a[h](s, j);
        }
        const int half = p.pooling_kernel / 2;
        for (int j = 0; j < m; ++j) {
          if (p.pooling == Pooling::kNone || p.pooling_kernel == 1) {
            pooled[h][j] = sums[j];
            continue;
          }
          double best = -1e300, total = 0.0;
          for (int s = j - half; s <= j + half; ++s) {
            if (s < 0 || s >= m) continue;
            best = std::max(best, sums[s]);
            total += sums[s];
          }
          pooled[h][j] = p.pooling == Pooling::kMax ? best : total / p.pooling_kernel;
        }
      }
      for (int j = 0; j < P; ++j) {
        ok[j] = j < m;
        if (j < m) {
          std::vector<double> x;
          for (int h = 0; h < g; ++h) x.push_back(pooled[h][j]);
          score[j] = combine(setup.rule, x);
        }
      }
    }
    std::vector<int> set;
    for (int j = 0; j < P; ++j) set.push_back(j);
    while (int(set.size()) > keep) {
      const int victim = lowest_argmin(set, [&](int j) { return score[j]; }, [&](int j) { return ok[j] != 0; });
      if (victim < 0) break;
      set.erase(std::find(set.begin(), set.end(), victim));
    }
    for (int j : set) cached[j] = 1;
    out.prefill_kept = set;
    out.cache[P - 1] = set;
  }

  for (int i = start; i < n; ++i) {
    std::vector<int> members;
    for (int j = 0; j < i; ++j) {
      if (cached[j]) members.push_back(j);
    }
    const bool full = int(members.size()) == k;
    members.push_back(i);
    std::vector<bool> in_set(i + 1, false);
    for (int j : members) in_set[j] = true;
    // Tracked attention per head by renormalizing the full row over G_i.
    std::vector<std::vector<double>> tracked(g, std::vector<double>(n, 0.0));
    for (int h = 0; h < g; ++h) {
      double total = 0.0;
      for (int j : members) total += a[h](i, j);
      for (int j : members) tracked[h][j] = a[h](i, j) / total;
    }
    for (int j : members) {
      std::vector<double> x;
      for (int h = 0; h < g; ++h) x.push_back(tracked[h][j]);
      seen[i][j] = combine(setup.rule, x);
      if (accumulates) acc[j] += seen[i][j];
    }
    // Metrics with core's functions on the same set.
    const bool whole = int(members.size()) == i + 1;
    for (int h = 0; h < g; ++h) {
      if (whole) continue;
      const Eigen::VectorXd row = a[h].row(i).head(i + 1).transpose();
      out.mass[i][h] = retained_mass(row, in_set);
      const Eigen::VectorXd o = attention_output(row, group.v);
      const Eigen::VectorXd o_tilde =
          attention_output(tracked_attention(causal_logits(group.q[h], group.k, i, in.scale), in_set), group.v);
      out.error[i][h] = output_relative_error(o, o_tilde);
    }
    int victim = -1;
    if (full) {
      const auto all = [](int) { return true; };
      if (name == "h2o-alg1") {
        victim = lowest_argmin(members, [&](int j) { return acc[j]; }, all);
      } else if (name.rfind("h2o-alg2", 0) == 0) {
        // argmax_v h(Σ_{s ∈ G \ {v}} acc_s), summed explicitly for every v.
        double best = 0.0;
        for (int v : members) {
          double z = 0.0;
          for (int s : members) {
            if (s != v) z += acc[s];
          }
          const double f = name == "h2o-alg2-linear" ? z : (name == "h2o-alg2-sqrt" ? std::sqrt(z + 1.0) : std::log(z + 1.0));
          if (victim < 0 || f > best) victim = v, best = f;
        }
      } else if (name == "h2o-noisy") {
        victim = lowest_argmin(members, [&](int j) { return acc[j] + noise(i, j); }, all);
      } else if (name == "h2o") {
        victim = lowest_argmin(members, [&](int j) { return acc[j]; }, [&](int j) { return j <= i - recent; });
      } else if (name == "h2o-flexgen") {
        victim = lowest_argmin(members, [&](int j) { return acc[j]; }, [&](int j) { return j <= i - hh; });
      } else if (name == "h2o-oracle") {
        victim = lowest_argmin(members, [&](int j) { return oracle[j]; }, [&](int j) { return j <= i - recent; });
      } else if (name == "local") {
        victim = members.front();
      } else if (name == "streamingllm") {
        victim = lowest_argmin(members, [](int) { return 0.0; }, [&](int j) { return j >= p.sinks; });
      } else if (name == "sparse-strided") {
        victim = lowest_argmin(members, [&](int j) { return strided_class(i, j); }, all);
      } else if (name == "sparse-fixed") {
        victim = lowest_argmin(members, [&](int j) { return fixed_class(i, j); }, all);
      } else if (name == "random") {
        const std::vector<int> old(members.begin(), members.end() - 1);
        const double u = uniform(setup.seed, stream(0x100, in), std::uint64_t(i));
        victim = old[std::min(old.size() - 1, std::size_t(u * double(old.size())))];
      } else if (name == "l2norm") {
        victim = lowest_argmin(members, [&](int j) { return -norm[j]; }, all);
      } else if (name == "tova") {
        victim = lowest_argmin(members, [&](int j) { return seen[i][j]; }, all);
      } else if (name == "snapkv") {
        std::vector<double> score(n, 0.0);
        for (int s = std::max(0, i - w + 1); s <= i; ++s) {
          for (int j : members) score[j] += seen[s][j];
        }
        victim = lowest_argmin(members, [&](int j) { return score[j]; }, [&](int j) { return j <= i - w; });
      }
    }
    cached[i] = 1;
    if (victim >= 0) cached[victim] = 0;
    out.evicted[i] = victim;
    for (int j = 0; j <= i; ++j) {
      if (cached[j]) out.cache[i].push_back(j);
    }
  }
  return out;
}

}  // namespace subevict::greedy::naive
