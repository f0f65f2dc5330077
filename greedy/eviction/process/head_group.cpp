#include "greedy/eviction/process/head_group.hpp"

#include <cmath>
#include <stdexcept>

#include "core/named_choice.hpp"

namespace subevict::greedy {

std::string to_string(GroupAggregation aggregation) {
  switch (aggregation) {
    case GroupAggregation::kMean:
      return "mean";
    case GroupAggregation::kMax:
      return "max";
    case GroupAggregation::kSum:
      break;
  }
  return "sum";
}

GroupAggregation parse_group_aggregation(std::string_view name) {
  return parse_named_choice(
      name, {GroupAggregation::kSum, GroupAggregation::kMean, GroupAggregation::kMax},
      [](GroupAggregation a) { return to_string(a); }, "aggregation");
}

void HeadGroup::validate() const {
  if (q.empty()) throw std::invalid_argument("HeadGroup: no query heads");
  if (k.rows() < 1 || k.cols() < 1) throw std::invalid_argument("HeadGroup: K must have at least one token and one dim");
  const auto same = [&](const ConstHeadMap& m) { return m.rows() == k.rows() && m.cols() == k.cols(); };
  if (!same(v)) throw std::invalid_argument("HeadGroup: V must have the shape of K");
  for (const ConstHeadMap& m : q) {
    if (!same(m)) throw std::invalid_argument("HeadGroup: every Q must have the shape of K");
  }
  if (!(std::isfinite(scale) && scale > 0)) throw std::invalid_argument("HeadGroup: scale must be finite and > 0");
  if (window < 0) throw std::invalid_argument("HeadGroup: window must be >= 0 (0: global)");
  if (!has_pre_rope()) return;
  if (q_pre.size() != q.size()) throw std::invalid_argument("HeadGroup: one pre-RoPE Q per query head");
  if (!same(k_pre)) throw std::invalid_argument("HeadGroup: pre-RoPE K must have the shape of K");
  for (const ConstHeadMap& m : q_pre) {
    if (!same(m)) throw std::invalid_argument("HeadGroup: every pre-RoPE Q must have the shape of K");
  }
  rotary.validate(head_dim());
}

Eigen::MatrixXd HeadGroup::future_rotation(int seen, int count) const {
  if (!has_pre_rope()) return Eigen::MatrixXd::Identity(head_dim(), head_dim());
  return average_rotation(rotary, head_dim(), seen, count);
}

HeadGroup head_group(const Workload& workload, int layer, int kv_head) {
  const Shape& shape = workload.shape();
  if (kv_head < 0 || kv_head >= shape.kv_heads) throw std::out_of_range("head_group: KV head out of range");
  std::vector<ConstHeadMap> q;
  const int g = shape.group_size();
  for (int h = 0; h < g; ++h) q.push_back(workload.q(layer, kv_head * g + h));
  HeadGroup group{std::move(q), workload.k(layer, kv_head), workload.v(layer, kv_head),
                  workload.score_scale(), layer, kv_head, workload.window(layer)};
  if (workload.has_pre_rope()) {
    for (int h = 0; h < g; ++h) group.q_pre.push_back(workload.q_pre(layer, kv_head * g + h));
    new (&group.k_pre) ConstHeadMap(workload.k_pre(layer, kv_head));
    group.rotary = workload.rotary(layer);
  }
  return group;
}

HeadGroup first_tokens(const HeadGroup& group, int tokens) {
  if (tokens <= 0 || tokens >= group.tokens()) return group;
  const auto rows = [tokens](const ConstHeadMap& m) { return ConstHeadMap(m.data(), tokens, m.cols()); };
  std::vector<ConstHeadMap> q;
  for (const ConstHeadMap& m : group.q) q.push_back(rows(m));
  HeadGroup first{std::move(q), rows(group.k), rows(group.v), group.scale, group.layer, group.kv_head, group.window};
  if (group.has_pre_rope()) {
    for (const ConstHeadMap& m : group.q_pre) first.q_pre.push_back(rows(m));
    new (&first.k_pre) ConstHeadMap(rows(group.k_pre));
    first.rotary = group.rotary;
  }
  return first;
}

}  // namespace subevict::greedy
