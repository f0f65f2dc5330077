#include "greedy/eviction/budgets/duo_share.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <numeric>
#include <string>

#include "core/input_error.hpp"
#include "core/number_text.hpp"
#include "greedy/eviction/budgets/round_half_even.hpp"
#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy {

double streaming_loss(const HeadGroup& input, int sink, int recent, int calibration) {
  const std::string source = "duo";
  const int n = input.tokens();
  if (sink < 0) throw InputError(source, "sink_size", "an integer >= 0", std::to_string(sink));
  if (recent < 1) throw InputError(source, "recent_size", "an integer >= 1", std::to_string(recent));
  if (calibration < 1 || calibration > n) {
    throw InputError(source, "calibration", "1 <= calibration <= n = " + std::to_string(n), std::to_string(calibration));
  }
  const std::vector<Eigen::MatrixXd> rows = policies::attention_rows(input, 0, calibration);
  double lost = 0.0;
  for (const Eigen::MatrixXd& head : rows) {
    for (int i = 0; i < calibration; ++i) {
      double kept = 0.0;
      for (int j = 0; j <= i; ++j) {
        if (j < sink || j > i - recent) kept += head(i, j);
      }
      lost += std::max(0.0, 1.0 - kept);
    }
  }
  return lost / double(rows.size()) / double(calibration);
}

std::vector<bool> streaming_heads(const std::vector<double>& losses, double ratio) {
  if (!(ratio >= 0.0 && ratio <= 1.0)) {
    throw InputError("duo", "head_compression_ratio", "a share in [0, 1]", significant_digits(ratio, 6));
  }
  const int count = int(round_half_even(ratio * double(losses.size())));
  std::vector<int> order(losses.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return losses[a] < losses[b]; });
  std::vector<bool> streaming(losses.size(), false);
  for (int r = 0; r < count; ++r) streaming[std::size_t(order[std::size_t(r)])] = true;
  return streaming;
}

int full_head_budget(long long total, int heads, int streaming_count, int streaming, int tokens) {
  const long long left = total - (long long)streaming_count * streaming;
  const int full = heads - streaming_count;
  if (full == 0) {
    if (left < 0) {
      throw InputError("duo", "budget", "streaming heads that fit the total " + std::to_string(total),
                       std::to_string(streaming_count) + " x " + std::to_string(streaming) + " slots");
    }
    return 0;
  }
  const long long each = left >= 0 ? left / full : 0;
  if (each < 1) {
    throw InputError("duo", "budget",
                     "a total that leaves the " + std::to_string(full) + " full heads >= 1 slot each after " +
                         std::to_string(streaming_count) + " streaming heads of " + std::to_string(streaming),
                     std::to_string(total));
  }
  return int(std::min<long long>(each, tokens));
}

SharePlan duo_plan(const ShareRule& rule, const std::vector<std::vector<int>>& units, const std::vector<double>& losses,
                 int k, int tokens) {
  const int slots = rule.sink_size + rule.recent_size;
  SharePlan plan{std::vector<int>(losses.size(), k), std::vector<bool>(losses.size(), false), {}};
  int streamed = 0;
  for (const auto& unit : units) {
    std::vector<double> unit_losses;
    for (int x : unit) unit_losses.push_back(losses[std::size_t(x)]);
    const std::vector<bool> s = streaming_heads(unit_losses, rule.head_compression_ratio);
    const int m = int(std::count(s.begin(), s.end(), true));
    const int full = full_head_budget((long long)unit.size() * k, int(unit.size()), m, slots, tokens);
    for (std::size_t e = 0; e < unit.size(); ++e) {
      plan.streaming[std::size_t(unit[e])] = s[e];
      plan.budgets[std::size_t(unit[e])] = s[e] ? std::min(slots, tokens) : full;
    }
    streamed += m;
  }
  plan.note = std::to_string(streamed) + " of " + std::to_string(losses.size()) + " heads stream (" +
              std::to_string(slots) + " slots)";
  return plan;
}

PolicySpec duo_streaming_spec(const ShareRule& rule) {
  return parse_policy_spec("streamingllm:sinks=" + std::to_string(rule.sink_size), "simulate", "--share-rules", 16);
}

}  // namespace subevict::greedy
