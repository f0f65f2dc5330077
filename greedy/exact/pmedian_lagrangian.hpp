#pragma once
/// \file
/// The Lagrangian relaxation of the p-median assignment constraints (Cornuéjols, Fisher and
/// Nemhauser 1977; Beasley 1993), the bound of the exact p-median search
/// (greedy/exact/pmedian_branch_and_bound.hpp).
///
/// p-median program: min Σ_ij d_ij x_ij s.t. Σ_j x_ij = 1 (clients i), x_ij ≤ y_j, Σ_j y_j ≤ p,
/// x, y ∈ {0, 1}. Dualizing the client rows with multipliers λ_i gives, for every λ,
///   OPT ≥ L(λ) = Σ_i λ_i + min_{|Y| ≤ p} Σ_{j∈Y} C_j(λ),   C_j(λ) = Σ_i min(0, d_ij − λ_i) ≤ 0,
/// so the inner minimum takes the p most negative C_j. At a search node (F fixed in, O fixed out,
/// U undecided) the inner minimum is over F ⊆ Y ⊆ F ∪ U: F and the r = p − |F| most negative C_j
/// over U. L is concave and piecewise linear in λ; g_i = 1 − #{j ∈ Y : d_ij < λ_i} is a
/// supergradient, and subgradient optimisation steps λ ← max(0, λ + α (UB − L(λ)) g / ‖g‖²)
/// (Polyak's step towards an upper bound UB; α halves after `patience` steps without a new best L).
/// The best L equals the linear-programming bound in the limit (integrality property).
///
/// Reduced-cost fixing: with c_r the largest (least negative) chosen C over U and c_{r+1} the
/// smallest unchosen one (0 if none), forcing an unchosen j into Y gives L' = L − c_r + C_j and
/// forcing a chosen j out gives L' = L − C_j + c_{r+1}, both valid bounds of those subtrees; a
/// subtree whose bound reaches the cutoff holds no wanted set, so j is fixed the other way.
///
/// C_j is computed from each client's candidates sorted by distance: only pairs with d_ij < λ_i
/// contribute, so a step costs O(n log n + #{(i, j) : d_ij < λ_i}), far below n² near the optimum.

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "greedy/exact/branch_and_bound.hpp"
#include "greedy/functions/pmedian.hpp"

namespace subevict::greedy {

/// The relaxed problem's solution at one λ.
struct LagrangianSolution {
  /// L(λ).
  double value = 0.0;
  /// C_j(λ) per vertex (0 for vertices fixed out).
  std::vector<double> cost;
  /// Y: the vertices fixed in, then the r most negative undecided ones (ascending C).
  std::vector<Element> chosen;
  /// How many entries of `chosen` are undecided (the last ones).
  std::size_t free_chosen = 0;
  /// The largest C over the chosen undecided vertices (0 when there are none).
  double last_chosen = 0.0;
  /// min(0, the smallest C over the unchosen undecided vertices).
  double first_unchosen = 0.0;
};

/// Settings of the subgradient optimisation (see the file comment).
struct SubgradientOptions {
  /// At most this many steps.
  int iterations = 300;
  /// Steps without a new best L before α halves.
  int patience = 30;
  /// The first α (Polyak steps use α ∈ (0, 2]).
  double initial_step = 2.0;
  /// Stop once α falls below this.
  double min_step = 1e-5;
};

/// What subgradient optimisation reached.
struct SubgradientResult {
  /// The best L(λ) seen: a valid lower bound of the node.
  double bound = 0.0;
  /// True when a relaxed solution was feasible (g = 0): its Y is then optimal for the node.
  bool solved = false;
  /// Steps taken.
  int iterations = 0;
  /// Per vertex, the fraction of steps whose Y contained it (an estimate of the LP's y).
  std::vector<double> frequency;
};

/// The relaxation of one instance: each client's candidates sorted by distance.
class PMedianLagrangian {
 public:
  /// Keeps a reference to `instance` (must outlive this object). O(n² log n).
  explicit PMedianLagrangian(const PMedianInstance& instance);

  /// The start λ_i = each client's second-smallest distance (its distance to the nearest other
  /// vertex), or 0 when n = 1.
  [[nodiscard]] std::vector<double> initial_multipliers() const;

  /// Solves the inner minimum at `lambda` (n entries, finite) for a node given by `decisions`
  /// (n entries; at most p fixed in) into `out`. O(n log n + #{d_ij < λ_i}).
  void solve(std::span<const double> lambda, std::span<const Decision> decisions,
             LagrangianSolution& out) const;

  /// The supergradient g of `solution` (solved at `lambda`) into `g`. Returns ‖g‖².
  double subgradient(std::span<const double> lambda, const LagrangianSolution& solution,
                     std::vector<double>& g) const;

  /// Subgradient optimisation from `lambda` (updated in place to the best λ found) for the node
  /// `decisions`, towards `upper` (the value of a feasible set). Stops early when the bound
  /// reaches pruning_cutoff(upper, integral) or a relaxed solution is feasible. `on_solution`,
  /// when set, sees every step's solution and the step index and returns the (possibly lowered)
  /// upper bound, e.g. after building a feasible set from Y. `best` receives the solution at the
  /// returned λ.
  SubgradientResult optimise(
      std::vector<double>& lambda, std::span<const Decision> decisions, double upper, bool integral,
      const SubgradientOptions& options, LagrangianSolution& best,
      const std::function<double(const LagrangianSolution&, int)>& on_solution = {}) const;

  /// Σ_i min_{j∈set} d(i, j) through the sorted candidates (fast when the set is large);
  /// precondition: `set` non-empty, distinct vertices < n.
  [[nodiscard]] double value(std::span<const Element> set) const;

  /// The instance.
  [[nodiscard]] const PMedianInstance& instance() const { return *instance_; }

 private:
  struct Neighbor {
    double distance;
    Element vertex;
  };
  const PMedianInstance* instance_;
  std::vector<Neighbor> sorted_;  // client i's candidates at [i·n, (i+1)·n), by distance
  mutable std::vector<Element> order_;
  mutable std::vector<unsigned char> in_y_;
};

/// The cutoff for the best known value `upper`: a subtree whose lower bound is ≥ it holds no set
/// worth finding. With integral distances (`integral`) a better set has value ≤ upper − 1, so the
/// cutoff is upper − 1 + 1e-6·max(1, |upper|) (the margin absorbs rounding in L); otherwise
/// upper − 1e-9·max(1, |upper|).
[[nodiscard]] double pruning_cutoff(double upper, bool integral);

/// Vertices that reduced-cost fixing decides at a node.
struct LagrangianFixing {
  /// Undecided vertices outside Y that every wanted set of the node excludes.
  std::vector<Element> out;
  /// Undecided vertices in Y that every wanted set of the node contains.
  std::vector<Element> in;
};

/// Reduced-cost fixing (file comment) for `solution`, solved at the node `decisions`: a subtree
/// whose Lagrangian bound is ≥ `cutoff` is known to hold no wanted set.
[[nodiscard]] LagrangianFixing reduced_cost_fixing(const LagrangianSolution& solution,
                                                   std::span<const Decision> decisions,
                                                   double cutoff);

}  // namespace subevict::greedy
