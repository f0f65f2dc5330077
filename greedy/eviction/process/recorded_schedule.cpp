#include "greedy/eviction/process/recorded_schedule.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

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
  ProcessRules(int tokens, int budget, int prefill, ScheduleAdmission admission, const std::string& source)
      : k_(budget), exact_(admission == ScheduleAdmission::kExact), source_(source) {
    if (budget < 1) throw InputError(source, "budget", "an integer >= 1", std::to_string(budget));
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

  /// Step i evicts `evicted` (members of G_i, ascending) and leaves `size` = |S_i| tokens.
  void step(int i, const std::vector<int>& evicted, int size) {
    const std::string where = step_field(i);
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
      if (previous_ < k_ && !evicted.empty()) {
        throw InputError(source_, where,
                         "no eviction while the cache holds fewer than k = " + std::to_string(k_) +
                             " tokens (it held " + std::to_string(previous_) +
                             "; the process evicts only when full; docs/eviction.md: recorded decisions)",
                         token_list(evicted) + " evicted");
      }
      if (previous_ == k_ && evicted.size() > 1) {
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
      std::vector<int> process = to_process_schedule(last_step, k_);
      for (std::size_t j = 0; j < process.size(); ++j) out.changed_tokens += process[j] != last_step[j];
      out.converted = out.changed_tokens > 0;
      last_step = std::move(process);
    }
    out.last_step = std::move(last_step);
    return out;
  }

 private:
  int k_ = 1;
  int prefill_ = 0;
  bool exact_ = true;
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
                                      ScheduleAdmission admission, const std::string& source) {
  const std::int64_t n64 = std::int64_t(evicted_at.size());
  if (n64 > std::int64_t(std::numeric_limits<int>::max()) - 1) {
    throw InputError(source, "shape", "fewer than 2^31 - 1 tokens", std::to_string(n64));
  }
  const int n = int(n64);
  ProcessRules rules(n, budget, prefill, admission, source);
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
  // Bucket the evictions by step (counting sort keeps each bucket ascending).
  std::vector<int> first(static_cast<std::size_t>(n) + 2, 0), order(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) ++first[std::size_t(evicted_at[std::size_t(j)]) + 1];
  for (int i = 0; i <= n; ++i) first[std::size_t(i) + 1] += first[std::size_t(i)];
  {
    std::vector<int> next(first.begin(), first.end() - 1);
    for (int j = 0; j < n; ++j) order[std::size_t(next[std::size_t(evicted_at[std::size_t(j)])]++)] = j;
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
    if (evicted_at[std::size_t(j)] == n) last_step[std::size_t(j)] = n - 1;
  }
  return rules.finish(std::move(last_step));
}

AdmittedSchedule admit_keep_mask(std::span<const std::uint8_t> mask, int tokens, int budget, int prefill,
                                 ScheduleAdmission admission, const std::string& source) {
  if (tokens < 0 || mask.size() != std::size_t(tokens) * std::size_t(tokens)) {
    throw InputError(source, "shape", "a keep mask of n x n = " + std::to_string(tokens) + " x " +
                                          std::to_string(tokens) + " entries",
                     std::to_string(mask.size()) + " entries");
  }
  const int n = tokens;
  ProcessRules rules(n, budget, prefill, admission, source);
  std::vector<int> last_step(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) last_step[std::size_t(j)] = j - 1;
  std::vector<int> evicted_at(std::size_t(n), -1);  // the step a token left the cache, -1: not (yet)
  std::vector<char> cached(std::size_t(n), 0);      // j ∈ S_{i−1}
  std::vector<int> evicted, members;                // G_i's members (S_{i−1} ascending, then i)
  for (int i = 0; i < n; ++i) {
    const std::uint8_t* row = mask.data() + std::size_t(i) * std::size_t(n);
    int size = 0;
    for (int j = 0; j < n; ++j) {
      const std::uint8_t v = row[j];
      if (v > 1) {
        throw InputError(source, step_field(i), "keep-mask entries 0 or 1",
                         "entry (" + std::to_string(i) + ", " + std::to_string(j) + ") = " + std::to_string(v));
      }
      if (v == 0) continue;
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
      if (cached[std::size_t(j)] && row[j] == 0) {
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
                                 ScheduleAdmission admission, const std::string& source) {
  std::vector<std::int64_t> steps(last_step.size());
  for (std::size_t j = 0; j < last_step.size(); ++j) steps[j] = std::int64_t(last_step[j]) + 1;
  return admit_eviction_steps(steps, budget, prefill, admission, source);
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
