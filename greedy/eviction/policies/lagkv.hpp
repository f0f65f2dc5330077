#pragma once
/// \file
/// LagKV (arXiv 2504.04704; kvpress `LagKVPress`, registry name "lagkv"): score the tokens of each
/// partition of the cache by how much their keys and values spread relative to the range of the
/// next partition. Attention-free and query-free.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/input_error.hpp"
#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy::policies {

/// Rule, over the members M of G_i in ascending order (prefill: the prompt 0..P−1), m = |M|, with
/// s = `n_sink` sinks (0 ≤ s < k) and partitions of L = `lag_size` ≥ 2 consecutive members; r is a
/// member's position in M:
/// - m < s + 2L (kvpress does not compress): score_r = 1 for r < s, else (r − s) / (m − s), so
///   the oldest non-sink member goes first;
/// - else, with J = floor((m − s) / L) partitions P_j = positions [s + jL, s + (j + 1)L): the sinks
///   and the tail (P_{J−1} and the m − s − JL members after it) score 1; a member r of P_j, j < J − 1,
///   scores against the reference P_{j+1}: for keys (and apart for values) y_c = (x_c − lo_c) /
///   (hi_c − lo_c) per channel c with lo_c, hi_c the minimum and maximum of channel c over P_{j+1}
///   (y_c = 0 where hi_c = lo_c), σ_r = the sample standard deviation of y over the d channels (0
///   for d = 1), and p_r = softmax of σ over P_j; the raw score is (p^key_r + p^value_r) / 2. With
///   cross_scoring = 0 (kvpress's default) the score is the raw score's rank within P_j (0 for the
///   smallest) divided by L, else the raw score itself.
/// Once full, evict the member with the smallest score (ties: lowest token; the new token is a
/// candidate, but it is in the tail whenever partitions are scored). Prefill: the same scores
/// over the prompt; keep the top k. kvpress scores the whole cache at one compression (or every
/// compression_interval steps with DecodingPress); here the partitions of G_i are recomputed at
/// every full step. kvpress requires no L ≥ 2: with L = 1 its ranges are 0 and its scores NaN.
class LagKvPolicy final : public SetScoredPolicy<LagKvPolicy> {
 public:
  LagKvPolicy(int sinks, int lag_size, bool cross_scoring)
      : sinks_(sinks), lag_(lag_size), cross_(cross_scoring) {}
  [[nodiscard]] std::string name() const override { return "lagkv"; }
  // The rule (RankedPolicy hooks).
  void on_reset() {
    if (sinks_ < 0 || sinks_ >= context().budget) {
      throw InputError("policy", "lagkv: n_sink", "0 <= n_sink < budget " + std::to_string(context().budget),
                       std::to_string(sinks_));
    }
    if (lag_ < 2) throw InputError("policy", "lagkv: lag_size", "lag_size >= 2", std::to_string(lag_));
    score_.assign(std::size_t(context().tokens), 0.0);
  }

  void score_members(const std::vector<Token>& members) {
    const int m = int(members.size()), s = sinks_, L = lag_;
    for (int r = 0; r < m; ++r) score_[std::size_t(members[r])] = 1.0;
    if (m < s + 2 * L) {
      for (int r = s; r < m; ++r) score_[std::size_t(members[r])] = double(r - s) / double(m - s);
      return;
    }
    const int partitions = (m - s) / L;
    std::vector<double> raw(static_cast<std::size_t>(L));
    for (int j = 0; j + 1 < partitions; ++j) {
      const int first = s + j * L;
      const std::vector<double> pk = spread(context().input->k, members, first, first + L);
      const std::vector<double> pv = spread(context().input->v, members, first, first + L);
      for (int e = 0; e < L; ++e) raw[std::size_t(e)] = (pk[std::size_t(e)] + pv[std::size_t(e)]) / 2.0;
      for (int e = 0; e < L; ++e) {
        double value = raw[std::size_t(e)];
        if (!cross_) {
          int rank = 0;
          for (int f = 0; f < L; ++f) rank += raw[std::size_t(f)] < raw[std::size_t(e)] ||
                                              (raw[std::size_t(f)] == raw[std::size_t(e)] && f < e);
          value = double(rank) / double(L);
        }
        score_[std::size_t(members[first + e])] = value;
      }
    }
  }

 private:
  /// softmax over the partition at positions [first, reference) of the channel spread of its rows
  /// of `x` relative to the range of the next L positions.
  [[nodiscard]] std::vector<double> spread(const ConstHeadMap& x, const std::vector<Token>& members, int first,
                                           int reference) const {
    const int L = lag_;
    const Eigen::Index d = x.cols();
    std::vector<double> lo(static_cast<std::size_t>(d)), hi(static_cast<std::size_t>(d));
    for (Eigen::Index c = 0; c < d; ++c) {
      lo[c] = hi[c] = double(x(members[std::size_t(reference)], c));
      for (int e = 1; e < L; ++e) {
        const double v = double(x(members[std::size_t(reference + e)], c));
        lo[c] = std::min(lo[c], v);
        hi[c] = std::max(hi[c], v);
      }
    }
    std::vector<double> sigma(std::size_t(L), 0.0);
    std::vector<double> y(static_cast<std::size_t>(d));
    for (int e = 0; e < L; ++e) {
      double mean = 0.0;
      for (Eigen::Index c = 0; c < d; ++c) {
        const double range = hi[c] - lo[c];
        y[c] = range > 0.0 ? (double(x(members[std::size_t(first + e)], c)) - lo[c]) / range : 0.0;
        mean += y[c];
      }
      mean /= double(d);
      double sq = 0.0;
      for (Eigen::Index c = 0; c < d; ++c) sq += (y[c] - mean) * (y[c] - mean);
      sigma[std::size_t(e)] = d > 1 ? std::sqrt(sq / double(d - 1)) : 0.0;
    }
    const double top = *std::max_element(sigma.begin(), sigma.end());
    double total = 0.0;
    for (double& v : sigma) total += (v = std::exp(v - top));
    for (double& v : sigma) v /= total;
    return sigma;
  }
  int sinks_, lag_;
  bool cross_;
};

}  // namespace subevict::greedy::policies
