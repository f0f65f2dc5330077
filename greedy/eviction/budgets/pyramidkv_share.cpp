#include "greedy/eviction/budgets/pyramidkv_share.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/input_error.hpp"
#include "core/number_text.hpp"
#include "greedy/eviction/budgets/round_half_even.hpp"

namespace subevict::greedy {

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

SharePlan pyramidkv_plan(const ShareRule& rule, const std::vector<std::pair<int, int>>& heads, int layers, int k,
                         int tokens) {
  std::vector<int> budgets;
  for (const auto& [layer, kv_head] : heads) {
    budgets.push_back(pyramid_layer_budget(layer, layers, k, tokens, rule.window_size, rule.beta));
  }
  const bool flat = std::all_of(budgets.begin(), budgets.end(), [&](int b) { return b == k; });
  std::string note = flat ? "every layer keeps k (kvpress's fallback: n >= max >= min >= window_size fails)"
                          : "layer budgets " + std::to_string(budgets.front()) + " .. " + std::to_string(budgets.back());
  return {budgets, std::vector<bool>(budgets.size(), false), note};
}

}  // namespace subevict::greedy
