#pragma once
/// \file
/// The learned policy (docs/learned_policy.md): `learned:model=FILE`, a ranking model trained on
/// the exact optimum's eviction decisions (scripts/learn_policy.py) and read from a model file
/// (learned_model.hpp).

#include <Eigen/Core>
#include <memory>
#include <string>
#include <vector>

#include "greedy/eviction/policies/learned_model.hpp"
#include "greedy/eviction/policies/online_features.hpp"
#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy::policies {

/// Rule: at every step the online features of G_i (with the model's feature options) go through the
/// net that serves the group's layer; once full, evict the member with the lowest keep score (ties:
/// lowest token). Prefill: the features of the prompt's steps 0..P−1 (full attention), then keep
/// the k highest scores at step P−1. Per step: O(|G_i| d) for the features plus O(|G_i| · Σ layer
/// sizes) for the net, computed only at full steps and at the prefill.
class LearnedPolicy final : public RankedPolicy<LearnedPolicy> {
 public:
  /// `model` is shared (read only) by every instance made from one spec.
  explicit LearnedPolicy(std::shared_ptr<const LearnedModel> model)
      : model_(std::move(model)), features_(model_->feature_options()) {}
  [[nodiscard]] std::string name() const override { return "learned"; }

  // The rule (RankedPolicy hooks).
  /// Throws InputError(model file, "nets", ...) when no net serves the group's layer.
  void on_reset();
  void on_prefill();
  void observe(const StepView& view);
  void on_copy(const HeadGroup& input) { features_.rebind(input); }
  [[nodiscard]] double key(int, Token t) const { return keys_[std::size_t(t)]; }

 private:
  /// keys_[t] = the net's score of members[e] for every row e of the features.
  void score_members();

  std::shared_ptr<const LearnedModel> model_;
  const ModelNet* net_ = nullptr;
  OnlineFeatures features_;
  std::vector<double> keys_;  // the last keep score, by token
  Eigen::VectorXd scores_;
  ScoreScratch scratch_;
};

}  // namespace subevict::greedy::policies
