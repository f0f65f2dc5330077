#pragma once
// Test helpers for greedy/eviction/evaluation/resumable_simulation.hpp: a run's shape and rows as
// extend() takes them, and the check that a forked run decides as one run on the rows it got.
#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "greedy/eviction/evaluation/resumable_simulation.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "tests/greedy/naive_eviction.hpp"

namespace subevict::greedy::resumable_check {

inline ResumableShape shape_of(const HeadGroup& group) {
  return ResumableShape{group.group_size(), group.head_dim(), group.scale, group.window, group.tokens(),
                        group.layer, group.kv_head};
}

/// Rows [from, from + m) of the group, as extend() takes them (the cache after every step kept).
inline ResumedSteps append(ResumableSimulation& run, const HeadGroup& group, int from, int m) {
  std::vector<ConstHeadMap> q;
  for (const ConstHeadMap& head : group.q) q.emplace_back(head.data() + std::ptrdiff_t(from) * head.cols(), m, head.cols());
  const int d = group.head_dim();
  return run.extend(q, ConstHeadMap(group.k.data() + std::ptrdiff_t(from) * d, m, d),
                    ConstHeadMap(group.v.data() + std::ptrdiff_t(from) * d, m, d), true);
}

/// The instance `a` with its rows from `s` on replaced by those of `other` (same n, d, g).
inline naive::Instance spliced(naive::Instance a, const naive::Instance& other, int s) {
  const std::size_t from = std::size_t(s) * std::size_t(a.d);
  for (std::size_t h = 0; h < a.q.size(); ++h) std::copy(other.q[h].begin() + std::ptrdiff_t(from), other.q[h].end(), a.q[h].begin() + std::ptrdiff_t(from));
  std::copy(other.k.begin() + std::ptrdiff_t(from), other.k.end(), a.k.begin() + std::ptrdiff_t(from));
  std::copy(other.v.begin() + std::ptrdiff_t(from), other.v.end(), a.v.begin() + std::ptrdiff_t(from));
  return a;
}

/// Empty when a run of make() fed a's rows [0, s) and forked there decides, fed b's rows [s, n)
/// (b: a's rows before s, others after), step by step as simulate() on b, while the run it was
/// forked from, fed a's rows [s, n) first, decides as simulate() on a; else the first difference.
/// Requires 0 < s < n, s ≥ options.prefill when the prefill rule runs (P > budget).
inline std::string fork_mismatch(const std::function<std::unique_ptr<EvictionPolicy>()>& make, const HeadGroup& a,
                                 const HeadGroup& b, SimulationOptions options, int s) {
  options.record_cache = true;
  options.compute_metrics = false;
  const int n = a.tokens();
  const Trace on_a = simulate(a, *make(), options), on_b = simulate(b, *make(), options);
  ResumableSimulation run(make(), shape_of(a), options);
  (void)append(run, a, 0, s);
  const std::unique_ptr<ResumableSimulation> forked = run.fork();
  if (forked->tokens() != s || forked->cache() != run.cache()) return "the fork is not in the run's state";
  const auto differs = [&](const ResumedSteps& steps, const Trace& trace, const std::string& which) -> std::string {
    for (int i = s; i < n; ++i) {
      const std::size_t e = std::size_t(i - s);
      if (steps.evicted[e] != trace.steps[std::size_t(i)].evicted || steps.cache[e] != trace.cache[std::size_t(i)]) {
        return which + " differs from simulate at step " + std::to_string(i);
      }
    }
    return "";
  };
  const std::string original = differs(append(run, a, s, n - s), on_a, "the original");  // first: its rows differ
  if (!original.empty()) return original;
  return differs(append(*forked, b, s, n - s), on_b, "the fork");
}

}  // namespace subevict::greedy::resumable_check
