#include "greedy/functions/set_function.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace subevict::greedy {

SetState::SetState(std::size_t ground_size) : in_set_(ground_size, 0) {}

double SetState::gain(Element e) const {
  if (e >= in_set_.size()) {
    throw std::invalid_argument("SetState::gain: element " + std::to_string(e) +
                                " is outside the ground set of size " +
                                std::to_string(in_set_.size()));
  }
  return in_set_[e] != 0 ? 0.0 : on_gain(e);
}

void SetState::add(Element e) {
  if (e >= in_set_.size() || in_set_[e] != 0) {
    throw std::invalid_argument("SetState::add: element " + std::to_string(e) +
                                (e >= in_set_.size() ? " is outside the ground set of size " +
                                                           std::to_string(in_set_.size())
                                                     : std::string(" is already in the set")));
  }
  on_add(e);
  in_set_[e] = 1;
  members_.push_back(e);
  on_changed();
}

void SetState::remove(Element e) {
  if (!contains(e)) {
    throw std::invalid_argument("SetState::remove: element " + std::to_string(e) +
                                " is not in the set");
  }
  in_set_[e] = 0;
  members_.erase(std::find(members_.begin(), members_.end(), e));
  on_remove(e);
  on_changed();
}

namespace {

/// The debug-mode wrapper: forwards to the wrapped state and compares with a scratch evaluation.
class CheckedState final : public SetState {
 public:
  CheckedState(const SetFunction& function, std::unique_ptr<SetState> inner)
      : SetState(inner->ground_size()), function_(&function), inner_(std::move(inner)) {
    for (Element e : inner_->members()) {
      add(e);  // mirror membership (the inner state already holds e); compares each prefix
    }
    compare("construction");
  }

  double value() const override { return inner_->value(); }

  std::unique_ptr<SetState> clone() const override {
    return std::make_unique<CheckedState>(*function_, inner_->clone());
  }

 protected:
  double on_gain(Element e) const override {
    const double incremental = inner_->gain(e);
    std::vector<Element> with = members();
    with.push_back(e);
    const double scratch = function_->evaluate(with) - function_->evaluate(members());
    check(incremental, scratch, "gain(" + std::to_string(e) + ")");
    return incremental;
  }
  void on_add(Element e) override {
    if (!inner_->contains(e)) {  // false only while mirroring the inner state's members
      inner_->add(e);
    }
    last_ = "add(" + std::to_string(e) + ")";
  }
  void on_remove(Element e) override {
    inner_->remove(e);
    last_ = "remove(" + std::to_string(e) + ")";
  }
  void on_changed() override { compare(last_); }

 private:
  void compare(const std::string& operation) const {
    check(inner_->value(), function_->evaluate(inner_->members()), operation);
  }
  void check(double incremental, double scratch, const std::string& operation) const {
    if (std::fabs(incremental - scratch) > kCheckedStateTolerance * std::max(1.0, std::fabs(scratch))) {
      std::ostringstream message;
      message.precision(17);
      message << "checked state of " << function_->name() << ": after " << operation
              << " the incremental value is " << incremental << " but a scratch evaluation gives "
              << scratch;
      throw std::logic_error(message.str());
    }
  }

  const SetFunction* function_;
  std::unique_ptr<SetState> inner_;
  std::string last_ = "construction";
};

}  // namespace

std::unique_ptr<SetState> checked_state(const SetFunction& function,
                                        std::unique_ptr<SetState> state) {
  return std::make_unique<CheckedState>(function, std::move(state));
}

double evaluate_incrementally(const SetFunction& function, std::span<const Element> set) {
  auto state = function.empty_state();
  for (Element e : set) {
    state->add(e);
  }
  return state->value();
}

}  // namespace subevict::greedy
