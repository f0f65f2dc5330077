#include "core/workload.hpp"

#include <cmath>
#include <stdexcept>

namespace subevict {

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

bool operator==(const Workload& a, const Workload& b) {
  return a.shape_ == b.shape_ && a.q_ == b.q_ && a.k_ == b.k_ && a.v_ == b.v_ &&
         a.score_scale() == b.score_scale();
}

}  // namespace subevict
