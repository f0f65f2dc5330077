#include "greedy/eviction/process/head_group_sha256.hpp"

#include <bit>
#include <cstdint>

#include "core/sha256.hpp"

namespace subevict::greedy {

// The tensors are hashed as they lie in memory, which is their little-endian form only here.
static_assert(std::endian::native == std::endian::little, "head_group_sha256 hashes little-endian bytes");

std::string head_group_sha256(const HeadGroup& group) {
  Sha256 hash;
  const auto integer = [&](int value) {
    const std::int32_t v = value;
    hash.update(&v, sizeof v);
  };
  const auto matrix = [&](const ConstHeadMap& m) {  // row-major and contiguous (HeadGroup's views)
    hash.update(m.data(), sizeof(float) * std::size_t(m.rows()) * std::size_t(m.cols()));
  };
  integer(group.group_size());
  integer(group.tokens());
  integer(group.head_dim());
  for (const ConstHeadMap& q : group.q) matrix(q);
  matrix(group.k);
  matrix(group.v);
  hash.update(&group.scale, sizeof group.scale);
  integer(group.window);
  return hash.hex();
}

}  // namespace subevict::greedy
