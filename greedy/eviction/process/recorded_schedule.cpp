#include "greedy/eviction/process/recorded_schedule.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "core/attention.hpp"
#include "core/input_error.hpp"
#include "greedy/eviction/process/cache_schedule.hpp"

namespace subevict::greedy {
namespace {

std::string step_field(int i) { return "step " + std::to_string(i); }

/// "tokens 3, 5 and 9" (at most 8 listed).
std::string token_list(const std::vector<int>& tokens) {
  std::string text = tokens.size() == 1 ? "token " : "tokens ";
  const std::size_t shown = std::min<std::size_t>(tokens.size(), 8);
  for (std::size_t e = 0; e < shown; ++e) {
    text += (e == 0 ? "" : e + 1 == tokens.size() ? " and " : ", ") + std::to_string(tokens[e]);
  }
  if (shown < tokens.size()) text += " and " + std::to_string(tokens.size() - shown) + " more";
  return text;
}

/// The rules of one step, given the tokens G_i loses and |S_i|, applied in step order.
class ProcessRules {
 public:
  ProcessRules(int tokens, int budget, int prefill, ScheduleAdmission admission, int window, const std::string& source)
      : k_(budget), window_(window), exact_(admission == ScheduleAdmission::kExact), source_(source) {
    if (budget < 1) throw InputError(source, "budget", "an integer >= 1", std::to_string(budget));
    if (window < 0) throw InputError(source, "window", "0 (global) or a sliding window of W >= 1 keys", std::to_string(window));
    if (prefill < 0 || prefill > tokens) {
      throw InputError(source, "prefill", "a length in [0, " + std::to_string(tokens) + "]", std::to_string(prefill));
    }
    prefill_ = prefill > budget ? prefill : 0;  // P <= k: the prompt streams (simulator.hpp)
    if (prefill_ > 0 && !exact_) {
      throw InputError(source, "admission",
                       "exact for a run with prefill (the conversion to the process form is defined for pure "
                       "streaming)",
                       "to-process with prefill " + std::to_string(prefill));
    }
  }

  /// The token that leaves the window at the end of step i (i + 1 − W), or −1 (none).
  [[nodiscard]] int window_exit(int i) const { return window_ > 0 && i + 1 - window_ >= 0 ? i + 1 - window_ : -1; }

  /// Step i loses `left` (members of G_i, ascending: the evicted ones and window_exit(i) when it was
  /// still cached, which leaves first and is no eviction) and leaves `size` = |S_i| tokens.
  void step(int i, const std::vector<int>& left, int size) {
    const std::string where = step_field(i);
    const int exit = window_exit(i);
    const bool dropped = exit >= 0 && std::binary_search(left.begin(), left.end(), exit);
    evicted_.clear();
    for (int j : left) {
      if (!(dropped && j == exit)) evicted_.push_back(j);
    }
    const std::vector<int>& evicted = evicted_;
    const int unevicted = previous_ + 1 - (dropped ? 1 : 0);  // |S_i| if nothing is evicted
    if (prefill_ > 0 && i < prefill_ - 1) {
      if (!evicted.empty()) {
        throw InputError(source_, where,
                         "no eviction during the prefill steps 0.." + std::to_string(prefill_ - 2) +
                             " (prefill " + std::to_string(prefill_) + " > budget " + std::to_string(k_) +
                             ": the prompt is compressed at step " + std::to_string(prefill_ - 1) + ")",
                         token_list(evicted) + " evicted");
      }
    } else if (size > k_) {
      throw InputError(source_, where, "a cache of at most k = " + std::to_string(k_) + " tokens (the budget)",
                       std::to_string(size) + " tokens after step " + std::to_string(i) +
                           (evicted.empty() ? " (nothing evicted)" : " (" + token_list(evicted) + " evicted)"));
    } else if (exact_ && !(prefill_ > 0 && i == prefill_ - 1)) {
      if (unevicted <= k_ && !evicted.empty()) {
        const std::string held = " tokens (it held " + std::to_string(previous_);
        throw InputError(source_, where,
                         (dropped ? "no eviction while the cache is not over k = " + std::to_string(k_) + held +
                                        ", and token " + std::to_string(exit) + " left the window of " +
                                        std::to_string(window_) + " keys first"
                                  : "no eviction while the cache holds fewer than k = " + std::to_string(k_) + held) +
                             "; the process evicts only when full; docs/eviction.md: recorded decisions)",
                         token_list(evicted) + " evicted");
      }
      if (unevicted > k_ && evicted.size() > 1) {
        throw InputError(source_, where,
                         "exactly one eviction per step once the cache is full (k = " + std::to_string(k_) + ")",
                         std::to_string(evicted.size()) + " evictions (" + token_list(evicted) + ")");
      }
    }
    previous_ = size;
  }

  /// The schedule to replay under the admission rule.
  AdmittedSchedule finish(std::vector<int> last_step) const {
    AdmittedSchedule out;
    if (!exact_) {
      std::vector<int> process = to_process_schedule(last_step, k_, window_);
      for (std::size_t j = 0; j < process.size(); ++j) out.changed_tokens += process[j] != last_step[j];
      out.converted = out.changed_tokens > 0;
      last_step = std::move(process);
    }
    out.last_step = std::move(last_step);
    return out;
  }

 private:
  int k_ = 1;
  int window_ = 0;
  int prefill_ = 0;
  bool exact_ = true;
  std::vector<int> evicted_;  // step()'s evictions (its `left` without the window's drop)
  const std::string& source_;
  int previous_ = 0;  // |S_{i−1}|
};

void check_last_step(const std::vector<int>& last_step, const char* caller) {
  const int n = int(last_step.size());
  for (int j = 0; j < n; ++j) {
    if (last_step[std::size_t(j)] < j - 1 || last_step[std::size_t(j)] > n - 1) {
      throw std::invalid_argument(std::string(caller) + ": last_step[" + std::to_string(j) + "] = " +
                                  std::to_string(last_step[std::size_t(j)]) + " is outside [" +
                                  std::to_string(j - 1) + ", " + std::to_string(n - 1) + "]");
    }
  }
}

}  // namespace

std::string to_string(ScheduleAdmission admission) {
  return admission == ScheduleAdmission::kExact ? "exact" : "to-process";
}

AdmittedSchedule admit_eviction_steps(std::span<const std::int64_t> evicted_at, int budget, int prefill,
                                      ScheduleAdmission admission, const std::string& source, int window) {
  const std::int64_t n64 = std::int64_t(evicted_at.size());
  if (n64 > std::int64_t(std::numeric_limits<int>::max()) - 1) {
    throw InputError(source, "shape", "fewer than 2^31 - 1 tokens", std::to_string(n64));
  }
  const int n = int(n64);
  ProcessRules rules(n, budget, prefill, admission, window, source);
  // Values that are no step at all come first: they name a token, not a step.
  for (int j = 0; j < n; ++j) {
    const std::int64_t e = evicted_at[std::size_t(j)];
    if (e < 0 || e > n) {
      throw InputError(source, "token " + std::to_string(j),
                       "an eviction step in [" + std::to_string(j) + ", " + std::to_string(n) + "] (" +
                           std::to_string(n) + " = never evicted)",
                       std::to_string(e) + (e == -1 ? " (write n, not -1, for a token never evicted)" : ""));
    }
  }
  // A sliding window ends every token's stay at step j + W − 1 whatever the record says (a system
  // may write n for a token only its window dropped).
  std::vector<std::int64_t> left_at(evicted_at.begin(), evicted_at.end());
  for (int j = 0; window > 0 && j < n; ++j) {
    left_at[std::size_t(j)] = std::min<std::int64_t>(left_at[std::size_t(j)], std::int64_t(j) + window - 1);
  }
  // Bucket the departures by step (counting sort keeps each bucket ascending).
  std::vector<int> first(static_cast<std::size_t>(n) + 2, 0), order(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) ++first[std::size_t(left_at[std::size_t(j)]) + 1];
  for (int i = 0; i <= n; ++i) first[std::size_t(i) + 1] += first[std::size_t(i)];
  {
    std::vector<int> next(first.begin(), first.end() - 1);
    for (int j = 0; j < n; ++j) order[std::size_t(next[std::size_t(left_at[std::size_t(j)])]++)] = j;
  }
  std::vector<int> last_step(static_cast<std::size_t>(n));
  std::vector<int> evicted;
  int size = 0;
  for (int i = 0; i < n; ++i) {
    evicted.assign(order.begin() + first[std::size_t(i)], order.begin() + first[std::size_t(i) + 1]);
    for (int j : evicted) {
      if (j > i) {
        throw InputError(source, step_field(i),
                         "only tokens that have arrived evicted at step " + std::to_string(i) + " (token j arrives "
                         "at step j)",
                         "token " + std::to_string(j) + " evicted at step " + std::to_string(i) +
                             " before it arrives");
      }
      last_step[std::size_t(j)] = i - 1;
    }
    size += 1 - int(evicted.size());
    rules.step(i, evicted, size);
  }
  for (int j = 0; j < n; ++j) {
    if (left_at[std::size_t(j)] == n) last_step[std::size_t(j)] = n - 1;
  }
  return rules.finish(std::move(last_step));
}

AdmittedSchedule admit_keep_mask(std::span<const std::uint8_t> mask, int tokens, int budget, int prefill,
                                 ScheduleAdmission admission, const std::string& source, int window) {
  if (tokens < 0 || mask.size() != std::size_t(tokens) * std::size_t(tokens)) {
    throw InputError(source, "shape", "a keep mask of n x n = " + std::to_string(tokens) + " x " +
                                          std::to_string(tokens) + " entries",
                     std::to_string(mask.size()) + " entries");
  }
  const int n = tokens;
  ProcessRules rules(n, budget, prefill, admission, window, source);
  std::vector<int> last_step(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) last_step[std::size_t(j)] = j - 1;
  std::vector<int> evicted_at(std::size_t(n), -1);  // the step a token left the cache, -1: not (yet)
  std::vector<char> cached(std::size_t(n), 0);      // j ∈ S_{i−1}
  std::vector<int> evicted, members;                // G_i's members (S_{i−1} ascending, then i)
  for (int i = 0; i < n; ++i) {
    const std::uint8_t* row = mask.data() + std::size_t(i) * std::size_t(n);
    // A token query i + 1 cannot see has left the window: its entry is read as 0, whatever it says.
    const int first = window > 0 ? first_visible_key(i + 1, window) : 0;
    int size = 0;
    for (int j = 0; j < n; ++j) {
      const std::uint8_t v = row[j];
      if (v > 1) {
        throw InputError(source, step_field(i), "keep-mask entries 0 or 1",
                         "entry (" + std::to_string(i) + ", " + std::to_string(j) + ") = " + std::to_string(v));
      }
      if (v == 0 || j < first) continue;
      ++size;
      if (j > i) {
        throw InputError(source, step_field(i),
                         "only tokens that have arrived in the cache after step " + std::to_string(i) +
                             " (token j arrives at step j)",
                         "token " + std::to_string(j) + " kept at step " + std::to_string(i) + " before it arrives");
      }
      if (j < i && !cached[std::size_t(j)]) {
        throw InputError(source, step_field(i),
                         "an evicted token never returns (each token is evicted at most once)",
                         "token " + std::to_string(j) + " back in the cache at step " + std::to_string(i) +
                             " after its eviction at step " + std::to_string(evicted_at[std::size_t(j)]));
      }
    }
    evicted.clear();
    cached[std::size_t(i)] = 1;  // G_i = S_{i−1} ∪ {i}
    for (int j = 0; j <= i; ++j) {
      if (cached[std::size_t(j)] && (row[j] == 0 || j < first)) {
        evicted.push_back(j);
        cached[std::size_t(j)] = 0;
        evicted_at[std::size_t(j)] = i;
        last_step[std::size_t(j)] = i - 1;
      }
    }
    rules.step(i, evicted, size);
  }
  for (int j = 0; j < n; ++j) {
    if (cached[std::size_t(j)]) last_step[std::size_t(j)] = n - 1;
  }
  return rules.finish(std::move(last_step));
}

AdmittedSchedule admit_last_step(const std::vector<int>& last_step, int budget, int prefill,
                                 ScheduleAdmission admission, const std::string& source, int window) {
  std::vector<std::int64_t> steps(last_step.size());
  for (std::size_t j = 0; j < last_step.size(); ++j) steps[j] = std::int64_t(last_step[j]) + 1;
  return admit_eviction_steps(steps, budget, prefill, admission, source, window);
}

std::vector<std::int64_t> eviction_steps(const std::vector<int>& last_step) {
  check_last_step(last_step, "eviction_steps");
  std::vector<std::int64_t> steps(last_step.size());
  for (std::size_t j = 0; j < last_step.size(); ++j) steps[j] = std::int64_t(last_step[j]) + 1;
  return steps;
}

std::vector<std::uint8_t> keep_mask(const std::vector<int>& last_step) {
  check_last_step(last_step, "keep_mask");
  const std::size_t n = last_step.size();
  std::vector<std::uint8_t> mask(n * n, 0);
  for (std::size_t j = 0; j < n; ++j) {
    for (std::size_t i = j; int(i) <= last_step[j]; ++i) mask[i * n + j] = 1;
  }
  return mask;
}

}  // namespace subevict::greedy
