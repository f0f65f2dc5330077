#pragma once
/// \file
/// An eviction policy written in Python, run by the library's simulator (simulator.hpp) under the
/// same contract as the built-in policies (eviction_policy.hpp).
///
/// The Python object implements either
///   reset(n, k)                      optional; called before each (layer, KV head) run
///   observe(step, attention_row)     optional; every streaming step, full or not: attention_row is
///                                    float64 of length n, the group-aggregated tracked attention ã_i
///                                    on the members of G_i and 0 elsewhere
///   evict(step, cache) -> token      only when the cache is full (on a sliding-window layer: still
///                                    over k once the token leaving the window left, simulator.hpp):
///                                    cache is int64, the members of G_i = S_{i-1} ∪ {i} ascending
///                                    (i included); return one of them
/// or, instead of evict,
///   score(step, cache, q, K, V) -> scores   q: float32 (g, d), the group's queries at step i;
///                                    K, V: float32 (len(cache), d), the members' keys and values;
///                                    returns len(cache) finite scores; the member with the LOWEST
///                                    score is evicted (ties: the lowest token), kvpress's convention
///                                    that a higher score means more important.
/// The arrays are fresh for each call (a policy may keep them). Contract breaks (a token not in the
/// cache, a non-integer, scores of the wrong shape or not finite) raise PolicyContractError naming
/// the policy and the step; an exception raised by the policy propagates unchanged. Python
/// policies stream every token: they have no prefill rule.

#include <stdexcept>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "greedy/eviction/policies/eviction_policy.hpp"

namespace subevict::python {

/// A policy that broke the simulator's contract; the message names the policy and the step.
class PolicyContractError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// Throws InputError("simulate", "policy LABEL", ...) unless `policy` has a callable evict or
/// score (and no non-callable reset/observe). Needs the GIL.
void check_python_policy(const nb::handle& policy, const std::string& label);

/// The label of a Python policy object: its `name` attribute when a string, else its class name.
/// Needs the GIL.
std::string python_policy_label(const nb::handle& policy);

class PythonPolicy final : public greedy::EvictionPolicy {
 public:
  /// `policy` must pass check_python_policy. Construct and destroy with the GIL held.
  PythonPolicy(nb::object policy, std::string label);
  ~PythonPolicy() override;
  PythonPolicy(const PythonPolicy&) = delete;
  PythonPolicy& operator=(const PythonPolicy&) = delete;

  [[nodiscard]] std::string name() const override { return label_; }
  /// Calls reset(n, k) (taking the GIL).
  void reset(const greedy::PolicyContext& context) override;
  /// Throws InputError: a Python policy has no prefill rule (simulate with prefill 0).
  [[nodiscard]] std::vector<greedy::Token> prefill() override;
  /// observe, then evict or score when full (taking the GIL); checks the answer.
  [[nodiscard]] greedy::Token step(const greedy::StepView& view) override;

 private:
  [[noreturn]] void contract_error(int step, const std::string& what) const;
  greedy::Token evict_by_score(const greedy::StepView& view, const std::vector<greedy::Token>& cache);

  nb::object policy_;
  nb::object reset_, observe_, evict_, score_;
  std::string label_;
  greedy::PolicyContext context_;
};

}  // namespace subevict::python
