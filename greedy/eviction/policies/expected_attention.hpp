#pragma once
/// \file
/// Expected attention (Devoto et al. 2025, arXiv 2510.00636; kvpress `ExpectedAttentionPress`,
/// registry name "expected_attention"): score each key by the attention that queries drawn from a
/// Gaussian fitted to the queries seen so far would pay it.

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/input_error.hpp"
#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy::policies {

/// Rule, with s = `n_sink` sink tokens (never evicted; 0 ≤ s < k) and the score scale c of the
/// head (s_ij = c⟨q_i, k_j⟩; c = 1/√d is kvpress's):
/// - query statistics per query head h over the queries seen so far that are not sinks, the steps
///   Q = {s, .., i} (prefill: {s, .., P − 1}): μ_h = (1/|Q|) Σ q^h, Σ_h = (1/|Q|) Σ q^h q^hᵀ − μ_h μ_hᵀ
///   (the biased covariance, as kvpress; sums in step order);
/// - expected logit of a non-sink member t: z^h_t = c ⟨μ_h, k_t⟩ + (c² / 2) k_tᵀ Σ_h k_t (without
///   the second term when use_covariance = 0), the log of E[exp(c⟨q, k_t⟩)] for q ~ N(μ_h, Σ_h);
/// - p^h_t = softmax of z^h over the non-sink members of G_i (prefill: of the prompt), aggregated
///   over the group by the GroupAggregation rule (kvpress: mean) into p_t;
/// - score_t = (p_t + ε) ‖v_t‖ when use_vnorm = 1 (ε = `epsilon`), else p_t.
/// Once full, evict the non-sink member of G_i with the smallest score (ties: lowest token; the
/// new token is a candidate). Prefill: keep the sinks and the top k − s by the same score.
/// Queries: where the workload stores pre-RoPE tensors (HeadGroup::has_pre_rope), as kvpress the
/// statistics are those of the pre-RoPE queries, then rotated by R̄, the average RoPE matrix of
/// the F = `n_future_positions` positions after the i + 1 tokens seen (prefill: P):
/// μ_h ← R̄ μ_h, Σ_h ← R̄ Σ_h R̄ᵀ; the keys are the cache's (after RoPE). Without pre-RoPE tensors
/// the statistics are those of the post-RoPE queries, unrotated: an approximation
/// (docs/eviction.md measures how far it is from kvpress on SmolLM2).
/// Difference from kvpress: in streaming the statistics grow with every query instead of being
/// fixed at the prompt.
/// Cost per scoring of m members: O(g m d²) with pre-RoPE tensors (the rotated Σ_h changes with
/// every step); without them O(g m d) once every member's sums are started: ⟨μ_h, k_t⟩ and
/// k_tᵀ Σ_h k_t = (1/|Q|) Σ_{q∈Q} ⟨q, k_t⟩² − ⟨μ_h, k_t⟩² come from per-token sums of ⟨q, k_t⟩ and
/// ⟨q, k_t⟩² over the queries, started from the moments when t is first scored (O(d²)) and
/// brought up to the queries seen since at each scoring (the same values up to rounding).
class ExpectedAttentionPolicy final : public SetScoredPolicy<ExpectedAttentionPolicy> {
 public:
  ExpectedAttentionPolicy(int sinks, double epsilon, bool use_covariance, bool use_vnorm, int future_positions)
      : sinks_(sinks), epsilon_(epsilon), covariance_(use_covariance), vnorm_(use_vnorm), future_(future_positions) {}
  [[nodiscard]] std::string name() const override { return "expected_attention"; }
  // The rule (RankedPolicy hooks).
  void on_reset() {
    if (sinks_ < 0 || sinks_ >= context().budget) {
      throw InputError("policy", "expected_attention: n_sink",
                       "0 <= n_sink < budget " + std::to_string(context().budget), std::to_string(sinks_));
    }
    const HeadGroup& in = *context().input;
    const Eigen::Index d = in.k.cols();
    sum_.assign(in.q.size(), Eigen::VectorXd::Zero(d));
    outer_.assign(in.q.size(), Eigen::MatrixXd::Zero(d, d));
    count_ = 0;
    score_.assign(std::size_t(context().tokens), 0.0);
    dot_.assign(in.q.size(), std::vector<double>(std::size_t(context().tokens), 0.0));
    square_.assign(in.q.size(), std::vector<double>(std::size_t(context().tokens), 0.0));
    summed_.assign(std::size_t(context().tokens), -1);
    queries_.assign(in.q.size(), {});
    keys_.resize(0, d);
    vnorm_of_.clear();
    rows_added(0);
  }
  void rows_added(int from) override {
    extend_row_norms(context().input->v, from, vnorm_of_);
    const std::size_t n = std::size_t(context().tokens);
    for (auto& row : dot_) row.resize(n, 0.0);
    for (auto& row : square_) row.resize(n, 0.0);
    summed_.resize(n, -1);
    const HeadGroup& in = *context().input;
    keys_.conservativeResize(in.k.rows(), in.k.cols());
    keys_.bottomRows(in.k.rows() - from) = in.k.bottomRows(in.k.rows() - from).cast<double>();
  }
  [[nodiscard]] bool eligible(int, Token t) const { return t >= sinks_; }
  [[nodiscard]] Token scored_from() const { return sinks_; }
  void on_query(int i) { add_query(i); }

  /// score_ of the non-sink `members` (ascending).
  void score_members(const std::vector<Token>& members) {
    if (!context().input->has_pre_rope()) {
      score_from_sums(members);
      return;
    }
    const HeadGroup& in = *context().input;
    const std::size_t g = in.q.size();
    const Eigen::Index m = Eigen::Index(members.size()), d = in.k.cols();
    const double c = in.scale;
    Eigen::MatrixXd keys(m, d);
    for (Eigen::Index r = 0; r < m; ++r) keys.row(r) = in.k.row(members[std::size_t(r)]).cast<double>();
    std::vector<Eigen::VectorXd> p(g);
    const Eigen::MatrixXd rotation = in.future_rotation(count_ + sinks_, future_);
    for (std::size_t h = 0; h < g; ++h) {
      const Eigen::VectorXd mu_before = sum_[h] / double(count_);
      const Eigen::VectorXd mu = rotation * mu_before;
      Eigen::VectorXd z = c * (keys * mu);
      if (covariance_) {
        // Lazy products: never Eigen's threaded GEMM, which a policy run on its caller's threads
        // (simulate's workers, the task loop's) would enter at every step (36x slower at 1000 steps).
        Eigen::MatrixXd cov = outer_[h] / double(count_) - mu_before * mu_before.transpose();
        if (in.has_pre_rope()) {  // R̄ Σ R̄ᵀ (without pre-RoPE tensors R̄ is the identity)
          const Eigen::MatrixXd rotated = rotation.lazyProduct(cov);
          cov = rotated.lazyProduct(rotation.transpose());
        }
        z += (c * c / 2.0) * keys.lazyProduct(cov).cwiseProduct(keys).rowwise().sum();
      }
      const double top = z.maxCoeff();
      const Eigen::VectorXd e = (z.array() - top).exp().matrix();
      p[h] = e / e.sum();
    }
    write_scores(members, p);
  }

 private:
  /// score_members without pre-RoPE tensors (R̄ = I), from the per-token sums.
  void score_from_sums(const std::vector<Token>& members) {
    const HeadGroup& in = *context().input;
    const std::size_t g = in.q.size();
    const Eigen::Index m = Eigen::Index(members.size());
    const double c = in.scale, count = double(count_);
    for (const Token t : members) bring_up(t);
    std::vector<Eigen::VectorXd> p(g, Eigen::VectorXd(m));
    for (std::size_t h = 0; h < g; ++h) {
      Eigen::VectorXd& z = p[h];
      for (Eigen::Index r = 0; r < m; ++r) {
        const std::size_t t = std::size_t(members[std::size_t(r)]);
        const double linear = dot_[h][t] / count;
        z(r) = c * linear + (covariance_ ? (c * c / 2.0) * (square_[h][t] / count - linear * linear) : 0.0);
      }
      const double top = z.maxCoeff();
      z = (z.array() - top).exp().matrix();
      z /= z.sum();
    }
    write_scores(members, p);
  }
  /// Token t's sums over every query seen: started from the moments (Σ q and Σ q qᵀ) the first
  /// time, then the queries seen since added one by one (query c is step s + c).
  void bring_up(Token t) {
    const std::size_t j = std::size_t(t), d = std::size_t(keys_.cols());
    const Eigen::Map<const Eigen::VectorXd> key(keys_.row(t).data(), Eigen::Index(d));
    if (summed_[j] < 0) {
      for (std::size_t h = 0; h < queries_.size(); ++h) {
        dot_[h][j] = key.dot(sum_[h]);
        square_[h][j] = key.dot(outer_[h].lazyProduct(key));
      }
      summed_[j] = count_;
      return;
    }
    for (; summed_[j] < count_; ++summed_[j]) {
      for (std::size_t h = 0; h < queries_.size(); ++h) {
        const Eigen::Map<const Eigen::VectorXd> q(queries_[h].data() + std::size_t(summed_[j]) * d, Eigen::Index(d));
        const double x = q.dot(key);
        dot_[h][j] += x;
        square_[h][j] += x * x;
      }
    }
  }
  /// score_ of `members` from each query head's probabilities p[h] (aligned with members).
  void write_scores(const std::vector<Token>& members, const std::vector<Eigen::VectorXd>& p) {
    std::vector<double> weights(p.size());
    for (std::size_t r = 0; r < members.size(); ++r) {
      for (std::size_t h = 0; h < p.size(); ++h) weights[h] = p[h](Eigen::Index(r));
      const double pt = aggregate(context().aggregation, weights);
      const Token t = members[r];
      score_[std::size_t(t)] = vnorm_ ? (pt + epsilon_) * vnorm_of_[std::size_t(t)] : pt;
    }
  }

  void add_query(int s) {
    const HeadGroup& in = *context().input;
    for (std::size_t h = 0; h < in.q.size(); ++h) {
      const Eigen::VectorXd q = in.queries_before_rope(h).row(s).cast<double>().transpose();
      sum_[h] += q;
      outer_[h] += q * q.transpose();
      if (!in.has_pre_rope()) queries_[h].insert(queries_[h].end(), q.data(), q.data() + q.size());
    }
    ++count_;
  }
  int sinks_;
  double epsilon_;
  bool covariance_, vnorm_;
  int future_;
  std::vector<Eigen::VectorXd> sum_;
  std::vector<Eigen::MatrixXd> outer_;
  int count_ = 0;
  std::vector<double> vnorm_of_;
  // Without pre-RoPE tensors, per query head and token: Σ ⟨q, k_t⟩ and Σ ⟨q, k_t⟩² over the first
  // summed_[t] queries (−1: not started).
  std::vector<std::vector<double>> dot_, square_;
  std::vector<int> summed_;
  /// Without pre-RoPE tensors, per query head the queries seen in double, query c at [c d, (c + 1) d).
  std::vector<std::vector<double>> queries_;
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> keys_;  ///< the rows' keys in double
};

}  // namespace subevict::greedy::policies
