#pragma once
/// \file
/// Online per-token features of the members of G_i (docs/eviction.md, "Online features"): what a
/// learned eviction policy reads at step i, kept incrementally from the StepViews and the rows of
/// the tokens already arrived. Not a policy: a policy owns one, resets it at reset() and feeds it
/// every view (and, with a prefill, the prompt) before its choice. Tokens and steps are 0-based.

#include <Eigen/Core>
#include <array>
#include <deque>
#include <span>
#include <string_view>
#include <vector>

#include "greedy/eviction/policies/eviction_policy.hpp"

namespace subevict::greedy::policies {

/// The version of the feature set (names, order, definitions): a model file pins it. Any change to
/// a definition or to the order below takes a new version.
inline constexpr int kOnlineFeaturesVersion = 1;

/// The columns of OnlineFeatures::features(), in this order (docs/eviction.md states each).
enum class OnlineFeature : int {
  kAccumulated,  ///< acc_j = Σ_{s=j}^{i} ã_sj (h2o's score)
  kCurrent,      ///< ã_ij (tova's)
  kWindow,       ///< Σ_{s=max(j, i−w+1)}^{i} ã_sj
  kAge,          ///< i − j
  kPosition,     ///< j
  kSink,         ///< 1 when j < sinks, else 0
  kKeyNorm,      ///< ‖k_j‖₂
  kValueNorm,    ///< ‖v_j‖₂
  kKeyCosine,    ///< cos(k_j, Σ_{t≤i} k_t / ‖k_t‖), 0 when a norm is 0
  kTrend,        ///< e_j − acc_j / (i − j + 1), e_j the moving average of ã_sj at rate β
  kLayer,        ///< the group's layer
  kKvHead,       ///< the group's KV head
};

/// The number of features (columns).
inline constexpr int kOnlineFeatureCount = 12;
static_assert(int(OnlineFeature::kKvHead) + 1 == kOnlineFeatureCount);

/// The feature names in column order (snake_case, stable: a model file names its inputs by them).
[[nodiscard]] const std::array<std::string_view, kOnlineFeatureCount>& online_feature_names();

/// Whether a token's value of feature `f` stays the same at every step of a run (position, sink,
/// key and value norms, layer, KV head): a consumer may derive from it once per token.
[[nodiscard]] constexpr bool per_token_constant(OnlineFeature f) {
  switch (f) {
    case OnlineFeature::kPosition:
    case OnlineFeature::kSink:
    case OnlineFeature::kKeyNorm:
    case OnlineFeature::kValueNorm:
    case OnlineFeature::kLayer:
    case OnlineFeature::kKvHead:
      return true;
    default:
      return false;
  }
}

/// The parameters of the features.
struct OnlineFeatureOptions {
  int window = 32;            ///< w ≥ 1, the queries summed by kWindow
  int sinks = 4;              ///< s ≥ 0, tokens j < s are sinks (kSink)
  double trend_rate = 0.125;  ///< β in (0, 1], the rate of kTrend's moving average
};

/// The features of every member of G_i, kept incrementally. Cost per step: O(|G_i|) per
/// attention feature, O(|G_i−w|) to retire the query leaving the window (and O(w |G_i|) every w
/// steps to re-sum the window from its rows, which bounds its rounding to O(w) operations), O(d)
/// for the new token's rows and O(|G_i| d) for the cosines. Memory O(n) per feature plus the
/// window's last w rows, O(w k). The state of a token that leaves G (evicted, dropped by the
/// prefill rule or by a sliding window) is cleared at the first step it is missing from.
class OnlineFeatures {
 public:
  /// Throws InputError (source "features") unless w ≥ 1, s ≥ 0 and β in (0, 1].
  explicit OnlineFeatures(OnlineFeatureOptions options = {});

  /// Starts a run on `context` (its input stays valid for the run, as a policy's): every state
  /// empty, no members, the next step expected is 0.
  void reset(const PolicyContext& context);

  /// The same rows at another address (a copied policy's, EvictionPolicy::copy_onto): the state
  /// is kept, later steps read `input`.
  void rebind(const HeadGroup& input) { context_.input = &input; }

  /// The prompt's steps 0..P−1 (P = context.prefill ≥ 1) with full attention: step i sees
  /// G_i = {0..i} and the group-aggregated (context.aggregation) causal attention of query i (no
  /// sliding-window mask, as the prefill rules of policy_support.hpp read the prompt). Call it
  /// once, right after reset, in a policy's prefill(); afterwards the members are 0..P−1 ascending
  /// and the next step expected is P. O(g P² d) blocked as policy_support's prompt rules, plus
  /// O(P²) for the features. Throws std::logic_error when a step was already seen or P < 1.
  void observe_prompt();

  /// Step i = view.step: G_i = view.tokens with the attention view.attention. Call it at every
  /// streaming step (full or not) before the choice. Throws std::logic_error unless i is the step
  /// expected (0 or P after a prompt, then the last step + 1), the last token is i and every
  /// other token was a member at the last step (an evicted token never returns).
  void observe(const StepView& view);

  /// The features of the last observed step: row e for members()[e] (view.tokens' order), one
  /// column per OnlineFeature. Valid until the next observe or reset.
  [[nodiscard]] const Eigen::MatrixXd& features() const { return features_; }

  /// The tokens of the rows of features(): view.tokens of the last step (0..P−1 after the prompt).
  [[nodiscard]] std::span<const Token> members() const { return members_; }

  /// The options the features were built with.
  [[nodiscard]] const OnlineFeatureOptions& options() const { return options_; }

 private:
  /// One step's members and their aggregated attention (the window's history).
  struct Row {
    int step = 0;
    std::vector<Token> tokens;
    std::vector<double> attention;
  };
  void advance(int step, std::span<const Token> tokens, std::span<const double> attention);
  void arrive(Token t);
  void fill();
  /// The per-token states below (all indexed by token), to size or clear them together.
  std::array<std::vector<double>*, 6> per_token();

  OnlineFeatureOptions options_;
  PolicyContext context_;
  int next_step_ = 0;
  std::vector<Token> members_;
  std::vector<int> seen_at_;  ///< per token: the last step it was a member at, −1 otherwise
  std::vector<double> acc_, current_, window_, average_, key_norm_, value_norm_;
  Eigen::VectorXd unit_key_sum_;  ///< Σ_{t≤i} k_t / ‖k_t‖, ascending t
  /// The keys of the tokens arrived, in double (the cosines' dot products vectorize on them).
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> keys_;
  std::vector<double> dots_;  ///< fill's scratch: each member's key · unit_key_sum_
  std::deque<Row> rows_;      ///< the last w steps, oldest first
  Eigen::MatrixXd features_;
};

}  // namespace subevict::greedy::policies
