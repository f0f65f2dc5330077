// The monotone queue of the budget curve's Dijkstras (radix_heap.hpp) against a sorted multiset:
// every pop returns a smallest key, whatever mix of pushes and pops, keys near and far apart.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <set>
#include <stdexcept>

#include "greedy/eviction/optimum/radix_heap.hpp"

namespace subevict::greedy {
namespace {

struct Item {
  std::uint64_t key;
  int id;
};

RC_GTEST_PROP(RadixHeap, PopsASmallestKeyOfWhatWasPushed, ()) {
  RadixHeap<Item> queue;
  std::multiset<std::uint64_t> reference;
  const int operations = *rc::gen::inRange(1, 400);
  // Small steps tie often; large ones reach the high buckets (keys up to about 2^61).
  const int shift = *rc::gen::inRange(0, 51);
  for (int op = 0; op < operations; ++op) {
    if (!reference.empty() && *rc::gen::inRange(0, 3) == 0) {
      const Item top = queue.pop();
      RC_ASSERT(top.key == *reference.begin());
      RC_ASSERT(queue.last() == top.key);
      reference.erase(reference.begin());
    } else {
      const std::uint64_t step = std::uint64_t(*rc::gen::inRange(0, 8)) << shift;
      const std::uint64_t key = queue.last() + step + (*rc::gen::inRange(0, 2) == 0 ? 0 : *rc::gen::inRange(0, 5));
      queue.push(Item{key, op});
      reference.insert(key);
    }
    RC_ASSERT(queue.size() == reference.size());
  }
  while (!reference.empty()) {
    RC_ASSERT(queue.pop().key == *reference.begin());
    reference.erase(reference.begin());
  }
  RC_ASSERT(queue.empty());
}

TEST(RadixHeap, RefusesAKeyBelowTheLastPoppedAndStartsOverAfterClear) {
  RadixHeap<Item> queue;
  queue.push(Item{10, 0});
  queue.push(Item{12, 1});
  EXPECT_EQ(queue.pop().key, 10u);
  EXPECT_THROW(queue.push(Item{9, 2}), std::logic_error);
  queue.push(Item{10, 3});  // equal to the last popped: allowed
  EXPECT_EQ(queue.pop().id, 3);
  queue.clear();
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.last(), 0u);
  queue.push(Item{1, 4});
  EXPECT_EQ(queue.pop().key, 1u);
  // The top bucket: keys that differ from the last popped first in bit 63.
  const std::uint64_t high = std::uint64_t{1} << 63;
  queue.push(Item{high + 5, 5});
  queue.push(Item{high, 6});
  queue.push(Item{2, 7});
  EXPECT_EQ(queue.pop().id, 7);
  EXPECT_EQ(queue.pop().id, 6);
  EXPECT_EQ(queue.pop().id, 5);
}

}  // namespace
}  // namespace subevict::greedy
