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

/// keydiff over `set` (ascending): −cos(k_j, mean of the unit keys), 0 for a zero norm product.
inline std::vector<double> keydiff_scores(const Instance& in, const std::vector<int>& set) {
  const int d = in.d;
  const auto key = [&](int j, int c) { return double(in.k[std::size_t(j) * d + c]); };
  std::vector<double> norm(in.n, 0.0), anchor(d, 0.0), score(in.n, 0.0);
  for (int j : set) {
    double sq = 0.0;
    for (int c = 0; c < d; ++c) sq += key(j, c) * key(j, c);
    norm[j] = std::sqrt(sq);
    if (norm[j] > 0.0) {
      for (int c = 0; c < d; ++c) anchor[c] += key(j, c) / norm[j];
    }
  }
  double anchor_sq = 0.0;
  for (int c = 0; c < d; ++c) anchor[c] /= double(set.size()), anchor_sq += anchor[c] * anchor[c];
  for (int j : set) {
    double dot = 0.0;
    for (int c = 0; c < d; ++c) dot += key(j, c) * anchor[c];
    const double denominator = norm[j] * std::sqrt(anchor_sq);
    score[j] = denominator > 0.0 ? -dot / denominator : 0.0;
  }
  return score;
}

/// leverage over `set`: x_j = k_j − mean, h_j = x_jᵀ (XᵀX + ridge I)⁻¹ x_j by Gauss-Jordan inversion.
inline std::vector<double> leverage_scores(const Instance& in, const std::vector<int>& set, double ridge) {
  const int d = in.d;
  std::vector<double> mean(d, 0.0), score(in.n, 0.0);
  for (int j : set) {
    for (int c = 0; c < d; ++c) mean[c] += double(in.k[std::size_t(j) * d + c]);
  }
  for (double& x : mean) x /= double(set.size());
  std::vector<std::vector<double>> x;
  for (int j : set) {
    std::vector<double> row(d);
    for (int c = 0; c < d; ++c) row[c] = double(in.k[std::size_t(j) * d + c]) - mean[c];
    x.push_back(row);
  }
  // [G | I] -> [I | G⁻¹], partial pivoting.
  std::vector<std::vector<double>> aug(d, std::vector<double>(2 * d, 0.0));
  for (int a = 0; a < d; ++a) {
    for (int b = 0; b < d; ++b) {
      for (const auto& row : x) aug[a][b] += row[a] * row[b];
    }
    aug[a][a] += ridge;
    aug[a][d + a] = 1.0;
  }
  for (int col = 0; col < d; ++col) {
    int pivot = col;
    for (int r = col + 1; r < d; ++r) {
      if (std::abs(aug[r][col]) > std::abs(aug[pivot][col])) pivot = r;
    }
    std::swap(aug[col], aug[pivot]);
    const double p = aug[col][col];
    for (double& v : aug[col]) v /= p;
    for (int r = 0; r < d; ++r) {
      if (r == col) continue;
      const double f = aug[r][col];
      for (int c = 0; c < 2 * d; ++c) aug[r][c] -= f * aug[col][c];
    }
  }
  for (std::size_t e = 0; e < set.size(); ++e) {
    double h = 0.0;
    for (int a = 0; a < d; ++a) {
      for (int b = 0; b < d; ++b) h += x[e][a] * aug[a][d + b] * x[e][b];
    }
    score[set[e]] = h;
  }
  return score;
}

/// (x − mean) / max(std, 1e-6) over `set`'s entries of `x` (std with divisor |set| − 1), 0 when |set| < 2.
inline void naive_z(std::vector<double>& x, const std::vector<int>& set) {
  if (set.size() < 2) {
    for (int j : set) x[j] = 0.0;
    return;
  }
  double mean = 0.0, sq = 0.0;
  for (int j : set) mean += x[j];
  mean /= double(set.size());
  for (int j : set) sq += (x[j] - mean) * (x[j] - mean);
  const double sd = std::max(std::sqrt(sq / double(set.size() - 1)), 1e-6);
  for (int j : set) x[j] = (x[j] - mean) / sd;
}

/// non_causal_attention over `set` (ascending), from its documented rule: chunks of p.chunk_size
/// members, a short last chunk padded with zero keys (logit -1e-9 for every query) and zero queries
/// (logit 0 on the members), column sums averaged over the group, times |v|, 3-wide average pool.
inline std::vector<double> non_causal_scores(const Instance& in, const std::vector<int>& set, int chunk) {
  const int d = in.d, m = int(set.size());
  const double pad_logit = -1e-9;
  std::vector<double> col(in.n, 0.0), att(in.n, 0.0);
  for (int first = 0; first < m; first += chunk) {
    const int last = std::min(m, first + chunk), pad = first + chunk - last;
    for (int h = 0; h < in.g; ++h) {
      for (int s = first; s < last + pad; ++s) {  // queries: members, then the padding's zero queries
        std::vector<double> z;
        for (int t = first; t < last + pad; ++t) {
          double dot = 0.0;
          if (s < last && t < last) {
            for (int c = 0; c < d; ++c) dot += double(in.q[h][std::size_t(set[s]) * d + c]) * double(in.k[std::size_t(set[t]) * d + c]);
          }
          z.push_back(t < last ? dot : pad_logit);
        }
        const double top = *std::max_element(z.begin(), z.end());
        double sum = 0.0;
        for (double& e : z) sum += (e = std::exp(e - top));
        for (int t = first; t < last; ++t) col[set[t]] += z[t - first] / sum;
      }
    }
  }
  std::vector<double> w(in.n, 0.0);
  for (int j : set) {
    double sq = 0.0;
    for (int c = 0; c < d; ++c) sq += double(in.v[std::size_t(j) * d + c]) * double(in.v[std::size_t(j) * d + c]);
    w[j] = col[j] / double(in.g) * std::sqrt(sq);
  }
  for (int r = 0; r < m; ++r) {
    att[set[r]] = ((r > 0 ? w[set[r - 1]] : 0.0) + w[set[r]] + (r + 1 < m ? w[set[r + 1]] : 0.0)) / 3.0;
  }
  return att;
}

/// compactor over the unprotected `set` (ascending), from its documented rule, with weight `beta`.
inline std::vector<double> compactor_scores(const Instance& in, const std::vector<int>& set, const PolicyParams& p,
                                            double beta) {
  std::vector<double> lev = leverage_scores(in, set, p.ridge), att = non_causal_scores(in, set, p.chunk_size),
                      score(in.n, 0.0);
  naive_z(lev, set);
  naive_z(att, set);
  for (int j : set) score[j] = beta * lev[j] + att[j];
  return score;
}

/// expected_attention over the non-sink `set` with the queries `first..last` (inclusive).
inline std::vector<double> expected_attention_scores(const Instance& in, const std::vector<int>& set, int first,
                                                     int last, const PolicyParams& p, GroupAggregation rule) {
  const int d = in.d;
  const auto key = [&](int j, int c) { return double(in.k[std::size_t(j) * d + c]); };
  std::vector<std::vector<double>> prob(in.g, std::vector<double>(in.n, 0.0));
  for (int h = 0; h < in.g; ++h) {
    const auto query = [&](int s, int c) { return double(in.q[h][std::size_t(s) * d + c]); };
    const double m = double(last - first + 1);
    std::vector<double> mu(d, 0.0);
    std::vector<std::vector<double>> second(d, std::vector<double>(d, 0.0));
    for (int s = first; s <= last; ++s) {
      for (int a = 0; a < d; ++a) {
        mu[a] += query(s, a);
        for (int b = 0; b < d; ++b) second[a][b] += query(s, a) * query(s, b);
      }
    }
    for (int a = 0; a < d; ++a) mu[a] /= m;
    std::vector<double> z(in.n, 0.0);
    double top = -1e300;
    for (int j : set) {
      double linear = 0.0, quadratic = 0.0;
      for (int a = 0; a < d; ++a) {
        linear += mu[a] * key(j, a);
        for (int b = 0; b < d; ++b) quadratic += key(j, a) * (second[a][b] / m - mu[a] * mu[b]) * key(j, b);
      }
      z[j] = in.scale * linear + (p.use_covariance ? in.scale * in.scale / 2.0 * quadratic : 0.0);
      top = std::max(top, z[j]);
    }
    double total = 0.0;
    for (int j : set) total += std::exp(z[j] - top);
    for (int j : set) prob[h][j] = std::exp(z[j] - top) / total;
  }
  std::vector<double> score(in.n, 0.0);
  for (int j : set) {
    std::vector<double> x;
    for (int h = 0; h < in.g; ++h) x.push_back(prob[h][j]);
    double vnorm = 0.0;
    for (int c = 0; c < d; ++c) vnorm += double(in.v[std::size_t(j) * d + c]) * double(in.v[std::size_t(j) * d + c]);
    score[j] = p.use_vnorm ? (combine(rule, x) + p.expected_epsilon) * std::sqrt(vnorm) : combine(rule, x);
  }
  return score;
}

/// lagkv over `set` (ascending), from its documented rule.
inline std::vector<double> lagkv_scores(const Instance& in, const std::vector<int>& set, const PolicyParams& p) {
  const int m = int(set.size()), s = p.sinks, L = p.lag_size, d = in.d;
  std::vector<double> score(in.n, 0.0);
  for (int j : set) score[j] = 1.0;
  if (m < s + 2 * L) {
    for (int r = s; r < m; ++r) score[set[r]] = double(r - s) / double(m - s);
    return score;
  }
  const int J = (m - s) / L;
  const auto softmax_spread = [&](const std::vector<float>& x, int part) {
    std::vector<double> sigma;
    for (int e = 0; e < L; ++e) {
      std::vector<double> y;
      for (int c = 0; c < d; ++c) {
        double lo = 1e300, hi = -1e300;
        for (int f = 0; f < L; ++f) {
          lo = std::min(lo, double(x[std::size_t(set[s + (part + 1) * L + f]) * d + c]));
          hi = std::max(hi, double(x[std::size_t(set[s + (part + 1) * L + f]) * d + c]));
        }
        const double value = double(x[std::size_t(set[s + part * L + e]) * d + c]);
        y.push_back(hi > lo ? (value - lo) / (hi - lo) : 0.0);
      }
      double mean = 0.0, sq = 0.0;
      for (double v : y) mean += v;
      mean /= d;
      for (double v : y) sq += (v - mean) * (v - mean);
      sigma.push_back(d > 1 ? std::sqrt(sq / (d - 1)) : 0.0);
    }
    const double top = *std::max_element(sigma.begin(), sigma.end());
    double total = 0.0;
    for (double v : sigma) total += std::exp(v - top);
    std::vector<double> out;
    for (double v : sigma) out.push_back(std::exp(v - top) / total);
    return out;
  };
  for (int part = 0; part < J - 1; ++part) {
    const std::vector<double> pk = softmax_spread(in.k, part), pv = softmax_spread(in.v, part);
    for (int e = 0; e < L; ++e) {
      const double raw = (pk[e] + pv[e]) / 2.0;
      int below = 0;
      for (int f = 0; f < L; ++f) {
        const double other = (pk[f] + pv[f]) / 2.0;
        if (other < raw || (other == raw && f < e)) ++below;
      }
      score[set[s + part * L + e]] = p.cross_scoring ? raw : double(below) / L;
    }
  }
  return score;
}

/// cur over `set` (ascending), from its documented rule.
inline std::vector<double> cur_scores(const Instance& in, const std::vector<int>& set, const PolicyParams& p) {
  const int m = int(set.size()), d = in.d, w = p.local_window_size;
  std::vector<double> k2(m, 0.0), v2(m, 0.0), score(in.n, 0.0);
  for (int r = 0; r < m; ++r) {
    for (int c = 0; c < d; ++c) {
      k2[r] += double(in.k[std::size_t(set[r]) * d + c]) * double(in.k[std::size_t(set[r]) * d + c]);
      v2[r] += double(in.v[std::size_t(set[r]) * d + c]) * double(in.v[std::size_t(set[r]) * d + c]);
    }
  }
  if (p.use_local_approximation) {
    std::vector<double> nk(m), nv(m);
    for (int r = 0; r < m; ++r) {
      double sk = 0.0, sv = 0.0;
      for (int f = (r / w) * w; f < std::min(m, (r / w + 1) * w); ++f) sk += k2[f], sv += v2[f];
      nk[r] = sk > 0.0 ? k2[r] / sk : 0.0;
      nv[r] = sv > 0.0 ? v2[r] / sv : 0.0;
    }
    k2 = nk;
    v2 = nv;
  }
  std::vector<double> combined(m);
  double total = 0.0;
  for (int r = 0; r < m; ++r) {
    combined[r] = p.cur_leverage == CurLeverage::kKey     ? k2[r]
                  : p.cur_leverage == CurLeverage::kValue ? v2[r]
                  : p.cur_leverage == CurLeverage::kKvAvg ? (k2[r] + v2[r]) / 2.0
                                                          : k2[r] * v2[r];
    total += combined[r];
  }
  for (int r = 0; r < m; ++r) score[set[r]] = total > 0.0 ? combined[r] / total : 0.0;
  return score;
}

/// The inverse of the d x d matrix `a` by Gauss-Jordan elimination with partial pivoting.
inline std::vector<std::vector<double>> naive_inverse(std::vector<std::vector<double>> a) {
  const int d = int(a.size());
  std::vector<std::vector<double>> inv(d, std::vector<double>(d, 0.0));
  for (int r = 0; r < d; ++r) inv[r][r] = 1.0;
  for (int col = 0; col < d; ++col) {
    int pivot = col;
    for (int r = col + 1; r < d; ++r) {
      if (std::abs(a[r][col]) > std::abs(a[pivot][col])) pivot = r;
    }
    std::swap(a[col], a[pivot]);
    std::swap(inv[col], inv[pivot]);
    const double p = a[col][col];
    for (int c = 0; c < d; ++c) a[col][c] /= p, inv[col][c] /= p;
    for (int r = 0; r < d; ++r) {
      if (r == col) continue;
      const double f = a[r][col];
      for (int c = 0; c < d; ++c) a[r][c] -= f * a[col][c], inv[r][c] -= f * inv[col][c];
    }
  }
  return inv;
}

/// cap over the non-sink `set` with the queries `first..last` (inclusive), from its documented rule.
inline std::vector<double> cap_scores(const Instance& in, const std::vector<int>& set, int first, int last,
                                      const PolicyParams& p, GroupAggregation rule) {
  const int d = in.d;
  const auto key = [&](int j, int c) { return double(in.k[std::size_t(j) * d + c]); };
  const auto value = [&](int j, int c) { return double(in.v[std::size_t(j) * d + c]); };
  std::vector<std::vector<double>> head(in.g, std::vector<double>(in.n, 0.0));
  for (int h = 0; h < in.g; ++h) {
    std::vector<double> mu(d, 0.0);
    for (int s = first; s <= last; ++s) {
      for (int c = 0; c < d; ++c) mu[c] += double(in.q[h][std::size_t(s) * d + c]);
    }
    for (double& x : mu) x /= double(last - first + 1);
    double mu_sq = 0.0;
    for (double x : mu) mu_sq += x * x;
    std::vector<double> stat(in.n, 0.0), w(in.n, 0.0);
    double top = -1e300;
    for (int j : set) {
      double dot = 0.0, k_sq = 0.0;
      for (int c = 0; c < d; ++c) dot += mu[c] * key(j, c), k_sq += key(j, c) * key(j, c);
      const double denominator = std::sqrt(mu_sq) * std::sqrt(k_sq);
      stat[j] = denominator > 0.0 ? std::min(1.0, std::max(-1.0, dot / denominator)) : 0.0;
      top = std::max(top, stat[j]);
    }
    std::vector<std::vector<double>> a(d, std::vector<double>(d, 0.0));
    for (int r = 0; r < d; ++r) a[r][r] = 1.0;
    for (int j : set) {
      w[j] = std::exp(p.tau * (stat[j] - top));
      for (int r = 0; r < d; ++r) {
        for (int c = 0; c < d; ++c) a[r][c] += (w[j] + p.cap_epsilon) * value(j, r) * value(j, c);
      }
    }
    const std::vector<std::vector<double>> inv = naive_inverse(a);
    for (int j : set) {
      double lev = 0.0;
      for (int r = 0; r < d; ++r) {
        for (int c = 0; c < d; ++c) lev += value(j, r) * inv[r][c] * value(j, c);
      }
      head[h][j] = w[j] * lev;
    }
  }
  std::vector<double> score(in.n, 0.0);
  for (int j : set) {
    std::vector<double> x;
    for (int h = 0; h < in.g; ++h) x.push_back(head[h][j]);
    score[j] = combine(rule, x);
  }
  return score;
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
  // The same per query head: seen_head[h][s][j].
  std::vector<std::vector<std::vector<double>>> seen_head(g, std::vector<std::vector<double>>(n, std::vector<double>(n, 0.0)));
  // snapkv's pooling of `sums` (consecutive positions, zeros beyond the ends counted by avg).
  const auto snap_pool = [&](const std::vector<double>& sums) {
    const int m = int(sums.size()), half = p.pooling_kernel / 2;
    std::vector<double> pooled(m, 0.0);
    for (int j = 0; j < m; ++j) {
      if (p.pooling == Pooling::kNone || p.pooling_kernel == 1) {
        pooled[j] = sums[j];
        continue;
      }
      double best = -1e300, total = 0.0;
      for (int s = j - half; s <= j + half; ++s) {
        if (s < 0 || s >= m) continue;
        best = std::max(best, sums[s]);
        total += sums[s];
      }
      pooled[j] = p.pooling == Pooling::kMax ? best : total / p.pooling_kernel;
    }
    return pooled;
  };
  const auto noise = [&](int i, int j) {
    return p.epsilon * (2.0 * uniform(setup.seed, stream(0x102, in), std::uint64_t(i) * n + j) - 1.0);
  };
  const auto strided_class = [&](int i, int j) { return j > i - window ? 2.0 : (j % p.stride == 0 ? 1.0 : 0.0); };
  const auto fixed_class = [&](int i, int j) {
    return j / p.stride == i / p.stride ? 2.0 : (j % p.stride >= p.stride - p.summary ? 1.0 : 0.0);
  };
  const bool accumulates = (name.rfind("h2o", 0) == 0 && name != "h2o-oracle") || name == "observed_attention";

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
      for (int h = 0; h < g; ++h) {
        for (int j = 0; j <= s; ++j) seen_head[h][s][j] = a[h](s, j);
      }
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
    } else if (name == "streamingllm" || name == "streaming_llm") {
      for (int j = 0; j < P; ++j) ok[j] = j >= p.sinks;
    } else if (name == "knorm") {
      for (int j = 0; j < P; ++j) score[j] = -norm[j];
    } else if (name == "observed_attention") {
      for (int j = 0; j < P; ++j) score[j] = acc[j] / double(P - j);
    } else if (name == "keydiff" || name == "leverage" || name == "non_causal_attention") {
      std::vector<int> prompt;
      for (int j = 0; j < P; ++j) prompt.push_back(j);
      score = name == "keydiff"    ? keydiff_scores(in, prompt)
              : name == "leverage" ? leverage_scores(in, prompt, p.ridge)
                                   : non_causal_scores(in, prompt, p.chunk_size);
    } else if (name == "lagkv" || name == "cur") {
      std::vector<int> prompt;
      for (int j = 0; j < P; ++j) prompt.push_back(j);
      score = name == "lagkv" ? lagkv_scores(in, prompt, p) : cur_scores(in, prompt, p);
      if (name == "cur") {
        for (int j = 0; j < P; ++j) ok[j] = j >= p.sinks;
      }
    } else if (name == "compactor") {
      std::vector<int> middle;
      for (int j = 0; j < P; ++j) {
        ok[j] = j >= p.sink_size_start && j <= P - 1 - p.sink_size_end;
        if (ok[j]) middle.push_back(j);
      }
      score = compactor_scores(in, middle, p, p.blending >= 0.0 ? p.blending : 1.0 - double(k) / double(P));
    } else if (name == "expected_attention" || name == "cap") {
      std::vector<int> prompt;
      for (int j = p.sinks; j < P; ++j) prompt.push_back(j);
      score = name == "cap" ? cap_scores(in, prompt, p.sinks, P - 1, p, setup.rule)
                            : expected_attention_scores(in, prompt, p.sinks, P - 1, p, setup.rule);
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
        pooled[h] = snap_pool(sums);
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
      for (int h = 0; h < g; ++h) seen_head[h][i][j] = tracked[h][j];
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
      } else if (name == "streamingllm" || name == "streaming_llm") {
        victim = lowest_argmin(members, [](int) { return 0.0; }, [&](int j) { return j >= p.sinks; });
      } else if (name == "knorm") {
        victim = lowest_argmin(members, [&](int j) { return -norm[j]; }, all);
      } else if (name == "observed_attention") {
        victim = lowest_argmin(members, [&](int j) { return acc[j] / double(i - j + 1); }, all);
      } else if (name == "keydiff") {
        const std::vector<double> score = keydiff_scores(in, members);
        victim = lowest_argmin(members, [&](int j) { return score[j]; }, all);
      } else if (name == "leverage") {
        const std::vector<double> score = leverage_scores(in, members, p.ridge);
        victim = lowest_argmin(members, [&](int j) { return score[j]; }, all);
      } else if (name == "non_causal_attention") {
        const std::vector<double> score = non_causal_scores(in, members, p.chunk_size);
        victim = lowest_argmin(members, [&](int j) { return score[j]; }, all);
      } else if (name == "lagkv") {
        const std::vector<double> score = lagkv_scores(in, members, p);
        victim = lowest_argmin(members, [&](int j) { return score[j]; }, all);
      } else if (name == "cur") {
        const std::vector<double> score = cur_scores(in, members, p);
        victim = lowest_argmin(members, [&](int j) { return score[j]; }, [&](int j) { return j >= p.sinks; });
      } else if (name == "compactor") {
        std::vector<int> middle;
        for (int j : members) {
          if (j >= p.sink_size_start && j <= i - p.sink_size_end) middle.push_back(j);
        }
        const std::vector<double> score =
            compactor_scores(in, middle, p, p.blending >= 0.0 ? p.blending : 1.0 - double(k) / double(i + 1));
        victim = lowest_argmin(middle, [&](int j) { return score[j]; }, all);
      } else if (name == "expected_attention" || name == "cap") {
        std::vector<int> rest;
        for (int j : members) {
          if (j >= p.sinks) rest.push_back(j);
        }
        const std::vector<double> score = name == "cap" ? cap_scores(in, rest, p.sinks, i, p, setup.rule)
                                                        : expected_attention_scores(in, rest, p.sinks, i, p, setup.rule);
        victim = lowest_argmin(rest, [&](int j) { return score[j]; }, all);
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
        std::vector<int> candidates;  // ascending: members is
        for (int j : members) {
          if (j <= i - w) candidates.push_back(j);
        }
        std::vector<std::vector<double>> pooled(g);
        for (int h = 0; h < g; ++h) {
          std::vector<double> sums(candidates.size(), 0.0);
          for (std::size_t c = 0; c < candidates.size(); ++c) {
            for (int s = std::max(0, i - w + 1); s <= i; ++s) sums[c] += seen_head[h][s][candidates[c]];
          }
          pooled[h] = snap_pool(sums);
        }
        std::vector<double> score(n, 0.0);
        for (std::size_t c = 0; c < candidates.size(); ++c) {
          std::vector<double> x;
          for (int h = 0; h < g; ++h) x.push_back(pooled[h][c]);
          score[candidates[c]] = combine(setup.rule, x);
        }
        victim = lowest_argmin(candidates, [&](int j) { return score[j]; }, all);
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
