#pragma once
/// \file
/// The order every cache's retained mass obeys on one head at one budget (theory.md §5):
/// policy ≤ OPT ≤ Σ_i U_i ≤ n, checked in one place for `simulate` and the closed loop, at a slack
/// tied to the precision of the optimum's gains.

#include <optional>
#include <string>
#include <vector>

namespace subevict::greedy {

/// The relative slack of the order policy ≤ OPT ≤ Σ U_i ≤ n on a head whose optimum ran on
/// `float_gains` or not. The masses are double sums: 1e-9. On float-rounded gains (each entry
/// within 2^−24 of the double one, relatively) the optimum's value is within 2^−24 of the same
/// schedule's double mass and within 2 · 2^−24 of the double optimum, which a policy's double mass
/// may reach: Tol<float>::kValue (64 ulp of float, 7.6e−6) bounds both with room for the sums.
[[nodiscard]] double mass_order_slack(bool float_gains);

/// One head's masses at one budget, all on one scale (e.g. each a sum over the group's query
/// heads, or each divided by their number). A quantity left empty is not computed, and the
/// relations it takes part in are not checked.
struct HeadMasses {
  std::string policy_name = "policy";  ///< how a violation names the policy
  std::optional<double> policy;        ///< the policy's retained mass, where it compressed the head to the budget
  bool policy_is_optimum = false;      ///< the policy replays the optimum's schedule: policy = OPT is required
  std::optional<double> optimum;       ///< OPT (exact), or the lower end of its certified interval
  std::optional<double> optimum_upper; ///< OPT's certified upper bound, where OPT is known only within an interval
  std::optional<double> oracle;        ///< Σ_i U_i, the reversible per-step oracle's total
  std::optional<double> tokens;        ///< the most a cache can hold of it: n (per query head) or n times the heads
};

/// The relations of policy ≤ OPT ≤ Σ U_i ≤ tokens that `masses` breaks, each by more than
/// slack · max(1, the side that should be larger) (policy = OPT for an optimum's replay: by more
/// than slack · max(1, OPT) either way), as text naming them ("h2o > OPT", "OPT's lower bound >
/// sum U", ...); empty when every checked relation holds. Where only an interval is known, the
/// policy is checked against its upper end and the oracle against its lower end. slack >= 0
/// (mass_order_slack), else std::invalid_argument.
[[nodiscard]] std::vector<std::string> mass_order_violations(const HeadMasses& masses, double slack);

}  // namespace subevict::greedy
