#include "greedy/eviction/process/streamed_gains.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/input_error.hpp"

namespace subevict::greedy {

void StreamedGains::prepare(const HeadGroup& group) {
  group.validate();
  if (threads_ < 1) throw InputError("streamed gains", "threads", "an integer >= 1", std::to_string(threads_));
  if (group.window > 0) {
    throw InputError("streamed gains", "layer " + std::to_string(group.layer),
                     "global attention (the streamed tiles are causal only: a sliding-window layer's optimum "
                     "runs on stored gains, up to HeadEvaluationOptions::stored_gains_tokens)",
                     "a window of " + std::to_string(group.window) + " keys at " + std::to_string(group.tokens()) +
                         " tokens");
  }
  n_ = group.tokens();
  heads_.reserve(group.q.size());
}

StreamedGains::StreamedGains(const HeadGroup& group, int threads, CpuPath path) : threads_(threads) {
  prepare(group);
  for (const ConstHeadMap& q : group.q) heads_.emplace_back(q, group.k, group.scale, threads, path);
  for (int j = 0; j < n_; ++j) diagonal_sum_ += entry(j, j);
}

StreamedGains::StreamedGains(const HeadGroup& group, const std::vector<ExactRows>& exact, int threads, CpuPath path)
    : threads_(threads) {
  prepare(group);
  if (exact.size() != group.q.size()) {
    throw std::invalid_argument("StreamedGains: expected the exact rows of " + std::to_string(group.q.size()) +
                                " query heads, got " + std::to_string(exact.size()));
  }
  for (std::size_t h = 0; h < exact.size(); ++h) {
    heads_.emplace_back(group.q[h], group.k, group.scale, exact[h].log_normalizer, path);
  }
  for (int j = 0; j < n_; ++j) diagonal_sum_ += entry(j, j);
}

void StreamedGains::for_each_tile(const std::function<void(int, const GainTile&)>& visit) const {
  ++passes_;
  constexpr int kEntries = GainTile::kRows * GainTile::kKeys;
  const int key_chunks = (n_ + GainTile::kKeys - 1) / GainTile::kKeys;
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
#pragma omp parallel num_threads(threads_)
  {
    // The team may be smaller than asked (a nested region runs on one thread): deal by its size.
    const int thread = omp_get_thread_num(), team = omp_get_num_threads();
    std::vector<double> scratch, sum(kEntries), head(kEntries);
    for (int chunk = thread; chunk < key_chunks; chunk += team) {
      if (failed.load()) break;
      const int first_key = chunk * GainTile::kKeys;
      for (int first_row = first_key / GainTile::kRows * GainTile::kRows; first_row < n_ && !failed.load();
           first_row += GainTile::kRows) {
        if (!row_blocks_.empty() && !row_blocks_[std::size_t(first_row / GainTile::kRows)]) {
          std::fill(sum.begin(), sum.end(), 0.0);  // no row of R in the block: nothing to compute
        } else {
          heads_.front().tile(first_row, first_key, scratch, sum.data());
          for (std::size_t h = 1; h < heads_.size(); ++h) {
            heads_[h].tile(first_row, first_key, scratch, head.data());
            for (int e = 0; e < kEntries; ++e) sum[e] += head[e];
          }
        }
        if (!rows_.empty()) {
          for (int r = 0; r < GainTile::kRows && first_row + r < n_; ++r) {
            if (rows_[std::size_t(first_row + r)]) continue;
            for (int c = 0; c < GainTile::kKeys; ++c) sum[std::size_t(c) * GainTile::kRows + r] = 0.0;
          }
        }
        try {
          visit(thread, GainTile{first_row, first_key, sum.data()});
        } catch (...) {
#pragma omp critical(streamed_gains_failure)
          if (!failure) failure = std::current_exception();
          failed.store(true);
        }
      }
    }
  }
  if (failure) std::rethrow_exception(failure);
}

void StreamedGains::restrict_to_rows(std::vector<char> mask) {
  if (int(mask.size()) != n_) {
    throw std::invalid_argument("StreamedGains::restrict_to_rows: the mask has " + std::to_string(mask.size()) +
                                " entries for " + std::to_string(n_) + " rows");
  }
  rows_ = std::move(mask);
  row_blocks_.assign(std::size_t((n_ + GainTile::kRows - 1) / GainTile::kRows), 0);
  for (int i = 0; i < n_; ++i) row_blocks_[std::size_t(i / GainTile::kRows)] |= rows_[std::size_t(i)];
  diagonal_sum_ = 0.0;
  for (int j = 0; j < n_; ++j) diagonal_sum_ += entry(j, j);
}

double StreamedGains::entry(int i, int j) const {
  if (!rows_.empty() && !rows_[std::size_t(i)]) return 0.0;
  double sum = 0.0;
  for (const CausalWeightTiles& head : heads_) sum += head.weight(i, j);
  return sum;
}

}  // namespace subevict::greedy
