// Tests greedy/functions/set_function.hpp through every submodular family: incremental gains after any
// sequence of adds and removes equal scratch differences, the checked debug mode catches a broken
// state, and the NVI preconditions are enforced.
#include "greedy/functions/set_function.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <stdexcept>

#include "core/tolerance.hpp"
#include "greedy/functions/modular.hpp"
#include "tests/greedy/random_instances.hpp"

namespace subevict::greedy {
namespace {

using testing::Family;

RC_GTEST_PROP(SetFunction, IncrementalGainsMatchScratchAfterAddsAndRemoves, ()) {
  const auto f = testing::random_submodular(8);
  testing::check_incremental_gains(*f, Tol<double>::kValue);
}

RC_GTEST_PROP(SetFunction, EvaluateIncrementallyMatchesEvaluate, ()) {
  const auto f = testing::random_submodular(8);
  const auto keep =
      *rc::gen::container<std::vector<bool>>(f->ground_size(), rc::gen::arbitrary<bool>());
  std::vector<Element> set;
  for (Element e = f->ground_size(); e-- > 0;) {  // descending: the order must not matter
    if (keep[e]) set.push_back(e);
  }
  const double scratch = f->evaluate(set);
  RC_ASSERT(near(evaluate_incrementally(*f, set), scratch, Tol<double>::kValue));
}

/// A state whose value drifts after a remove: what the debug mode exists to catch.
class DriftingModular final : public SetFunction {
 public:
  std::size_t ground_size() const override { return 3; }
  double evaluate(std::span<const Element> set) const override { return double(set.size()); }
  std::unique_ptr<SetState> empty_state() const override {
    class State final : public SetState {
     public:
      State() : SetState(3) {}
      double value() const override { return value_; }
      std::unique_ptr<SetState> clone() const override { return std::make_unique<State>(*this); }

     protected:
      double on_gain(Element) const override { return 1.0; }
      void on_add(Element) override { value_ += 1.0; }
      void on_remove(Element) override { value_ -= 0.5; }  // the bug

     private:
      double value_ = 0;
    };
    return std::make_unique<State>();
  }
  std::string name() const override { return "drifting"; }
};

TEST(CheckedState, CatchesADriftingIncrementalValue) {
  const DriftingModular f;
  auto state = checked_state(f, f.empty_state());
  state->add(0);
  state->add(1);
  EXPECT_THROW(state->remove(0), std::logic_error);
}

TEST(SetState, RejectsOutOfRangeRepeatedAndAbsentElements) {
  const Modular f({1.0, 2.0});
  auto state = f.empty_state();
  EXPECT_THROW(state->add(2), std::invalid_argument);
  EXPECT_THROW((void)state->gain(5), std::invalid_argument);
  state->add(1);
  EXPECT_THROW(state->add(1), std::invalid_argument);
  EXPECT_THROW(state->remove(0), std::invalid_argument);
  EXPECT_EQ(state->gain(1), 0.0);  // members gain nothing
}

}  // namespace
}  // namespace subevict::greedy
