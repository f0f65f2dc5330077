#include "core/workload.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace subevict {
namespace {

/// Appends the first `tokens` rows of `head` (row-major) to `out`.
void append_rows(const ConstHeadMap& head, int tokens, std::vector<float>& out) {
  out.insert(out.end(), head.data(), head.data() + std::size_t(tokens) * std::size_t(head.cols()));
}

}  // namespace

Workload::Workload(const Shape& shape) : shape_(shape) {
  shape_.validate();
  q_.assign(shape_.q_elements(), 0.0f);
  k_.assign(shape_.kv_elements(), 0.0f);
  v_.assign(shape_.kv_elements(), 0.0f);
}

std::size_t Workload::offset(int layer, int head, int heads, const char* tensor) const {
  if (layer < 0 || layer >= shape_.layers || head < 0 || head >= heads) {
    throw std::out_of_range(std::string("workload: ") + tensor + "(layer " + std::to_string(layer) +
                            ", head " + std::to_string(head) + ") outside " + to_string(shape_));
  }
  return (std::size_t(layer) * std::size_t(heads) + std::size_t(head)) * std::size_t(shape_.tokens) *
         std::size_t(shape_.head_dim);
}

ConstHeadMap Workload::q(int l, int h) const {
  return {q_.data() + offset(l, h, shape_.q_heads, "q"), shape_.tokens, shape_.head_dim};
}
HeadMap Workload::q(int l, int h) {
  return {q_.data() + offset(l, h, shape_.q_heads, "q"), shape_.tokens, shape_.head_dim};
}
ConstHeadMap Workload::k(int l, int h) const {
  return {k_.data() + offset(l, h, shape_.kv_heads, "k"), shape_.tokens, shape_.head_dim};
}
HeadMap Workload::k(int l, int h) {
  return {k_.data() + offset(l, h, shape_.kv_heads, "k"), shape_.tokens, shape_.head_dim};
}
ConstHeadMap Workload::v(int l, int h) const {
  return {v_.data() + offset(l, h, shape_.kv_heads, "v"), shape_.tokens, shape_.head_dim};
}
HeadMap Workload::v(int l, int h) {
  return {v_.data() + offset(l, h, shape_.kv_heads, "v"), shape_.tokens, shape_.head_dim};
}

double Workload::score_scale() const {
  return score_scale_ > 0.0 ? score_scale_ : 1.0 / std::sqrt(double(shape_.head_dim));
}

int Workload::window(int layer) const {
  if (layer < 0 || layer >= shape_.layers) {
    throw std::out_of_range("workload: window of layer " + std::to_string(layer) + " outside " + to_string(shape_));
  }
  return windows_.empty() ? 0 : windows_[std::size_t(layer)];
}

std::vector<int> Workload::windows() const {
  return windows_.empty() ? std::vector<int>(std::size_t(shape_.layers), 0) : windows_;
}

void Workload::set_windows(const std::vector<int>& windows) {
  if (windows.size() != std::size_t(shape_.layers)) {
    throw std::invalid_argument("workload: " + std::to_string(windows.size()) + " attention windows for " +
                                std::to_string(shape_.layers) + " layers");
  }
  for (std::size_t l = 0; l < windows.size(); ++l) {
    if (windows[l] < 0) {
      throw std::invalid_argument("workload: layer " + std::to_string(l) + "'s attention window is " +
                                  std::to_string(windows[l]) + ", expected 0 (global) or a window >= 1");
    }
  }
  const bool any = std::any_of(windows.begin(), windows.end(), [](int w) { return w > 0; });
  windows_ = any ? windows : std::vector<int>{};
}

ConstHeadMap Workload::q_pre(int l, int h) const {
  if (!has_pre_rope()) throw std::logic_error("workload: no pre-RoPE queries");
  return {q_pre_.data() + offset(l, h, shape_.q_heads, "q_pre"), shape_.tokens, shape_.head_dim};
}
ConstHeadMap Workload::k_pre(int l, int h) const {
  if (!has_pre_rope()) throw std::logic_error("workload: no pre-RoPE keys");
  return {k_pre_.data() + offset(l, h, shape_.kv_heads, "k_pre"), shape_.tokens, shape_.head_dim};
}

const Rotary& Workload::rotary(int layer) const {
  if (!has_pre_rope()) throw std::logic_error("workload: no rotary parameters");
  if (layer < 0 || layer >= shape_.layers) {
    throw std::out_of_range("workload: rotary of layer " + std::to_string(layer) + " outside " + to_string(shape_));
  }
  return rotaries_[std::size_t(layer)];
}

void Workload::set_pre_rope(std::vector<float> q_pre, std::vector<float> k_pre, std::vector<Rotary> rotaries) {
  if (q_pre.size() != q_.size() || k_pre.size() != k_.size()) {
    throw std::invalid_argument("workload: pre-RoPE q and k of " + std::to_string(q_pre.size()) + " and " +
                                std::to_string(k_pre.size()) + " values, expected " + std::to_string(q_.size()) +
                                " and " + std::to_string(k_.size()) + " (the sizes of q and k)");
  }
  if (rotaries.size() != std::size_t(shape_.layers)) {
    throw std::invalid_argument("workload: " + std::to_string(rotaries.size()) + " rotaries for " +
                                std::to_string(shape_.layers) + " layers");
  }
  for (const Rotary& r : rotaries) r.validate(shape_.head_dim);
  q_pre_ = std::move(q_pre);
  k_pre_ = std::move(k_pre);
  rotaries_ = std::move(rotaries);
}

void Workload::clear_pre_rope() {
  q_pre_.clear();
  k_pre_.clear();
  rotaries_.clear();
}

Workload first_tokens(const Workload& w, int tokens) {
  const Shape& s = w.shape();
  if (tokens < 1 || tokens > s.tokens) {
    throw std::invalid_argument("workload: first " + std::to_string(tokens) + " tokens of " + to_string(s) +
                                ", expected 1 to " + std::to_string(s.tokens));
  }
  Shape shape = s;
  shape.tokens = tokens;
  Workload out(shape);
  for (int l = 0; l < s.layers; ++l) {
    for (int h = 0; h < s.q_heads; ++h) out.q(l, h) = w.q(l, h).topRows(tokens);
    for (int h = 0; h < s.kv_heads; ++h) {
      out.k(l, h) = w.k(l, h).topRows(tokens);
      out.v(l, h) = w.v(l, h).topRows(tokens);
    }
  }
  if (w.has_pre_rope()) {
    std::vector<float> q_pre, k_pre;
    for (int l = 0; l < s.layers; ++l) {
      for (int h = 0; h < s.q_heads; ++h) append_rows(w.q_pre(l, h), tokens, q_pre);
      for (int h = 0; h < s.kv_heads; ++h) append_rows(w.k_pre(l, h), tokens, k_pre);
    }
    out.set_pre_rope(std::move(q_pre), std::move(k_pre), w.rotaries());
  }
  out.set_score_scale(w.score_scale());
  out.set_windows(w.windows());
  out.metadata = w.metadata;
  return out;
}

bool operator==(const Workload& a, const Workload& b) {
  return a.shape_ == b.shape_ && a.q_ == b.q_ && a.k_ == b.k_ && a.v_ == b.v_ &&
         a.score_scale() == b.score_scale() && a.windows_ == b.windows_ && a.q_pre_ == b.q_pre_ &&
         a.k_pre_ == b.k_pre_ && a.rotaries_ == b.rotaries_;
}

}  // namespace subevict
