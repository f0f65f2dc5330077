#pragma once
/// \file
/// The Lagrangian bound of facility location for branch and bound (the relaxation Beasley 1985
/// solves for the p-median problem, in the max form).
///
/// Integer program of max_{|T| ≤ k} Σ_i max_{j∈T} sim_ij (sim ≥ 0):
///   max Σ_ij sim_ij x_ij  s.t.  Σ_j x_ij ≤ 1 (each client i),  x_ij ≤ y_j,  Σ_j y_j ≤ k,
///   x, y ∈ {0, 1}.
/// Dualizing the client constraints with multipliers u_i ≥ 0 gives, for every u ≥ 0,
///   OPT ≤ L(u) = Σ_i u_i + max_{|Y| ≤ k} Σ_{j∈Y} C_j(u),   C_j(u) = Σ_i max(0, sim_ij − u_i) ≥ 0,
/// and at a node (F fixed in, some elements fixed out, U undecided, r = k − |F|) the inner maximum
/// takes F and the r largest C_j over U. L is convex and piecewise linear; a subgradient is
/// g_i = 1 − #{j ∈ Y : sim_ij > u_i}, and u is improved by projected subgradient steps
/// u ← max(0, u − α (L(u) − LB) g / ‖g‖²) (Polyak step towards the incumbent LB; α starts at
/// `initial_step` and halves after `patience` steps without a new best L). g = 0 means the
/// relaxed solution is feasible and L(u) = f(Y): the node is solved.
///
/// Each Lagrangian solution Y is offered to the search as a feasible set. Reduced-cost fixing at
/// the best u (c_r the smallest chosen C over U, c_{r+1} the largest unchosen): an unchosen j with
/// L − c_r + C_j ≤ incumbent + tolerance is fixed out, a chosen j with L − C_j + c_{r+1} ≤
/// incumbent + tolerance is fixed in. Branching suggestion: the chosen undecided j of largest C_j.
/// Multipliers are warm-started from the previous node. One step costs O(clients · candidates).

#include <Eigen/Core>

#include "greedy/exact/branch_and_bound.hpp"
#include "greedy/functions/facility_location.hpp"

namespace subevict::greedy {

/// Subgradient settings of FacilityLocationBound (see the file comment for the step rule).
struct FacilityLocationBoundOptions {
  /// Subgradient steps at the root node.
  int root_iterations = 2000;
  /// Subgradient steps at every other node.
  int node_iterations = 150;
  /// Steps without a new best L before α halves.
  int patience = 20;
  /// The first α of every node (Polyak steps use α ∈ (0, 2]).
  double initial_step = 2.0;
  /// A node's steps stop once α falls below this.
  double min_step = 1e-4;
};

/// The Lagrangian bound of the file comment, as a branch-and-bound plug-in for `f`, which must
/// be the function the search runs on and outlive this object.
class FacilityLocationBound final : public NodeBound {
 public:
  explicit FacilityLocationBound(const FacilityLocation& f,
                                 const FacilityLocationBoundOptions& options = {});
  NodeBoundResult bound(BranchAndBoundNode& node) override;
  /// The multipliers after the last call (clients entries).
  [[nodiscard]] const Eigen::VectorXd& multipliers() const { return u_; }

 private:
  const FacilityLocation* f_;
  FacilityLocationBoundOptions options_;
  Eigen::VectorXd u_;
};

}  // namespace subevict::greedy
