#pragma once
/// \file
/// A receding-horizon lookahead eviction rule between H2O and the offline optimum. ORACLE: it
/// reads future queries, so reports must label it non-causal.
///
/// Rule (0-based steps): when the cache is full at step i, consider the window of the next
/// L = horizon steps i+1..min(i+L, n−1) and solve the offline optimum (greedy/eviction/optimum/offline_optimum.hpp)
/// of that window exactly: the k + 1 members of G_i are all present at its start, the window's
/// new tokens arrive one per step, and the gains are the true future attention W. Evict the member
/// of G_i that this window optimum evicts at step i (the process form of the window's schedule,
/// so exactly one; ties as in to_process_schedule). Then commit and move on (model-predictive
/// control). With L ≥ n − 1 every decision starts an optimal continuation, so the total equals the
/// offline optimum; with L = 1 it evicts the member with the least attention from the next query.
/// Cost per full step: one flow on ≤ (k + 1) L + L²/2 arcs.

#include <Eigen/Core>
#include <vector>

#include "greedy/eviction/process/cache_schedule.hpp"
#include "greedy/eviction/policies/eviction_policy.hpp"

namespace subevict::greedy {

/// The member of `members` (the tokens of G_i, any order, step i = the largest) that the
/// window optimum evicts at step i, for gains W (n × n) and budget k = members.size() − 1.
/// Preconditions: horizon ≥ 1, members distinct and ≤ step (std::invalid_argument).
Token lookahead_victim(const Eigen::MatrixXd& gains, const std::vector<Token>& members, int step,
                       int horizon);

/// Runs the process of theory.md §2 with the lookahead rule on gains W at budget k ≥ 0 and
/// returns its schedule (status kFeasible, upper_bound +infinity, model_size = flow solves).
/// Throws InputError for invalid W, budget < 0 or horizon < 1.
ScheduleSummary lookahead_schedule(const Eigen::MatrixXd& gains, int budget, int horizon);

/// The lookahead rule as a simulator policy ("lookahead"): reset() computes W from the group's Q
/// and K (gain_matrix, the GQA sum; the group aggregation rule does not apply to this oracle);
/// prefill() keeps the k prompt tokens with the most attention from the next L queries (ties:
/// lowest index).
class LookaheadPolicy final : public EvictionPolicy {
 public:
  /// Throws InputError unless horizon ≥ 1.
  explicit LookaheadPolicy(int horizon = 16);
  [[nodiscard]] std::string name() const override { return "lookahead"; }
  [[nodiscard]] bool is_oracle() const override { return true; }
  void reset(const PolicyContext& context) override;
  [[nodiscard]] std::vector<Token> prefill() override;
  [[nodiscard]] Token step(const StepView& view) override;

 private:
  int horizon_;
  PolicyContext context_;
  Eigen::MatrixXd gains_;
};

}  // namespace subevict::greedy
