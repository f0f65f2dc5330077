// AttentionWindow (greedy/eviction/policies/attention_window.hpp): its window sums equal a direct
// sum over the recorded rows, oldest first, bit for bit, while members arrive and leave, on
// both CPU paths.

#include "greedy/eviction/policies/attention_window.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <vector>

#include "tests/core/scoped_cpu_path.hpp"

namespace subevict::greedy::policies {
namespace {

/// One recorded step: per token, its weight for each head.
using Step = std::map<Token, std::vector<double>>;

RC_GTEST_PROP(AttentionWindow, SumsEqualTheDirectSumOverTheWindowsRows, ()) {
  const int n = *rc::gen::inRange(1, 60);
  const int window = *rc::gen::inRange(1, 9);
  const int heads = *rc::gen::inRange(1, 4);
  const int first = *rc::gen::inRange(0, 5);
  const testing_support::ScopedCpuPath path(
      *rc::gen::elementOf(testing_support::runnable_cpu_paths()));
  AttentionWindow history;
  history.reset(window, heads, n + first, *rc::gen::inRange(1, 20));  // often too few: grows
  std::vector<Step> steps;                                            // steps[s − first]
  std::vector<Token> members;
  std::vector<Token> unseen;  // tokens before the first step, each may arrive once
  for (Token t = 0; t < first; ++t) unseen.push_back(t);
  for (int step = first; step < first + n; ++step) {
    // Some members leave for good, the new token (and sometimes an older unseen one) arrives.
    std::vector<Token> kept;
    for (Token t : members) {
      if (*rc::gen::inRange(0, 4) != 0) kept.push_back(t);
    }
    members = kept;
    if (!unseen.empty() && *rc::gen::inRange(0, 3) == 0) {  // an older token, never seen before
      members.push_back(unseen.back());
      unseen.pop_back();
    }
    members.push_back(step);
    if (*rc::gen::arbitrary<bool>()) std::reverse(members.begin(), members.end());  // any order
    std::vector<double> weights(std::size_t(heads) * members.size());
    for (double& w : weights) w = *rc::gen::element(0.0, 0.1, 0.3, 1.0 / 3.0, 0.7, 1e-300);
    Step row;
    for (std::size_t e = 0; e < members.size(); ++e) {
      for (int h = 0; h < heads; ++h)
        row[members[e]].push_back(weights[std::size_t(h) * members.size() + e]);
    }
    steps.push_back(row);
    history.record(step, members, weights);
    std::vector<Token> ascending = members;
    std::sort(ascending.begin(), ascending.end());
    RC_ASSERT(std::vector<Token>(history.members().begin(), history.members().end()) == ascending);
    std::vector<Token> asked = members;
    std::reverse(asked.begin(), asked.end());
    std::vector<std::vector<double>> sums;
    history.sums(asked, sums);
    RC_ASSERT(sums.size() == std::size_t(heads));
    for (int h = 0; h < heads; ++h) {
      for (std::size_t c = 0; c < asked.size(); ++c) {
        double direct = 0.0;
        for (int s = std::max(first, step - window + 1); s <= step; ++s) {
          const Step& past = steps[std::size_t(s - first)];
          const auto it = past.find(asked[c]);
          if (it != past.end()) direct += it->second[std::size_t(h)];
        }
        RC_ASSERT(sums[std::size_t(h)][c] == direct);
      }
    }
  }
}

TEST(AttentionWindow, RefusesOutOfOrderStepsRepeatsAndNonMembers) {
  AttentionWindow history;
  history.reset(2, 1, 10, 2);
  const std::vector<Token> two{0, 1};
  history.record(3, two, std::vector<double>{0.5, 0.5});
  EXPECT_THROW(history.record(5, two, std::vector<double>{0.5, 0.5}), std::logic_error);
  EXPECT_THROW(history.record(4, std::vector<Token>{2, 2}, std::vector<double>{0.5, 0.5}),
               std::logic_error);
  EXPECT_THROW(history.record(4, two, std::vector<double>{0.5}), std::logic_error);
  history.record(4, std::vector<Token>{1, 4}, std::vector<double>{0.25, 0.75});
  std::vector<std::vector<double>> sums;
  EXPECT_THROW(history.sums(std::vector<Token>{0}, sums), std::logic_error);  // 0 left at step 4
  history.sums(std::vector<Token>{4, 1}, sums);
  EXPECT_EQ(sums[0], (std::vector<double>{0.75, 0.75}));
}

}  // namespace
}  // namespace subevict::greedy::policies
