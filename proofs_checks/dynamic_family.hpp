#pragma once
/// \file
/// The H2O dynamic family f_{S,i}(T) = h(Σ_{s∈T} acc_{i,s}) − h(0) measured along eviction
/// trajectories (theory.md §4, §6), on small heads where every optimum is found by exhaustive
/// search. Shared by the dynamic-eviction checks.
///
/// Conventions: steps and tokens are 0-based (theory.md's 1-based step i is step i − 1 here).
/// S_i is the cache after step i, G_i = S_{i−1} ∪ {i} (S_{−1} = ∅), ã_i the tracked attention of
/// query i over G_i (softmax restricted to G_i, exactly 0 elsewhere: theory.md §1).
/// - Tracked knowledge (the practical H2O, Def 4.1): acc_i = Σ_{t≤i} ã_t (each ã_t over its G_t),
///   so the family depends on the cache history.
/// - Exact knowledge (Lemma D.31, "full knowledge"): acc_i = Σ_{t≤i} a_t with the exact causal rows
///   a_t, independent of the history.
/// - f_{X,i} for a previous cache X other than S_{i−1} (Def D.27): the history up to step i − 1 is
///   the realized one and step i attends over X ∪ {i}: acc^X_i = acc_{i−1} + ã_i(X ∪ {i}) (tracked),
///   acc_i itself (exact). This is the reading the library adopts of Def D.27's max over X.

#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "core/workload.hpp"
#include "greedy/functions/concave.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "proofs_checks/check.hpp"

namespace subevict::proofs_checks {

/// The outer transform h of the family (z ≥ 0 in, a value out). The H2O family uses the concave
/// non-decreasing transforms of greedy/functions/concave.hpp; checks accept any h so that a test can feed a
/// convex or decreasing one.
using Transform = std::function<double(double)>;

/// h as a Transform (greedy::concave_value).
[[nodiscard]] Transform transform_of(greedy::Concave h);

/// One query head of n tokens with its own copy of Q, K, V (n × d, float32, row-major), the score
/// scale and the exact causal scores and attention in double.
struct SmallHead {
  RowMatrixf q, k, v;
  double scale = 1.0;
  std::string label;         ///< where it comes from, e.g. "layer 0 head 3, first 12 tokens"
  Eigen::MatrixXd logits;    ///< s_ij = scale <q_i, k_j> for j ≤ i, 0 above the diagonal (n × n)
  Eigen::MatrixXd attention; ///< exact causal attention a_ij (n × n, lower triangular)

  [[nodiscard]] int tokens() const { return int(k.rows()); }
  /// A one-query-head HeadGroup viewing q, k, v (the SmallHead must outlive it and not move).
  [[nodiscard]] greedy::HeadGroup group() const;
};

/// A SmallHead from Q, K, V (equal shapes n × d, n ≥ 1) and the scale; computes logits and
/// attention (core/attention.hpp). Throws std::invalid_argument for mismatched shapes.
[[nodiscard]] SmallHead make_small_head(RowMatrixf q, RowMatrixf k, RowMatrixf v, double scale,
                                        std::string label);

/// A (layer, query head) pair of a workload.
struct HeadIndex {
  int layer = 0;
  int q_head = 0;
};

/// Pick c of `count` spread evenly over the (layer, query head) pairs of `layers` × the q_heads of
/// `shape` in layer-major order (every layer of `shape` when `layers` is empty): pair
/// floor(c · |layers| · q_heads / count). Precondition: 0 ≤ c < count; `layers` in range.
[[nodiscard]] HeadIndex spread_head(const Shape& shape, int c, int count, const std::vector<int>& layers = {});

/// `count` heads cut from `workload`: the first `tokens` tokens of the (layer, query head) pairs
/// spread_head picks from `layers` (empty: every layer), each with its KV head's K and V and the
/// workload's score scale. Throws std::invalid_argument unless 1 ≤ tokens ≤ the workload's tokens
/// and count ≥ 1.
[[nodiscard]] std::vector<SmallHead> heads_from_workload(const Workload& workload, int tokens,
                                                         int count, const std::vector<int>& layers = {});

/// `count` heads with i.i.d. standard normal Q, K, V (tokens × dim, scale 1/sqrt(dim)) from a
/// std::mt19937_64 seeded with `seed` (Box–Muller on greedy::uniform_unit, compiler-independent).
[[nodiscard]] std::vector<SmallHead> random_heads(int tokens, int dim, int count,
                                                  std::uint64_t seed);

/// S_0..S_{n−1} (ascending) of the policy on `head` with cache budget k (greedy::simulate with one
/// query head, record_cache). Throws what simulate throws.
[[nodiscard]] std::vector<std::vector<int>> policy_caches(const SmallHead& head,
                                                          const greedy::PolicyFactory& make_policy,
                                                          int budget, std::uint64_t seed);

/// ã_i over `set` (tokens ≤ i, containing i): the exact row of query i restricted to the set and
/// renormalized from the logits (core tracked_attention), as a length-n vector, 0 off the set.
[[nodiscard]] Eigen::VectorXd tracked_row(const SmallHead& head, int i, const std::vector<int>& set);

/// Which accumulated attention the family uses (see the file comment).
enum class Knowledge { kTracked, kExact };

/// The dynamic family along one trajectory of caches. Memory O(n²); construction O(n² + Σ|S_i|).
class DynamicFamily {
 public:
  /// `caches` must be a trajectory of the process on `head` (caches[i] ⊆ caches[i−1] ∪ {i});
  /// throws std::invalid_argument when sizes mismatch or a cache holds a token > i.
  DynamicFamily(const SmallHead& head, std::vector<std::vector<int>> caches, Transform h,
                Knowledge knowledge);

  [[nodiscard]] int steps() const { return int(caches_.size()); }
  [[nodiscard]] const std::vector<int>& cache(int i) const { return caches_[std::size_t(i)]; }
  /// G_i = S_{i−1} ∪ {i}, ascending.
  [[nodiscard]] std::vector<int> candidates(int i) const;
  /// acc_i (length n).
  [[nodiscard]] Eigen::VectorXd accumulated(int i) const { return acc_.row(i).transpose(); }
  /// f_{S_i,i}(T) = h(Σ_{s∈T} acc_{i,s}) − h(0). O(|T|).
  [[nodiscard]] double value(int i, const std::vector<int>& set) const;
  /// h(Σ_{s∈T} w_s) − h(0) for explicit weights.
  [[nodiscard]] double value_of(const Eigen::VectorXd& weights, const std::vector<int>& set) const;
  /// acc^X_i: the accumulation of step i had the previous cache been X (file comment).
  [[nodiscard]] Eigen::VectorXd accumulated_after(int i, const std::vector<int>& previous) const;
  /// opt_i of Def D.27: max over X ⊆ {0..i−1}, |X| ≤ k, and Y ⊆ X ∪ {i}, |Y| ≤ k of f_{X,i}(Y), by
  /// exhaustive search over both (no monotonicity assumed). O(C(i, ≤k) 2^{k+1} k).
  [[nodiscard]] double opt(int i, int budget) const;

 private:
  const SmallHead* head_;
  std::vector<std::vector<int>> caches_;
  Transform h_;
  Knowledge knowledge_;
  double h0_;
  Eigen::MatrixXd acc_;  // row i = acc_i
};

/// The smallest θ ≥ 0 with lhs ≥ (1 − θ) rhs: 0 when lhs ≥ rhs, 1 − lhs/rhs when rhs > 0, +inf
/// otherwise (no θ ≥ 0 makes it hold).
[[nodiscard]] double smallest_shrink(double lhs, double rhs);

/// Per-step measurements of the universal conditions (Defs D.23–D.28) along one trajectory, for
/// the family f (0-based steps, entries for i = 0..n−1; entries that need step i + 1 are 0 at the
/// last step).
struct ConditionTrace {
  std::vector<double> opt;            ///< opt_i (Def D.27)
  std::vector<double> theta;          ///< smallest θ with f_{S_i,i}(S_i) ≥ (1−θ) f_{S_{i−1},i−1}(S_i) (0 at i = 0)
  std::vector<double> gamma;          ///< smallest γ with opt_i ≥ (1−γ) opt_{i+1} (as the lemmas use it)
  std::vector<double> gamma_printed;  ///< smallest γ with opt_i ≥ (1−γ) opt_{i−1} (Def D.28 as printed; 0 at i = 0)
  std::vector<double> epsilon0;       ///< smallest ε₀ ≥ 0 with f_i(T) ≥ f̃_i(T) − ε₀ over T ∈ {S_i} ∪ {G_{i+1} \ {v}} (0 without f̃)
  std::vector<char> monotone;         ///< Δ(x | S_i) ≥ −tol for every x ≤ i outside S_i (Def D.23 on the trajectory)
  std::vector<double> next_value;     ///< f_{S_i,i}(S_{i+1})
  std::vector<double> own_value;      ///< f_{S_i,i}(S_i)
};

/// Measures the conditions of `f` along its trajectory; `approximate` (the family the policy
/// actually evaluates, same caches) supplies f̃ for ε₀, or nullptr for ε₀ = 0.
[[nodiscard]] ConditionTrace measure_conditions(const DynamicFamily& f,
                                                const DynamicFamily* approximate, int budget);

/// The context's workload; throws std::invalid_argument naming `checks` when it is null.
[[nodiscard]] const Workload& context_workload(const CheckContext& context, const std::string& checks);

/// "{a, b, c}": a set of tokens or elements as counterexamples print it.
template <class T>
[[nodiscard]] std::string set_text(const std::vector<T>& set) {
  std::ostringstream out;
  out << '{';
  for (std::size_t e = 0; e < set.size(); ++e) out << (e ? ", " : "") << set[e];
  out << '}';
  return out.str();
}

/// The cache budget of the small-instance checks: max(1, min(4, ceil(ratio · tokens))); capped at 4
/// so that the exhaustive opt_i stays cheap.
[[nodiscard]] int small_budget(double ratio, int tokens);

}  // namespace subevict::proofs_checks
