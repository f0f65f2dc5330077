#pragma once
/// \file
/// CAPKV (arXiv 2604.25975; kvpress `CapPress`, name "cap" here): capacity scores, the leverage of
/// each value in a capacity matrix weighted by the key's alignment with the mean query.

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/input_error.hpp"
#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy::policies {

/// Rule, with s = `n_sink` sink tokens (never evicted; 0 ≤ s < k), over the non-sink members M of
/// G_i (prefill: of the prompt), per query head h:
/// - anchor μ_h = the mean of the queries seen so far that are not sinks, steps {s, .., i}
///   (prefill: {s, .., P − 1}; summed in step order);
/// - statistic c_t = ⟨μ_h / ‖μ_h‖, k_t / ‖k_t‖⟩ clamped to [−1, 1] (0 for a zero vector), weight
///   w_t = exp(τ (c_t − max_{u∈M} c_u)) (τ = `tau`);
/// - capacity matrix A = I + Σ_{u∈M} (w_u + ε) v_u v_uᵀ (ε = `epsilon`), leverage ℓ_t = v_tᵀ A⁻¹ v_t,
///   head score w_t ℓ_t; aggregated over the group by the GroupAggregation rule (kvpress: mean).
/// Once full, evict the non-sink member with the smallest score (ties: lowest token; the new token
/// is a candidate). Prefill: keep the sinks and the top k − s by the same score.
/// Queries: where the workload stores pre-RoPE tensors (HeadGroup::has_pre_rope), as kvpress the
/// anchor is the mean of the pre-RoPE queries rotated by R̄, the average RoPE matrix of the
/// F = `n_future_positions` positions after the i + 1 tokens seen (prefill: P); the keys are the
/// cache's (after RoPE). Without pre-RoPE tensors it is the mean of the post-RoPE queries,
/// unrotated: an approximation (docs/eviction.md measures it on SmolLM2).
/// Difference from kvpress: double precision.
class CapPolicy final : public SetScoredPolicy<CapPolicy> {
 public:
  CapPolicy(int sinks, double tau, double epsilon, int future_positions)
      : sinks_(sinks), tau_(tau), epsilon_(epsilon), future_(future_positions) {}
  [[nodiscard]] std::string name() const override { return "cap"; }
  // The rule (RankedPolicy hooks).
  void on_reset() {
    if (sinks_ < 0 || sinks_ >= context().budget) {
      throw InputError("policy", "cap: n_sink", "0 <= n_sink < budget " + std::to_string(context().budget),
                       std::to_string(sinks_));
    }
    const HeadGroup& in = *context().input;
    sum_.assign(in.q.size(), Eigen::VectorXd::Zero(in.k.cols()));
    count_ = 0;
    score_.assign(std::size_t(context().tokens), 0.0);
  }
  [[nodiscard]] bool eligible(int, Token t) const { return t >= sinks_; }
  [[nodiscard]] Token scored_from() const { return sinks_; }
  void on_query(int i) { add_query(i); }

  /// score_ of the non-sink `members` (ascending).
  void score_members(const std::vector<Token>& members) {
    const HeadGroup& in = *context().input;
    const std::size_t g = in.q.size();
    const Eigen::Index m = Eigen::Index(members.size()), d = in.k.cols();
    Eigen::MatrixXd keys(m, d), values(m, d);
    for (Eigen::Index r = 0; r < m; ++r) {
      keys.row(r) = in.k.row(members[std::size_t(r)]).cast<double>();
      values.row(r) = in.v.row(members[std::size_t(r)]).cast<double>();
    }
    std::vector<Eigen::VectorXd> head(g);
    const Eigen::MatrixXd rotation = in.future_rotation(count_ + sinks_, future_);
    for (std::size_t h = 0; h < g; ++h) {
      const Eigen::VectorXd anchor = rotation * sum_[h];  // |Q| times the anchor: c_t is scale-free
      const double anchor_norm = anchor.norm();
      Eigen::VectorXd c(m);
      for (Eigen::Index r = 0; r < m; ++r) {
        const double denominator = anchor_norm * keys.row(r).norm();
        c(r) = denominator > 0.0 ? std::clamp(keys.row(r).dot(anchor.transpose()) / denominator, -1.0, 1.0) : 0.0;
      }
      const Eigen::VectorXd w = (tau_ * (c.array() - c.maxCoeff())).exp().matrix();
      Eigen::MatrixXd scaled = values;  // rows sqrt(w_u + ε) v_u, so A = I + scaledᵀ scaled
      scaled.array().colwise() *= (w.array() + epsilon_).sqrt();
      Eigen::MatrixXd capacity = Eigen::MatrixXd::Identity(d, d);
      capacity.noalias() += scaled.transpose().lazyProduct(scaled);  // lazy: never threaded
      const Eigen::MatrixXd inverse = capacity.llt().solve(Eigen::MatrixXd::Identity(d, d));
      const Eigen::MatrixXd projected = values.lazyProduct(inverse);  // rows v_tᵀ A⁻¹
      head[h] = w.cwiseProduct(projected.cwiseProduct(values).rowwise().sum());
    }
    std::vector<double> weights(g);
    for (Eigen::Index r = 0; r < m; ++r) {
      for (std::size_t h = 0; h < g; ++h) weights[h] = head[h](r);
      score_[std::size_t(members[std::size_t(r)])] = aggregate(context().aggregation, weights);
    }
  }

 private:
  void add_query(int s) {
    const HeadGroup& in = *context().input;
    for (std::size_t h = 0; h < in.q.size(); ++h) sum_[h] += in.queries_before_rope(h).row(s).cast<double>().transpose();
    ++count_;
  }
  int sinks_;
  double tau_, epsilon_;
  int future_;
  std::vector<Eigen::VectorXd> sum_;
  int count_ = 0;
};

}  // namespace subevict::greedy::policies
