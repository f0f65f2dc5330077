#pragma once
/// \file
/// Recorded eviction schedules: the decisions of any system (another simulator, a serving engine, a
/// Python policy), checked against the rules of the eviction process (theory.md §2,
/// docs/eviction.md "Recorded decisions") and turned into the schedule t_j of cache_schedule.hpp,
/// so that they can be replayed through the simulator like a built-in policy.
///
/// Two forms, both 0-based (token j arrives at step j):
/// - Eviction steps: e_j = the step at which token j left the cache, i.e. j ∈ G_{e_j} \ S_{e_j};
///   e_j = j: evicted on arrival; e_j = n: never evicted. Hence e_j = t_j + 1 ∈ [j, n], and
///   j ∈ S_i exactly for j ≤ i < e_j (the keep mask below is `j <= i < e[j]`).
/// - Keep mask: n × n, row-major, mask[i n + j] = 1 exactly when j ∈ S_i (the cache after step i),
///   entries 0 or 1.
///
/// The rules checked, step by step, at budget k and prefill length P (P ≤ k: no prefill phase):
/// no token kept or evicted before it arrives; an evicted token never returns (each token is
/// evicted at most once); |S_i| ≤ k; and, for a process schedule, nothing is evicted while
/// |S_{i−1}| < k and exactly one member of G_i is evicted once |S_{i−1}| = k. With P > k, steps
/// 0..P−2 evict nothing and step P−1 (the prefill rule) may evict any number, leaving ≤ k.
///
/// On a sliding-window layer of W keys (window > 0; simulator.hpp) token i + 1 − W leaves at step
/// i without an eviction, and it leaves first: whatever the record says, a token's stay ends at
/// step j + W − 1 (e_j = min(e_j, j + W − 1); a keep mask's entries for tokens query i + 1 cannot
/// see are read as 0), and the process rule is "evict nothing while |G_i| less that token is at
/// most k, exactly one member once it is k + 1"; when the token was still cached at step i, the
/// step evicts nothing (as a windowed cache runs it).
/// Errors are InputError(source, "step i", ...) naming the FIRST step at which a rule breaks (or
/// "token j" for an eviction step that is no step at all, outside [0, n]).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace subevict::greedy {

/// What to do with a recorded schedule that keeps its caches within the budget but is not a
/// process schedule (it evicts before the cache is full, or several tokens in one step).
enum class ScheduleAdmission {
  /// Reject it, naming the first step that breaks a process rule: the decisions are evaluated
  /// exactly as recorded or not at all (the default everywhere).
  kExact,
  /// Replace it by to_process_schedule (cache_schedule.hpp): the process schedule that keeps
  /// every token at least as long, hence retains at least as much attention at every step. Its
  /// metrics are then those of the converted schedule, not of the recorded one. Pure streaming
  /// only (P ≤ k).
  kToProcess,
};

/// "exact" / "to-process".
[[nodiscard]] std::string to_string(ScheduleAdmission admission);

/// A recorded schedule admitted at a budget: the schedule t_j to replay and whether it differs
/// from the recorded one (only with ScheduleAdmission::kToProcess).
struct AdmittedSchedule {
  std::vector<int> last_step;  ///< t_j per token: a process schedule at the budget
  bool converted = false;      ///< true when kToProcess changed at least one t_j
  int changed_tokens = 0;      ///< how many t_j the conversion changed
};

/// Admits eviction steps e (length n) at budget k ≥ 1 and prefill P ∈ [0, n]: checks every rule
/// of the file comment in step order and throws InputError(source, ...) for the first breach
/// ("token j" for e_j outside [0, n], "step i" otherwise), or InputError(source, "budget" /
/// "prefill" / "admission", ...) for k < 1, P outside [0, n], or kToProcess with P > k. O(n).
/// `window` is the layer's (0: global); InputError(source, "window", ...) when < 0.
[[nodiscard]] AdmittedSchedule admit_eviction_steps(std::span<const std::int64_t> evicted_at, int budget,
                                                    int prefill, ScheduleAdmission admission,
                                                    const std::string& source, int window = 0);

/// Admits a keep mask of `tokens` × `tokens` entries (row-major, row i = S_i) as
/// admit_eviction_steps does; also throws InputError(source, "step i", ...) for an entry other
/// than 0 or 1, a token in S_i before it arrives (j > i), and a token back in the cache after its
/// eviction, and InputError(source, "shape", ...) when mask.size() ≠ tokens². O(n²).
[[nodiscard]] AdmittedSchedule admit_keep_mask(std::span<const std::uint8_t> mask, int tokens, int budget,
                                               int prefill, ScheduleAdmission admission,
                                               const std::string& source, int window = 0);

/// Admits a schedule t_j (cache_schedule.hpp convention) as admit_eviction_steps(t_j + 1).
[[nodiscard]] AdmittedSchedule admit_last_step(const std::vector<int>& last_step, int budget, int prefill,
                                               ScheduleAdmission admission, const std::string& source,
                                               int window = 0);

/// e_j = t_j + 1 for a schedule t_j ∈ [j − 1, n − 1] (n for a token never evicted). Throws
/// std::invalid_argument for t_j outside that range. O(n).
[[nodiscard]] std::vector<std::int64_t> eviction_steps(const std::vector<int>& last_step);

/// The keep mask (n × n, row-major, 1 where j ∈ S_i) of a schedule t_j ∈ [j − 1, n − 1]. Throws
/// std::invalid_argument for t_j outside that range. O(n²) memory.
[[nodiscard]] std::vector<std::uint8_t> keep_mask(const std::vector<int>& last_step);

}  // namespace subevict::greedy
