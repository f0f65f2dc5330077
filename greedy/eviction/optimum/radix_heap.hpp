#pragma once
/// \file
/// A monotone priority queue on unsigned 64-bit keys (a radix heap): what a Dijkstra on
/// non-negative integer reduced costs pops its nodes from. Entry e sits in bucket
/// bit_width(key(e) ^ last), last the key popped last, so every entry of bucket i > 0 differs from
/// last first in bit i − 1 and every bucket below holds smaller keys; a pop that finds bucket 0
/// empty moves the first non-empty bucket down around its smallest key. Push O(1), pop amortized
/// O(64) over an entry's life; the binary heap it replaces paid log2(size) moves of an entry per
/// push and per pop.

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace subevict::greedy {

/// Entry: any copyable type with a member `std::uint64_t key`. Entries of equal key pop in an order
/// fixed by the sequence of pushes and pops (deterministic, not first-in first-out).
template <class Entry>
class RadixHeap {
 public:
  [[nodiscard]] bool empty() const { return size_ == 0; }
  [[nodiscard]] std::size_t size() const { return size_; }
  /// The key popped last (0 before the first pop): every push must be at least this.
  [[nodiscard]] std::uint64_t last() const { return last_; }

  /// Adds an entry. Throws std::logic_error if its key is below last() (the queue is monotone).
  void push(const Entry& entry) {
    if (entry.key < last_) throw std::logic_error("RadixHeap: a key below the last one popped");
    buckets_[bucket_of(entry.key)].push_back(entry);
    ++size_;
  }

  /// Removes and returns an entry of the smallest key. Precondition: !empty().
  Entry pop() {
    if (buckets_[0].empty()) {
      std::size_t i = 1;
      while (buckets_[i].empty()) ++i;
      std::vector<Entry>& from = buckets_[i];
      std::uint64_t smallest = from.front().key;
      for (const Entry& e : from) smallest = std::min(smallest, e.key);
      last_ = smallest;
      for (const Entry& e : from) buckets_[bucket_of(e.key)].push_back(e);  // all land below i
      from.clear();
    }
    Entry top = buckets_[0].back();
    buckets_[0].pop_back();
    --size_;
    return top;
  }

  /// Removes every entry and resets last() to 0 (the buckets keep their memory).
  void clear() {
    for (std::vector<Entry>& b : buckets_) b.clear();
    size_ = 0;
    last_ = 0;
  }

 private:
  [[nodiscard]] std::size_t bucket_of(std::uint64_t key) const {
    return static_cast<std::size_t>(std::bit_width(key ^ last_));
  }

  std::array<std::vector<Entry>, 65> buckets_{};
  std::size_t size_ = 0;
  std::uint64_t last_ = 0;
};

}  // namespace subevict::greedy
