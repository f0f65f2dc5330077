#include "greedy/eviction/budgets/share_plan.hpp"

#include <set>

#include "core/input_error.hpp"
#include "greedy/eviction/budgets/duo_share.hpp"
#include "greedy/eviction/budgets/pyramidkv_share.hpp"

namespace subevict::greedy {

SharePlan static_share_plan(const ShareRule& rule, const ShareHeads& shares, const Shape& shape, int k,
                            const std::vector<double>* losses) {
  const std::size_t count = shares.heads.size();
  if (rule.kind == ShareRule::Kind::kPyramidKv) return pyramidkv_plan(rule, shares.heads, shape.layers, k, shape.tokens);
  if (rule.kind == ShareRule::Kind::kDuo) {
    return duo_plan(rule, shares.units, losses ? *losses : std::vector<double>(count, 0.0), k, shape.tokens);
  }
  return {std::vector<int>(count, k), std::vector<bool>(count, false), {}};
}

PolicySpec planned_policy(const SharePlan& plan, std::size_t head, const ShareRule& rule, const PolicySpec& scorer) {
  return plan.streaming[head] ? duo_streaming_spec(rule) : scorer;
}

void check_share_plan(const SharePlan& plan, const ShareRule& rule, const std::vector<PolicySpec>& scorers,
                      const ShareHeads& shares, int tokens, const std::string& source, const std::string& rules_field,
                      const std::string& policies_field) {
  for (const auto& scorer : scorers) {
    std::set<std::pair<int, bool>> checked;
    for (std::size_t x = 0; x < shares.heads.size(); ++x) {
      if (!checked.insert({plan.budgets[x], plan.streaming[x]}).second) continue;
      const PolicySpec spec = planned_policy(plan, x, rule, scorer);
      try {
        check_policy_budget(spec, tokens, plan.budgets[x], source, policies_field);
      } catch (const InputError& e) {
        throw InputError(source, rules_field, "budgets that " + spec.label() + " accepts",
                         rule.label() + " gives layer " + std::to_string(shares.heads[x].first) + ", KV head " +
                             std::to_string(shares.heads[x].second) + " k = " + std::to_string(plan.budgets[x]) +
                             " (" + e.what() + ")");
      }
    }
  }
}

}  // namespace subevict::greedy
