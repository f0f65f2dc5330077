#include "core/shape.hpp"

#include <initializer_list>
#include <stdexcept>

namespace subevict {
namespace {
constexpr std::size_t kMaxElements = std::size_t{1} << 40;

void require_positive(int value, const char* field) {
  if (value <= 0) {
    throw std::invalid_argument(std::string("shape: ") + field + " must be positive, got " +
                                std::to_string(value));
  }
}

/// Whether the product of the positive `factors` exceeds `limit`, without overflowing: four
/// factors below 2^31 can multiply past 2^64, which q_elements() would wrap to a small number.
bool product_exceeds(std::initializer_list<std::size_t> factors, std::size_t limit) {
  std::size_t product = 1;
  for (std::size_t factor : factors) {
    if (product > limit / factor) return true;
    product *= factor;
  }
  return false;
}
}  // namespace

std::size_t Shape::q_elements() const {
  return std::size_t(layers) * std::size_t(q_heads) * std::size_t(tokens) * std::size_t(head_dim);
}

std::size_t Shape::kv_elements() const {
  return std::size_t(layers) * std::size_t(kv_heads) * std::size_t(tokens) * std::size_t(head_dim);
}

std::string Shape::attention_kind() const {
  if (kv_heads == q_heads) return "MHA";
  if (kv_heads == 1) return "MQA";
  return "GQA";
}

void Shape::validate() const {
  require_positive(layers, "layers");
  require_positive(q_heads, "q_heads");
  require_positive(kv_heads, "kv_heads");
  require_positive(tokens, "tokens");
  require_positive(head_dim, "head_dim");
  if (q_heads % kv_heads != 0) {
    throw std::invalid_argument("shape: kv_heads (" + std::to_string(kv_heads) +
                                ") must divide q_heads (" + std::to_string(q_heads) + ")");
  }
  if (product_exceeds({std::size_t(layers), std::size_t(q_heads), std::size_t(tokens),
                       std::size_t(head_dim)},
                      kMaxElements)) {
    throw std::invalid_argument("shape: " + to_string(*this) + " has more than 2^40 elements");
  }
}

std::string to_string(const Shape& s) {
  return "layers=" + std::to_string(s.layers) + " q_heads=" + std::to_string(s.q_heads) +
         " kv_heads=" + std::to_string(s.kv_heads) + " tokens=" + std::to_string(s.tokens) +
         " head_dim=" + std::to_string(s.head_dim);
}

}  // namespace subevict
