#pragma once
/// \file
/// Building blocks shared by the eviction policies of greedy/policies/: the one eviction order
/// (smallest key, then lowest token), prefill selections in that order, group aggregation, and the
/// full prompt attention that prefill rules read. Tokens are 0-based.

#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <limits>
#include <algorithm>
#include <memory>
#include <span>
#include <vector>

#include "greedy/eviction/policies/eviction_policy.hpp"

namespace subevict::greedy::policies {

/// Position in `tokens` of the member minimizing (key(t), t) lexicographically among the members
/// with eligible(t); −1 when none is eligible. The one tie rule of every policy (lowest token).
template <class Key, class Eligible>
[[nodiscard]] int argmin_entry(std::span<const Token> tokens, Key&& key, Eligible&& eligible) {
  int best = -1;
  double best_key = 0.0;
  for (int e = 0; e < int(tokens.size()); ++e) {
    const Token t = tokens[e];
    if (!eligible(t)) continue;
    const double value = key(t);
    if (best < 0 || value < best_key || (value == best_key && t < tokens[best])) {
      best = e;
      best_key = value;
    }
  }
  return best;
}

/// The member of `tokens` minimizing (key(t), t) among the eligible ones, as a token.
/// Throws std::logic_error when none is eligible (a policy bug: full steps always have one).
template <class Key, class Eligible>
[[nodiscard]] Token evict_min(std::span<const Token> tokens, Key&& key, Eligible&& eligible) {
  const int e = argmin_entry(tokens, key, eligible);
  if (e < 0) throw std::logic_error("eviction policy: no eligible member to evict");
  return tokens[e];
}

/// Prefill selection: among tokens 0..prompt−1, drops the eligible ones in the order (key
/// ascending, token ascending) until at most `keep` remain or no eligible token is left, and
/// returns the survivors ascending (non-eligible tokens always survive).
[[nodiscard]] std::vector<Token> keep_after_dropping(int prompt, int keep,
                                                     const std::function<double(Token)>& key,
                                                     const std::function<bool(Token)>& eligible);

/// Base of the policies whose rule is "evict the eligible member with the smallest key" (CRTP:
/// no virtual call per member). Derived defines `double key(int step, Token t) const` and may
/// redefine: eligible(step, t) (default: every member), observe(view) (called at every step before
/// the choice, e.g. to accumulate), on_reset(), on_prefill() (before the prefill choice), on_copy(input)
/// (a copy's state re-pointed at `input`, copy_onto),
/// prefill_keep() (default k) and prefill_eligible(t) (default eligible(P − 1, t)). The prefill
/// rule drops tokens in the order (key(P − 1, t), t) until prefill_keep() remain.
template <class Derived>
class RankedPolicy : public EvictionPolicy {
 public:
  void reset(const PolicyContext& context) override {
    context_ = context;
    self().on_reset();
  }
  [[nodiscard]] std::vector<Token> prefill() override {
    self().on_prefill();
    const int last = context_.prefill - 1;
    return keep_after_dropping(
        context_.prefill, self().prefill_keep(), [&](Token t) { return self().key(last, t); },
        [&](Token t) { return self().prefill_eligible(t); });
  }
  [[nodiscard]] Token step(const StepView& view) override {
    self().observe(view);
    if (!view.full) return kNoEviction;
    return evict_min(view.tokens, [&](Token t) { return self().key(view.step, t); },
                     [&](Token t) { return self().eligible(view.step, t); });
  }
  [[nodiscard]] bool ranks() const override { return true; }
  /// Derived copied (its state is values; a Derived that also holds the input elsewhere redefines
  /// on_copy(input), public, to re-point it).
  [[nodiscard]] std::unique_ptr<EvictionPolicy> copy_onto(const HeadGroup& input) const override {
    auto copy = std::make_unique<Derived>(self());
    static_cast<RankedPolicy&>(*copy).context_.input = &input;
    copy->on_copy(input);
    return copy;
  }
  void rank(const StepView& view, std::span<double> keys) override {
    self().observe(view);
    if (!view.full) return;
    for (std::size_t e = 0; e < view.tokens.size(); ++e) {
      const Token t = view.tokens[e];
      keys[e] = self().eligible(view.step, t) ? self().key(view.step, t) : std::numeric_limits<double>::infinity();
    }
  }

 protected:
  [[nodiscard]] const PolicyContext& context() const { return context_; }
  // Defaults (hidden by Derived's own definitions).
  [[nodiscard]] bool eligible(int, Token) const { return true; }
  void observe(const StepView&) {}
  void on_reset() {}
  void on_prefill() {}
  void on_copy(const HeadGroup&) {}
  [[nodiscard]] int prefill_keep() const { return context_.budget; }
  [[nodiscard]] bool prefill_eligible(Token t) const { return self().eligible(context_.prefill - 1, t); }

 private:
  [[nodiscard]] Derived& self() { return static_cast<Derived&>(*this); }
  [[nodiscard]] const Derived& self() const { return static_cast<const Derived&>(*this); }
  PolicyContext context_;
};

/// A RankedPolicy whose keys are scores of the current set, recomputed whenever a choice is due:
/// over the prompt 0..P − 1 before the prefill rule, over G_i at every full step (a scorer that
/// compresses a whole cache at once, applied once per eviction). Derived defines
/// score_members(members), public, which writes score_[t] for every member (ascending tokens), and
/// may define on_query(i), called for every query i (the prompt's before the prefill rule, then
/// each step's before its choice), and scored_from(): tokens and queries before it (a scorer's
/// sinks, which it neither scores nor learns from) reach neither hook; default 0. Derived sizes
/// score_ in on_reset() and says in eligible() which tokens it never evicts.
template <class Derived>
class SetScoredPolicy : public RankedPolicy<Derived> {
 public:
  void on_prefill() {
    std::vector<Token> prompt;
    for (Token t = self().scored_from(); t < this->context().prefill; ++t) {
      self().on_query(t);
      prompt.push_back(t);
    }
    self().score_members(prompt);
  }
  void observe(const StepView& view) {
    const Token from = self().scored_from();
    if (view.step >= from) self().on_query(view.step);
    if (!view.full) return;
    std::vector<Token> members;
    for (Token t : view.tokens) {
      if (t >= from) members.push_back(t);
    }
    std::sort(members.begin(), members.end());
    self().score_members(members);
  }
  [[nodiscard]] double key(int, Token t) const { return score_[std::size_t(t)]; }

 protected:
  void on_query(int) {}
  [[nodiscard]] Token scored_from() const { return 0; }
  std::vector<double> score_;  ///< per token, valid for the members of the last scored set

 private:
  [[nodiscard]] Derived& self() { return static_cast<Derived&>(*this); }
};

/// Extends `norms` (which holds ‖row t‖₂ of `rows` for t < from) to every row of `rows`: the
/// per-token norms a policy derives at reset and, when the group grows, in rows_added(from).
void extend_row_norms(const ConstHeadMap& rows, int from, std::vector<double>& norms);

/// sum, mean or max of `values` (non-empty).
[[nodiscard]] double aggregate(GroupAggregation rule, std::span<const double> values);

/// `x` pooled along its positions with an odd `kernel` ≥ 1 centred on each: the maximum over the
/// positions inside x (take_max), or the sum over them divided by `kernel` (positions beyond the
/// ends count as zeros, as torch's avg_pool1d with padding kernel / 2). Sums in ascending
/// position order from 0.
[[nodiscard]] std::vector<double> pool_positions(const std::vector<double>& x, int kernel, bool take_max);

/// Full causal attention rows [first, first + rows) of every query head of `input` over the keys
/// 0..first + rows − 1 (row r holds a_{first+r} in its first first + r + 1 columns, zeros after):
/// one rows x (first + rows) matrix per head. One GEMM per head, O(g rows (first + rows) d).
[[nodiscard]] std::vector<Eigen::MatrixXd> attention_rows(const HeadGroup& input, int first,
                                                          int rows);

/// Σ_{i ∈ [first_row, end_row)} agg_h(a^h_ij) for j = 0..end_row − 1: the group-aggregated
/// (per weight) full causal attention accumulated over the query rows [first_row, end_row). With
/// first_row = 0 and end_row = P these are the prompt's accumulated scores; with end_row = n the
/// whole-sequence (oracle) scores. Blocked, O(g (end_row − first_row) end_row d). On the AVX2 path
/// (core/cpu_path.hpp) the sum and mean rules take each head's sums from
/// CausalWeightTiles::column_sums (one pass over the score tiles) and add the heads after: equal
/// to the portable path's within that function's tolerance, so a decision can differ between the
/// paths only where two tokens' scores are that close. The portable path and the max rule
/// aggregate per weight (attention_rows' arithmetic).
[[nodiscard]] std::vector<double> accumulated_full_attention(const HeadGroup& input,
                                                             GroupAggregation rule, int first_row,
                                                             int end_row);

/// Tensor ids of the policies' counter-based random streams (core/counter_rng.hpp), disjoint from
/// the workload generator's streams (those use ids < 2^51).
enum class PolicyStream : std::uint64_t { kRandomStep = 0x100, kRandomPrefill = 0x101, kNoise = 0x102 };

/// Tensor id of `stream` for (layer, KV head).
[[nodiscard]] inline std::uint64_t policy_stream(PolicyStream stream, int layer, int kv_head) {
  return (std::uint64_t(stream) << 48) | (std::uint64_t(std::uint32_t(layer) & 0xffffffu) << 24) |
         std::uint64_t(std::uint32_t(kv_head) & 0xffffffu);
}

/// Heavy and recent sizes from params-like values (see PolicyParams): recent when ≥ 0 and heavy
/// when ≥ 0 override the ratio split heavy = floor(ratio k), recent = k − heavy. Throws InputError
/// (source "policy") unless heavy, recent ≥ 0, heavy + recent ≤ k and heavy + recent ≥ 1.
struct HeavyRecent {
  int heavy = 0;
  int recent = 0;
};
[[nodiscard]] HeavyRecent split_budget(int budget, double heavy_ratio, int heavy, int recent,
                                       const char* policy);

}  // namespace subevict::greedy::policies
