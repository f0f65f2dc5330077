// Tests core/index_set.hpp: the parser against a naive expansion of random item lists, the round
// trip through format_index_set, and every rejection at and around the bound.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/index_set.hpp"
#include "core/input_error.hpp"

namespace subevict {
namespace {

const IndexSetNames kLayers{"simulate", "--layers", "layers"};

/// The message of the InputError that parse_index_set throws for `text` (fails when none).
std::string error_of(const std::string& text, int bound) {
  try {
    (void)parse_index_set(text, bound, kLayers);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for \"" << text << "\" with bound " << bound;
  return "";
}

TEST(IndexSet, ListsAndRangesExpandSorted) {
  EXPECT_EQ(parse_index_set("0,14,20-23", 30, kLayers), (std::vector<int>{0, 14, 20, 21, 22, 23}));
  EXPECT_EQ(parse_index_set("5,2", 30, kLayers), (std::vector<int>{2, 5}));
  EXPECT_EQ(parse_index_set(" 3 , 7-7 ", 30, kLayers), (std::vector<int>{3, 7}));
  EXPECT_EQ(parse_index_set("all", 3, kLayers), (std::vector<int>{0, 1, 2}));
  // A single number is that index alone, not a count.
  EXPECT_EQ(parse_index_set("2", 30, kLayers), (std::vector<int>{2}));
}

TEST(IndexSet, BoundsAreInclusiveBelowAndExclusiveAbove) {
  EXPECT_EQ(parse_index_set("0", 1, kLayers), (std::vector<int>{0}));
  EXPECT_EQ(parse_index_set("29", 30, kLayers), (std::vector<int>{29}));
  EXPECT_EQ(parse_index_set("0-29", 30, kLayers).size(), 30u);
  const std::string above = error_of("30", 30);
  EXPECT_NE(above.find("simulate: --layers"), std::string::npos) << above;
  EXPECT_NE(above.find("layers 0-29"), std::string::npos) << above;
  EXPECT_NE(above.find("got 30 (out of range)"), std::string::npos) << above;
  const std::string range = error_of("28-30", 30);
  EXPECT_NE(range.find("30 (in 28-30, out of range)"), std::string::npos) << range;
  EXPECT_NE(error_of("0", 0).find("no layers"), std::string::npos);
  EXPECT_NE(error_of("99999999999999999999", 30).find("out of range"), std::string::npos);
}

TEST(IndexSet, RejectsDuplicatesReversedRangesEmptyItemsAndNonIntegers) {
  EXPECT_NE(error_of("0,0", 4).find("0 (listed twice in \"0,0\")"), std::string::npos);
  EXPECT_NE(error_of("3,1-4", 8).find("3 (in 1-4, listed twice in \"3,1-4\")"), std::string::npos);
  EXPECT_NE(error_of("4-2", 8).find("4-2 (reversed)"), std::string::npos);
  EXPECT_NE(error_of("1,,2", 8).find("empty item"), std::string::npos);
  EXPECT_NE(error_of("", 8).find("empty value"), std::string::npos);
  EXPECT_NE(error_of("1,", 8).find("empty item"), std::string::npos);
  EXPECT_NE(error_of("all,1", 8).find("got all"), std::string::npos);
  for (const char* bad : {"1.5", "-1", "+1", "a", "1-", "-", "1-2-3", "0x1"}) {
    EXPECT_NE(error_of(bad, 8).find(std::string("got ") + bad), std::string::npos) << bad;
  }
}

/// Random items (indices and ranges, possibly out of bound, overlapping or reversed) and the
/// naive reading of them: the union when valid, else no value.
RC_GTEST_PROP(IndexSet, AgreesWithANaiveExpansion, ()) {
  const int bound = *rc::gen::inRange(0, 40);
  const int items = *rc::gen::inRange(1, 6);
  std::string text;
  std::multiset<int> covered;
  bool valid = true;
  for (int i = 0; i < items; ++i) {
    const int a = *rc::gen::inRange(0, 45);
    const bool is_range = *rc::gen::arbitrary<bool>();
    const int b = is_range ? *rc::gen::inRange(0, 45) : a;
    if (i > 0) text += ',';
    text += std::to_string(a);
    if (is_range) text += '-' + std::to_string(b);
    if (a > b) valid = false;
    for (int x = a; x <= b; ++x) {
      if (x >= bound) valid = false;
      covered.insert(x);
    }
  }
  for (int x : covered)
    if (covered.count(x) > 1) valid = false;
  if (valid) {
    const std::vector<int> expected(covered.begin(), covered.end());
    RC_ASSERT(parse_index_set(text, bound, kLayers) == expected);
  } else {
    RC_ASSERT_THROWS_AS((void)parse_index_set(text, bound, kLayers), InputError);
  }
}

RC_GTEST_PROP(IndexSet, FormatRoundTripsEverySubset, ()) {
  const int bound = *rc::gen::inRange(1, 64);
  std::vector<int> subset;
  for (int i = 0; i < bound; ++i)
    if (*rc::gen::arbitrary<bool>()) subset.push_back(i);
  RC_PRE(!subset.empty());
  const std::string text = format_index_set(subset);
  RC_ASSERT(parse_index_set(text, bound, kLayers) == subset);
  // Shortest form: a run of consecutive indices is one item, so no item starts right after the
  // previous one ends.
  int previous_last = -2;
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const std::size_t dash = item.find('-');
    const int first = std::stoi(item.substr(0, dash));
    RC_ASSERT(first > previous_last + 1);
    previous_last = dash == std::string::npos ? first : std::stoi(item.substr(dash + 1));
    start = comma + 1;
  }
}

TEST(IndexSet, FormatWritesRunsAsRanges) {
  EXPECT_EQ(format_index_set({0, 14, 20, 21, 22}), "0,14,20-22");
  EXPECT_EQ(format_index_set({3}), "3");
  EXPECT_EQ(format_index_set({4, 5}), "4-5");
  EXPECT_EQ(format_index_set({}), "");
}

}  // namespace
}  // namespace subevict
