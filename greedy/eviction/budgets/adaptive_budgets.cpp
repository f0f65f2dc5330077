#include "greedy/eviction/budgets/adaptive_budgets.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/input_error.hpp"
#include "core/number_text.hpp"
#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy {

namespace {

/// Python's round(): half to even.
double round_half_even(double x) {
  const double lower = std::floor(x), fraction = x - lower;
  if (fraction != 0.5) return std::round(x);
  return std::fmod(lower, 2.0) == 0.0 ? lower : lower + 1.0;
}

}  // namespace

int pyramid_layer_budget(int layer, int layers, int budget, int tokens, int window, double beta) {
  const std::string source = "pyramidkv";
  if (layers < 1) throw InputError(source, "layers", "L >= 1", std::to_string(layers));
  if (layer < 0 || layer >= layers) {
    throw InputError(source, "layer", "0 <= layer < " + std::to_string(layers), std::to_string(layer));
  }
  if (budget < 1 || budget > tokens) {
    throw InputError(source, "budget", "1 <= k <= n = " + std::to_string(tokens), std::to_string(budget));
  }
  if (window < 0) throw InputError(source, "window_size", "W >= 0", std::to_string(window));
  if (!(beta >= 1.0) || !std::isfinite(beta)) throw InputError(source, "beta", "beta >= 1", significant_digits(beta, 6));
  const double k = budget, n = tokens, w = window;
  double least = k / beta, most = 2.0 * k - least;
  if (most >= n - w) {
    most = n - w;
    least = 2.0 * k - most;
  }
  if (layers == 1 || !(n >= most && most >= least && least >= w)) return budget;
  const double step = (most - least) / double(layers - 1);
  return std::clamp(int(round_half_even(most - double(layer) * step)), 1, tokens);
}

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

}  // namespace subevict::greedy
