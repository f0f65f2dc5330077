#include "greedy/eviction/policies/attention_window.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/attention_avx2.hpp"
#include "core/cpu_path.hpp"

#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
#include <immintrin.h>
#endif

namespace subevict::greedy::policies {
namespace {

/// Slots come in blocks of this many (the AVX2 sums hold a block in four 4-wide registers).
constexpr int kSlotBlock = 16;

#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
/// sum[slot] = ((0 + rows[0][slot]) + rows[1][slot]) + ... for slot < slots (a multiple of
/// kSlotBlock): the portable path's additions, in the same order, four slots per instruction and
/// the block's sums kept in registers across the rows. Raw pointers, no Eigen. Precondition: a CPU
/// with AVX2.
__attribute__((target("avx2"))) void window_sums_avx2(const double* const* rows, int count,
                                                      int slots, double* sum) {
  for (int b = 0; b < slots; b += kSlotBlock) {
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    for (int r = 0; r < count; ++r) {
      const double* x = rows[r] + b;
      a0 = _mm256_add_pd(a0, _mm256_loadu_pd(x));
      a1 = _mm256_add_pd(a1, _mm256_loadu_pd(x + 4));
      a2 = _mm256_add_pd(a2, _mm256_loadu_pd(x + 8));
      a3 = _mm256_add_pd(a3, _mm256_loadu_pd(x + 12));
    }
    _mm256_storeu_pd(sum + b, a0);
    _mm256_storeu_pd(sum + b + 4, a1);
    _mm256_storeu_pd(sum + b + 8, a2);
    _mm256_storeu_pd(sum + b + 12, a3);
  }
}
#endif

}  // namespace

void AttentionWindow::reset(int window, int heads, int tokens, int members) {
  if (window < 1 || heads < 1 || tokens < 1 || members < 1)
    throw std::logic_error("attention window: needs w >= 1, g >= 1, n >= 1 and m >= 1");
  window_ = window;
  heads_ = heads;
  slots_ = 0;
  last_ = -1;
  slot_of_.assign(std::size_t(tokens), -1);
  marked_at_.assign(std::size_t(tokens), -1);
  token_in_.clear();
  free_.clear();
  ascending_.clear();
  ring_.clear();
  grow(std::min(members, tokens));
}

void AttentionWindow::grow(int least) {
  const int old = slots_;
  const int slots = (std::max(least, 2 * old) + kSlotBlock - 1) / kSlotBlock * kSlotBlock;
  std::vector<double> ring(std::size_t(window_) * std::size_t(heads_) * std::size_t(slots), 0.0);
  for (std::size_t r = 0; r < std::size_t(window_) * std::size_t(heads_); ++r) {
    std::copy_n(ring_.begin() + std::ptrdiff_t(r * std::size_t(old)), old,
                ring.begin() + std::ptrdiff_t(r * std::size_t(slots)));
  }
  ring_ = std::move(ring);
  token_in_.resize(std::size_t(slots), -1);
  for (int s = slots - 1; s >= old; --s) free_.push_back(s);
  slots_ = slots;
}

int AttentionWindow::slot_for(Token t) {
  if (free_.empty()) grow(slots_ + 1);
  const int slot = free_.back();
  free_.pop_back();
  slot_of_[std::size_t(t)] = slot;
  token_in_[std::size_t(slot)] = t;
  for (int s = 0; s < window_; ++s) {
    for (int h = 0; h < heads_; ++h) row(s, h)[slot] = 0.0;
  }
  return slot;
}

void AttentionWindow::record(int step, std::span<const Token> tokens,
                             std::span<const double> head_attention) {
  if (step < 0 || (last_ >= 0 && step != last_ + 1))
    throw std::logic_error("attention window: step " + std::to_string(step) + " after step " +
                           std::to_string(last_));
  if (head_attention.size() != std::size_t(heads_) * tokens.size())
    throw std::logic_error("attention window: g |tokens| weights expected");
  for (Token t : tokens) {
    if (t < 0 || std::size_t(t) >= slot_of_.size() || marked_at_[std::size_t(t)] == step)
      throw std::logic_error("attention window: token " + std::to_string(t) +
                             " out of range or repeated");
    marked_at_[std::size_t(t)] = step;
  }
  for (int slot = 0; slot < slots_; ++slot) {  // members gone since the last step
    const Token t = token_in_[std::size_t(slot)];
    if (t < 0 || marked_at_[std::size_t(t)] == step) continue;
    slot_of_[std::size_t(t)] = -1;
    token_in_[std::size_t(slot)] = -1;
    free_.push_back(slot);
  }
  std::erase_if(ascending_, [&](Token t) { return slot_of_[std::size_t(t)] < 0; });
  const std::size_t stayed = ascending_.size();
  for (Token t : tokens) {
    if (slot_of_[std::size_t(t)] >= 0) continue;
    (void)slot_for(t);
    ascending_.push_back(t);
  }
  // The arrivals (usually the new token alone, the largest) merged into the ascending members.
  std::sort(ascending_.begin() + std::ptrdiff_t(stayed), ascending_.end());
  std::inplace_merge(ascending_.begin(), ascending_.begin() + std::ptrdiff_t(stayed),
                     ascending_.end());
  const std::size_t size = tokens.size();
  for (int h = 0; h < heads_; ++h) {
    double* out = row(step, h);
    const double* in = head_attention.data() + std::size_t(h) * size;
    for (std::size_t e = 0; e < size; ++e) out[slot_of_[std::size_t(tokens[e])]] = in[e];
  }
  last_ = step;
}

void AttentionWindow::sums(std::span<const Token> tokens, std::vector<std::vector<double>>& out) {
  for (Token t : tokens) {
    if (t < 0 || std::size_t(t) >= slot_of_.size() || slot_of_[std::size_t(t)] < 0)
      throw std::logic_error("attention window: token " + std::to_string(t) + " is not a member");
  }
  out.resize(std::size_t(heads_));
  sum_.resize(std::size_t(slots_));
  Eigen::Map<Eigen::VectorXd> sum(sum_.data(), slots_);
  const bool avx2 = active_cpu_path() == CpuPath::kAvx2Fma;
  for (int h = 0; h < heads_; ++h) {
    rows_.clear();
    for (int s = std::max(0, last_ - window_ + 1); s <= last_; ++s) rows_.push_back(row(s, h));
#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
    if (avx2) {
      window_sums_avx2(rows_.data(), int(rows_.size()), slots_, sum_.data());
    } else
#endif
    {
      sum.setZero();
      for (const double* r : rows_) sum += Eigen::Map<const Eigen::VectorXd>(r, slots_);
    }
    std::vector<double>& head = out[std::size_t(h)];
    head.resize(tokens.size());
    for (std::size_t c = 0; c < tokens.size(); ++c)
      head[c] = sum_[std::size_t(slot_of_[std::size_t(tokens[c])])];
  }
}

}  // namespace subevict::greedy::policies
