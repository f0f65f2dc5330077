#pragma once
/// \file
/// The per-head attention of the last w steps on each current member, stored by member slot so
/// that the window sums of every member are a few contiguous vector additions per step (snapkv's
/// streaming rule).

#include <span>
#include <vector>

#include "greedy/eviction/policies/eviction_policy.hpp"

namespace subevict::greedy::policies {

/// Records, for each query head h and each of the last w recorded steps s, the attention a^h_{s,t}
/// of every member t of that step; sums(...) gives Σ_{s = max(0, i − w + 1)}^{i} a^h_{s,t} in
/// ascending s from 0.0 (i the last recorded step; a step where t was not a member counts 0), the
/// summation order of a direct sum over the window's rows, so the sums are exactly those of a
/// recomputation. Memory O(w g m) doubles for m members at once; record O(g m) plus O(w g) per new
/// member, sums O(w g m) (AVX2 on that path: the same additions in the same order).
class AttentionWindow {
 public:
  /// Starts empty: window w >= 1, g >= 1 query heads, tokens 0..n − 1 (n >= 1), room for
  /// `members` >= 1 members at once (more grow the store).
  void reset(int window, int heads, int tokens, int members);

  /// Step `step`'s attention: `tokens` its members (any order), head h's weights at
  /// [h |tokens|, (h + 1) |tokens|) of `head_attention`. Tokens recorded at the last step and
  /// absent here leave for good; a token seen for the first time reads 0 at the earlier steps.
  /// Preconditions (std::logic_error otherwise): step = the last recorded step + 1 (any step
  /// >= 0 first), tokens in [0, n) without repeats, |head_attention| = g |tokens|.
  void record(int step, std::span<const Token> tokens, std::span<const double> head_attention);

  /// The members of the last recorded step, ascending (kept across steps: O(m) per record).
  [[nodiscard]] std::span<const Token> members() const { return ascending_; }

  /// out[h][c] = the window sum of head h for tokens[c], each a member of the last recorded step
  /// (std::logic_error otherwise); out is resized to g x |tokens|.
  void sums(std::span<const Token> tokens, std::vector<std::vector<double>>& out);

 private:
  [[nodiscard]] double* row(int step, int head) {
    return ring_.data() + (std::size_t(step % window_) * std::size_t(heads_) + std::size_t(head)) *
                              std::size_t(slots_);
  }
  int slot_for(Token t);
  void grow(int least);  ///< room for at least `least` slots, their layout kept

  int window_ = 1, heads_ = 1, slots_ = 0;
  int last_ = -1;                    ///< the last recorded step (−1: none)
  std::vector<int> slot_of_;         ///< per token: its slot, −1 when not a member
  std::vector<int> marked_at_;       ///< per token: the last step it was recorded at
  std::vector<Token> token_in_;      ///< per slot: its token, −1 when free
  std::vector<int> free_;            ///< free slots
  std::vector<Token> ascending_;     ///< the members, ascending
  std::vector<double> ring_;         ///< [step mod w][head][slot]
  std::vector<double> sum_;          ///< sums' scratch, one value per slot
  std::vector<const double*> rows_;  ///< sums' scratch: one head's rows, oldest first
};

}  // namespace subevict::greedy::policies
