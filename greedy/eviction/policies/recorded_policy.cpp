#include "greedy/eviction/policies/recorded_policy.hpp"

#include <utility>

#include "core/input_error.hpp"

namespace subevict::greedy {

RecordedPolicy::RecordedPolicy(std::string label, std::vector<int> last_step, std::string source)
    : label_(std::move(label)), source_(std::move(source)), last_step_(std::move(last_step)) {}

void RecordedPolicy::reset(const PolicyContext& context) {
  if (context.tokens != int(last_step_.size())) {
    throw InputError(source_, "tokens", "a record of n = " + std::to_string(context.tokens) + " tokens (the run's)",
                     std::to_string(last_step_.size()) + " tokens");
  }
  const int window = context.input != nullptr ? context.input->window : 0;
  // An exact admission returns the schedule unchanged but for the window's end of every stay.
  schedule_ = admit_last_step(last_step_, context.budget, context.prefill, ScheduleAdmission::kExact, source_,
                              window).last_step;
  prefill_ = context.prefill > context.budget ? context.prefill : 0;
  evicted_at_step_.assign(schedule_.size(), kNoEviction);
  for (std::size_t j = 0; j < schedule_.size(); ++j) {
    const int step = schedule_[j] + 1;
    const bool left_window = window > 0 && step == int(j) + window - 1;  // not an eviction
    if (step < int(schedule_.size()) && step >= prefill_ && !left_window) {
      evicted_at_step_[std::size_t(step)] = Token(j);
    }
  }
}

std::vector<Token> RecordedPolicy::prefill() {
  std::vector<Token> kept;
  for (int j = 0; j < prefill_; ++j) {
    if (schedule_[std::size_t(j)] >= prefill_ - 1) kept.push_back(j);
  }
  return kept;
}

Token RecordedPolicy::step(const StepView& view) {
  // Returned whether or not the cache is full: the simulator's contract check is the judge.
  return evicted_at_step_[std::size_t(view.step)];
}

}  // namespace subevict::greedy
