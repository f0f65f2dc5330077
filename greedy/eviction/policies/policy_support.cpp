#include "greedy/eviction/policies/policy_support.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "core/attention.hpp"
#include "core/causal_weight_tiles.hpp"
#include "core/cpu_path.hpp"
#include "core/input_error.hpp"

namespace subevict::greedy {

void EvictionPolicy::rank(const StepView&, std::span<double>) {
  throw std::logic_error("eviction policy " + name() +
                         " does not rank its members (it cannot share a cache with other heads)");
}

std::unique_ptr<EvictionPolicy> EvictionPolicy::copy_onto(const HeadGroup&) const {
  throw std::logic_error("eviction policy " + name() + " cannot be copied in its state");
}

}  // namespace subevict::greedy

namespace subevict::greedy::policies {

std::vector<Token> keep_after_dropping(int prompt, int keep, const std::function<double(Token)>& key,
                                       const std::function<bool(Token)>& eligible) {
  std::vector<Token> order;
  for (Token t = 0; t < prompt; ++t) {
    if (eligible(t)) order.push_back(t);
  }
  std::vector<double> keys(std::size_t(prompt), 0.0);
  for (Token t : order) keys[t] = key(t);
  std::stable_sort(order.begin(), order.end(), [&](Token a, Token b) { return keys[a] < keys[b]; });
  std::vector<char> dropped(std::size_t(prompt), 0);
  const int excess = std::max(0, prompt - keep);
  for (int r = 0; r < std::min(excess, int(order.size())); ++r) dropped[order[r]] = 1;
  std::vector<Token> kept;
  for (Token t = 0; t < prompt; ++t) {
    if (!dropped[t]) kept.push_back(t);
  }
  return kept;
}

double aggregate(GroupAggregation rule, std::span<const double> values) {
  switch (rule) {
    case GroupAggregation::kMax:
      return *std::max_element(values.begin(), values.end());
    case GroupAggregation::kMean:
      return std::accumulate(values.begin(), values.end(), 0.0) / double(values.size());
    case GroupAggregation::kSum:
      break;
  }
  return std::accumulate(values.begin(), values.end(), 0.0);
}

std::vector<double> pool_positions(const std::vector<double>& x, int kernel, bool take_max) {
  const int m = int(x.size()), p = kernel / 2;
  std::vector<double> out(x.size());
  for (int t = 0; t < m; ++t) {
    const int lo = std::max(0, t - p), hi = std::min(m - 1, t + p);
    double v = take_max ? x[lo] : 0.0;
    for (int s = lo; s <= hi; ++s) v = take_max ? std::max(v, x[s]) : v + x[s];
    out[t] = take_max ? v : v / double(kernel);
  }
  return out;
}

std::vector<Eigen::MatrixXd> attention_rows(const HeadGroup& input, int first, int rows) {
  const int cols = first + rows;
  const Eigen::MatrixXd keys = input.k.topRows(cols).cast<double>();
  std::vector<Eigen::MatrixXd> out;
  out.reserve(input.q.size());
  for (const ConstHeadMap& q : input.q) {
    Eigen::MatrixXd scores = input.scale * (q.middleRows(first, rows).cast<double>() * keys.transpose());
    for (int r = 0; r < rows; ++r) {
      const int visible = first + r + 1;
      const Eigen::VectorXd probs = softmax(scores.row(r).head(visible).transpose());
      scores.row(r).head(visible) = probs.transpose();
      scores.row(r).tail(cols - visible).setZero();
    }
    out.push_back(std::move(scores));
  }
  return out;
}

std::vector<double> accumulated_full_attention(const HeadGroup& input, GroupAggregation rule,
                                               int first_row, int end_row) {
  if (active_cpu_path() == CpuPath::kAvx2Fma && rule != GroupAggregation::kMax && first_row < end_row) {
    // Per head in one pass over its score tiles, the heads' sums added in head order.
    const ConstHeadMap keys(input.k.data(), end_row, input.k.cols());
    std::vector<double> sums(std::size_t(end_row), 0.0);
    for (const ConstHeadMap& q : input.q) {
      const std::vector<double> head = CausalWeightTiles::column_sums(
          ConstHeadMap(q.data(), end_row, q.cols()), keys, input.scale, first_row, CpuPath::kAvx2Fma);
      for (std::size_t j = 0; j < sums.size(); ++j) sums[j] += head[j];
    }
    if (rule == GroupAggregation::kMean) {
      for (double& x : sums) x /= double(input.q.size());
    }
    return sums;
  }
  // The arithmetic of attention_rows row by row (the same GEMM, softmax and per-weight
  // aggregation, so the same doubles), with the keys cast once, each block's weights copied to
  // row-major so a row's softmax and its aggregation over the heads run on contiguous memory.
  using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  constexpr int kBlockRows = 64;
  std::vector<double> sums(std::size_t(std::max(end_row, 0)), 0.0);
  if (end_row <= first_row) return sums;
  const Eigen::MatrixXd keys = input.k.topRows(end_row).cast<double>();
  std::vector<RowMatrix> weights(input.q.size());
  Eigen::ArrayXd row_total(end_row);
  for (int first = first_row; first < end_row; first += kBlockRows) {
    const int rows = std::min(kBlockRows, end_row - first), cols = first + rows;
    for (std::size_t h = 0; h < input.q.size(); ++h) {
      const Eigen::MatrixXd scores =
          input.scale * (input.q[h].middleRows(first, rows).cast<double>() * keys.topRows(cols).transpose());
      weights[h] = scores;
      for (int r = 0; r < rows; ++r) {
        const int visible = first + r + 1;
        const Eigen::VectorXd logits = weights[h].row(r).head(visible).transpose();
        weights[h].row(r).head(visible) = softmax(logits).transpose();
      }
    }
    for (int r = 0; r < rows; ++r) {
      const int visible = first + r + 1;
      auto total = row_total.head(visible);
      total = weights[0].row(r).head(visible).array().transpose();
      for (std::size_t h = 1; h < weights.size(); ++h) {
        const auto next = weights[h].row(r).head(visible).array().transpose();
        if (rule == GroupAggregation::kMax) {
          total = total.max(next);
        } else {
          total += next;
        }
      }
      if (rule == GroupAggregation::kMean) total /= double(weights.size());
      Eigen::Map<Eigen::ArrayXd>(sums.data(), visible) += total;
    }
  }
  return sums;
}

HeavyRecent split_budget(int budget, double heavy_ratio, int heavy, int recent, const char* policy) {
  HeavyRecent split;
  if (heavy >= 0 && recent >= 0) {
    split = {heavy, recent};
  } else if (heavy >= 0) {
    split = {heavy, budget - heavy};
  } else if (recent >= 0) {
    split = {budget - recent, recent};
  } else {
    if (!(heavy_ratio >= 0.0 && heavy_ratio <= 1.0)) {
      throw InputError("policy", std::string(policy) + ": heavy_ratio", "a ratio of the budget in [0, 1]",
                       std::to_string(heavy_ratio));
    }
    split.heavy = int(heavy_ratio * budget);
    split.recent = budget - split.heavy;
  }
  if (split.heavy < 0 || split.recent < 0 || split.heavy + split.recent != budget) {
    throw InputError("policy", std::string(policy) + ": heavy + recent",
                     "non-negative sizes summing to the budget " + std::to_string(budget),
                     std::to_string(split.heavy) + " + " + std::to_string(split.recent));
  }
  return split;
}

void extend_row_norms(const ConstHeadMap& rows, int from, std::vector<double>& norms) {
  norms.resize(std::size_t(rows.rows()));
  for (Eigen::Index t = from; t < rows.rows(); ++t) norms[std::size_t(t)] = rows.row(t).cast<double>().norm();
}

}  // namespace subevict::greedy::policies
