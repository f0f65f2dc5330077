#include "greedy/eviction/optimum/cache_dp.hpp"

#include <bit>
#include <chrono>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/input_error.hpp"

namespace subevict::greedy {
namespace {

using Mask = std::uint32_t;

struct Entry {
  double value = 0.0;
  Mask parent = 0;  // S_{i-1}
};

}  // namespace

ScheduleSummary cache_dp(const Eigen::MatrixXd& gains, int budget, const CacheDpOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const int n = validate_instance(gains, budget, "cache_dp");
  if (n > options.max_tokens || n > 31) {
    throw InputError("cache_dp", "tokens", "at most " + std::to_string(std::min(options.max_tokens, 31)),
                     std::to_string(n));
  }
  // layers[i]: the reachable S_i with their best value and predecessor, in insertion order.
  std::vector<std::vector<Mask>> order(n);
  std::vector<std::unordered_map<Mask, Entry>> layers(n);
  const std::vector<Mask> empty_order{0};
  const std::unordered_map<Mask, Entry> empty_layer{{0, Entry{}}};
  std::uint64_t visited = 0;
  for (int i = 0; i < n; ++i) {
    const auto& previous = i == 0 ? empty_order : order[i - 1];
    const auto& previous_entries = i == 0 ? empty_layer : layers[i - 1];
    for (Mask s : previous) {
      const double base = previous_entries.at(s).value;
      const Mask g = s | (Mask{1} << i);
      double earned = 0.0;
      for (int j = 0; j <= i; ++j) {
        if (g >> j & 1U) earned += gains(i, j);
      }
      const auto offer = [&](Mask next) {
        auto [it, inserted] = layers[i].try_emplace(next, Entry{base + earned, s});
        if (inserted) {
          order[i].push_back(next);
        } else if (base + earned > it->second.value) {
          it->second = Entry{base + earned, s};
        }
      };
      if (std::popcount(g) <= budget) {
        offer(g);
      } else {
        for (int v = 0; v <= i; ++v) {
          if (g >> v & 1U) offer(g & ~(Mask{1} << v));
        }
      }
    }
    visited += order[i].size();
  }

  ScheduleSummary out;
  out.model_size = visited;
  double dp_value = 0.0;
  if (n > 0) {
    // Best final state (lowest insertion order on ties), then walk the parents back.
    Mask best = order[n - 1].front();
    for (Mask s : order[n - 1]) {
      if (layers[n - 1].at(s).value > layers[n - 1].at(best).value) best = s;
    }
    dp_value = layers[n - 1].at(best).value;
    std::vector<std::vector<int>> sets(n);
    Mask s = best;
    for (int i = n - 1; i >= 0; --i) {
      for (int j = 0; j <= i; ++j) {
        if (s >> j & 1U) sets[i].push_back(j);
      }
      s = layers[i].at(s).parent;
    }
    out.last_step = schedule_from_caches(sets);
  }
  finish_summary(gains, out);
  out.upper_bound = dp_value;  // the program's own total, equal to value up to rounding
  out.status = ScheduleStatus::kOptimal;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace subevict::greedy
