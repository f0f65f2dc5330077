#include "greedy/optimizers/lazy_greedy.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "greedy/optimizers/naive_greedy.hpp"
#include "greedy/optimizers/online_bound.hpp"

namespace subevict::greedy {

namespace {

struct Entry {
  double gain;  ///< Δ(element | S_stamp), an upper bound on the current gain
  Element element;
  std::size_t stamp;  ///< |S| when the gain was evaluated
};

/// Heap order: a before b (a "less" than b) when b has the larger gain, or equal gain and the
/// lower index; std::*_heap keeps the "largest" on top.
bool heap_less(const Entry& a, const Entry& b) {
  return a.gain < b.gain || (a.gain == b.gain && a.element > b.element);
}

double heap_bound(double value, const std::vector<Entry>& heap, std::size_t k,
                  std::vector<double>& scratch) {
  scratch.clear();
  for (const Entry& entry : heap) {
    scratch.push_back(entry.gain);
  }
  return online_bound(value, scratch, k);
}

}  // namespace

Selection lazy_greedy(const SetFunction& f, const LazyGreedyOptions& options) {
  check_cardinality(f, options.k, "lazy_greedy");
  const auto start = std::chrono::steady_clock::now();
  const std::size_t n = f.ground_size();
  const bool certify = f.monotone_submodular();
  Selection result;
  auto state = f.empty_state();
  std::vector<Entry> heap;
  heap.reserve(n);
  for (Element e = 0; e < n; ++e) {
    heap.push_back({state->gain(e), e, 0});
  }
  result.oracle_calls = n;
  std::make_heap(heap.begin(), heap.end(), heap_less);
  std::vector<double> scratch;
  scratch.reserve(n);
  if (certify) {
    result.upper_bound = heap_bound(state->value(), heap, options.k, scratch);
  }
  for (std::size_t t = 0; t < options.k && !heap.empty(); ++t) {
    while (heap.front().stamp != t) {
      std::pop_heap(heap.begin(), heap.end(), heap_less);
      Entry& top = heap.back();
      top.gain = state->gain(top.element);
      top.stamp = t;
      ++result.oracle_calls;
      std::push_heap(heap.begin(), heap.end(), heap_less);
    }
    if (options.stop_at_nonpositive_gain && heap.front().gain <= 0) {
      break;
    }
    std::pop_heap(heap.begin(), heap.end(), heap_less);
    const Element best = heap.back().element;
    heap.pop_back();
    state->add(best);
    result.set.push_back(best);
    if (certify) {
      result.upper_bound =
          std::min(result.upper_bound, heap_bound(state->value(), heap, options.k, scratch));
    }
  }
  result.value = state->value();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace subevict::greedy
