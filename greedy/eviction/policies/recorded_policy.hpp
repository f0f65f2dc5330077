#pragma once
/// \file
/// A policy that replays recorded decisions (greedy/eviction/process/recorded_schedule.hpp): the
/// eviction schedule of any system, run through the same simulator, contract checks and metrics as
/// the built-in policies, so that it can be placed against the offline optimum.

#include <cstdint>
#include <string>
#include <vector>

#include "greedy/eviction/policies/eviction_policy.hpp"
#include "greedy/eviction/process/recorded_schedule.hpp"

namespace subevict::greedy {

/// Replays a schedule t_j (cache_schedule.hpp convention; use admit_eviction_steps or
/// admit_keep_mask to obtain it from the recorded forms). reset() admits the schedule at the run's
/// budget and prefill with ScheduleAdmission::kExact, so a schedule that is not a process schedule
/// of exactly that run is rejected with InputError(source, "step i", ...) naming the first bad
/// step, before any step runs; the simulator's own contract checks then apply as to any policy.
/// On a sliding-window layer the schedule is admitted with the window (recorded_schedule.hpp): a
/// token whose stay ends at step j + W − 1 left the window, not the policy's cache.
/// Prefill (P > k): keeps the prompt tokens with t_j ≥ P − 1. Streaming step i, when full: evicts
/// the token with t_j = i − 1. Not an oracle (its origin is unknown; label it yourself).
class RecordedPolicy final : public EvictionPolicy {
 public:
  /// `label` is name() (e.g. "recorded:my_policy"); `source` names the record in errors (a file
  /// and its (layer, KV head)).
  RecordedPolicy(std::string label, std::vector<int> last_step, std::string source);

  [[nodiscard]] std::string name() const override { return label_; }
  /// Throws InputError(source, "tokens", ...) when the run has another n than the record, and as
  /// admit_last_step for a schedule that breaks the process rules at the run's budget, prefill and
  /// window.
  void reset(const PolicyContext& context) override;
  [[nodiscard]] std::vector<Token> prefill() override;
  [[nodiscard]] Token step(const StepView& view) override;

 private:
  std::string label_;
  std::string source_;
  std::vector<int> last_step_;         // as recorded
  std::vector<int> schedule_;          // as admitted for the run (a window ends every stay)
  std::vector<Token> evicted_at_step_;  // the token with t_j = i − 1, or kNoEviction
  int prefill_ = 0;
};

}  // namespace subevict::greedy
