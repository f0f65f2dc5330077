// Tests greedy/eviction/process/head_group_sha256.hpp: the digest is the group's (the same for the
// group's layer in a workload of more layers), and one bit of anything its attention reads (a
// query head's Q, K, V, the score scale, the window) changes it while another group's data does
// not. The bytes against Python's hashlib over a workload file: tests/cli/cli_test.py.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "core/generator.hpp"
#include "greedy/eviction/process/head_group_sha256.hpp"

namespace subevict::greedy {
namespace {

/// Flips the last mantissa bit of data[index].
void flip_bit(std::vector<float>& data, std::size_t index) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &data[index], sizeof bits);
  bits ^= 1u;  // the last bit of the mantissa: the smallest change a float can have
  std::memcpy(&data[index], &bits, sizeof bits);
}

TEST(HeadGroupSha256, IsTheGroupsWhateverTheWorkloadAroundIt) {
  const Workload two = generate_workload(spec_from_preset("tiny-gqa", 32, 2, 3));
  const Workload three = generate_workload(spec_from_preset("tiny-gqa", 32, 3, 3));
  for (int layer = 0; layer < 2; ++layer) {
    for (int kv = 0; kv < two.shape().kv_heads; ++kv) {
      EXPECT_EQ(head_group_sha256(head_group(two, layer, kv)), head_group_sha256(head_group(three, layer, kv)));
    }
  }
  EXPECT_NE(head_group_sha256(head_group(two, 0, 0)), head_group_sha256(head_group(two, 0, 1)));
  EXPECT_NE(head_group_sha256(head_group(two, 0, 0)), head_group_sha256(head_group(two, 1, 0)));
  const Workload seed = generate_workload(spec_from_preset("tiny-gqa", 32, 2, 4));
  EXPECT_NE(head_group_sha256(head_group(two, 0, 0)), head_group_sha256(head_group(seed, 0, 0)));
}

TEST(HeadGroupSha256, OneBitOfWhatTheAttentionReadsChangesIt) {
  const Workload w = generate_workload(spec_from_preset("tiny-gqa", 32, 2, 3));
  const Shape& s = w.shape();
  const int g = s.q_heads / s.kv_heads, layer = 1, kv = 1;
  const std::string base = head_group_sha256(head_group(w, layer, kv));
  const std::size_t per_head = std::size_t(s.tokens) * s.head_dim;
  const auto q_at = [&](int head) { return (std::size_t(layer) * s.q_heads + head) * per_head; };
  const auto kv_at = [&](int head) { return (std::size_t(layer) * s.kv_heads + head) * per_head; };
  const auto digest_after = [&](auto&& change) {
    Workload copy = w;
    change(copy);
    return head_group_sha256(head_group(copy, layer, kv));
  };
  // The group's own data: the last entry of each of its query heads, its K and V.
  for (int q = kv * g; q < (kv + 1) * g; ++q) {
    EXPECT_NE(digest_after([&](Workload& c) { flip_bit(c.q_data(), q_at(q) + per_head - 1); }), base) << "Q " << q;
  }
  EXPECT_NE(digest_after([&](Workload& c) { flip_bit(c.k_data(), kv_at(kv)); }), base);
  EXPECT_NE(digest_after([&](Workload& c) { flip_bit(c.v_data(), kv_at(kv) + per_head / 2); }), base);
  EXPECT_NE(digest_after([&](Workload& c) { c.set_score_scale(w.score_scale() * (1 + 1e-15)); }), base);
  EXPECT_NE(digest_after([&](Workload& c) { c.set_windows({0, 8}); }), base);
  // Another group's: the neighbouring query head, KV head and layer.
  EXPECT_EQ(digest_after([&](Workload& c) { flip_bit(c.q_data(), q_at(kv * g - 1)); }), base);
  EXPECT_EQ(digest_after([&](Workload& c) { flip_bit(c.k_data(), kv_at(kv - 1)); }), base);
  EXPECT_EQ(digest_after([&](Workload& c) { flip_bit(c.v_data(), kv_at(kv) - s.kv_heads * per_head); }), base);
  EXPECT_EQ(digest_after([&](Workload& c) { c.set_windows({8, 0}); }), base);
}

}  // namespace
}  // namespace subevict::greedy
