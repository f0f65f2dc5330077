#pragma once
/// \file
/// The set-function interface every optimizer, bound and diagnostic of `greedy/` works through.
///
/// Conventions (stated once for the whole module):
/// - The ground set is {0, ..., n-1}: elements are 0-based indices (the math in theory.md is
///   1-based).
/// - Ties between equal gains or scores go to the lowest index, everywhere.
/// - Values are double; a function evaluates f(∅) to its own constant (0 for every function the
///   library ships except where its comment says otherwise).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace subevict::greedy {

/// An element of the ground set {0, ..., n-1}.
using Element = std::size_t;

class SetState;

/// A set function f: 2^{0..n-1} -> R. Implementations are immutable after construction and safe to
/// evaluate from several threads at once; all mutation happens in the SetState they hand out.
class SetFunction {
 public:
  virtual ~SetFunction() = default;

  /// n, the size of the ground set.
  [[nodiscard]] virtual std::size_t ground_size() const = 0;

  /// f(S) computed from scratch. Precondition: `set` holds distinct elements < n, in any order.
  [[nodiscard]] virtual double evaluate(std::span<const Element> set) const = 0;

  /// A new incremental state positioned at S = ∅ (value() == evaluate({})).
  [[nodiscard]] virtual std::unique_ptr<SetState> empty_state() const = 0;

  /// A short stable name used in reports, e.g. "facility-location".
  [[nodiscard]] virtual std::string name() const = 0;

  /// True when the function is monotone and submodular by construction (a promise the property
  /// tests verify, not a measurement). Diagnostics never trust it; optimizers' guarantees do.
  [[nodiscard]] virtual bool monotone_submodular() const { return false; }
};

/// The incremental state of one set S under one SetFunction: f(S), the marginal gain
/// Δ(e|S) = f(S ∪ {e}) − f(S), and updates S ← S ∪ {e} or S ← S \ {e}.
///
/// Membership is kept here (non-virtual interface); implementations override the on_* hooks and
/// may assume the preconditions already checked: add(e) requires e < n and e ∉ S, remove(e)
/// requires e ∈ S; violations throw std::invalid_argument.
class SetState {
 public:
  explicit SetState(std::size_t ground_size);
  virtual ~SetState() = default;

  /// f(S). O(1) for every state the library ships.
  [[nodiscard]] virtual double value() const = 0;

  /// Δ(e|S) = f(S ∪ {e}) − f(S) for e ∉ S (0 for e ∈ S). Does not change the state.
  [[nodiscard]] double gain(Element e) const;

  /// S ← S ∪ {e}. Precondition: e < n, e ∉ S.
  void add(Element e);

  /// S ← S \ {e}. Precondition: e ∈ S.
  void remove(Element e);

  /// An independent copy of this state (same S, same value).
  [[nodiscard]] virtual std::unique_ptr<SetState> clone() const = 0;

  [[nodiscard]] bool contains(Element e) const { return e < in_set_.size() && in_set_[e] != 0; }
  /// The members of S in insertion order (removals keep the order of the rest).
  [[nodiscard]] const std::vector<Element>& members() const { return members_; }
  [[nodiscard]] std::size_t size() const { return members_.size(); }
  [[nodiscard]] std::size_t ground_size() const { return in_set_.size(); }

 protected:
  SetState(const SetState&) = default;
  SetState& operator=(const SetState&) = default;
  /// Δ(e|S) for e ∉ S, e < n.
  [[nodiscard]] virtual double on_gain(Element e) const = 0;
  /// Called before e joins members(); update the cached value.
  virtual void on_add(Element e) = 0;
  /// Called after e left members(); update the cached value.
  virtual void on_remove(Element e) = 0;
  /// Called at the end of every add and remove, membership updated (the debug mode's hook).
  virtual void on_changed() {}

 private:
  std::vector<char> in_set_;
  std::vector<Element> members_;
};

/// Tolerance of the debug-mode comparison: |incremental − scratch| ≤ kCheckedStateTolerance ·
/// max(1, |scratch|). Incremental updates accumulate rounding over many adds and removes, so this
/// is looser than one operation's rounding but far below any real discrepancy.
inline constexpr double kCheckedStateTolerance = 1e-9;

/// Debug mode: wraps `state` (which must belong to `function`, which must outlive the result) so
/// that after every add and remove, and on every gain(), the incremental value is recomputed from
/// scratch with function.evaluate and compared within kCheckedStateTolerance; a mismatch throws
/// std::logic_error naming the function, the operation and both values. Costs one evaluate per call.
[[nodiscard]] std::unique_ptr<SetState> checked_state(const SetFunction& function,
                                                      std::unique_ptr<SetState> state);

/// f(S) through a fresh incremental state (adds the members of `set` in order); the reference for
/// testing evaluate() against the incremental path.
[[nodiscard]] double evaluate_incrementally(const SetFunction& function,
                                            std::span<const Element> set);

}  // namespace subevict::greedy
