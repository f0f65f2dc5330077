#include "greedy/eviction/policies/learned.hpp"

#include "core/input_error.hpp"

namespace subevict::greedy::policies {

void LearnedPolicy::on_reset() {
  const int layer = context().input->layer;
  net_ = model_->net_for(layer);
  if (net_ == nullptr) {
    throw InputError(model_->source(), "nets",
                     "a net for model layer " + std::to_string(layer) + " (or a default net)",
                     "none");
  }
  features_.reset(context());
  scratch_.reset();
  keys_.assign(std::size_t(context().tokens), 0.0);
}

void LearnedPolicy::on_prefill() {
  features_.observe_prompt();
  score_members();
}

void LearnedPolicy::observe(const StepView& view) {
  features_.observe(view);
  if (view.full) score_members();
}

void LearnedPolicy::score_members() {
  model_->scores(*net_, features_.features(), features_.members(), scores_, scratch_);
  const auto members = features_.members();
  if (keys_.size() < std::size_t(context().input->tokens()))
    keys_.resize(std::size_t(context().input->tokens()), 0.0);
  for (std::size_t e = 0; e < members.size(); ++e)
    keys_[std::size_t(members[e])] = scores_(Eigen::Index(e));
}

}  // namespace subevict::greedy::policies
