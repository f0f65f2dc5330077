// Tests core/sha256.hpp against the digests of FIPS 180-4's examples (NIST's published values,
// an independent source) and that any split of the input into update() calls gives one digest.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

#include "core/sha256.hpp"

namespace subevict {
namespace {

TEST(Sha256, TheDigestsNistPublishes) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 448 bits: the padding needs a second block.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                       "mnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

RC_GTEST_PROP(Sha256, AnySplitOfTheInputGivesTheSameDigest, ()) {
  const std::string bytes = *rc::gen::container<std::string>(rc::gen::arbitrary<char>());
  const std::vector<std::size_t> cuts = *rc::gen::container<std::vector<std::size_t>>(
      rc::gen::inRange<std::size_t>(0, bytes.size() + 1));
  Sha256 hash;
  std::size_t from = 0;
  for (std::size_t cut : cuts) {
    if (cut < from) continue;
    hash.update(bytes.data() + from, cut - from);
    from = cut;
  }
  hash.update(bytes.data() + from, bytes.size() - from);
  RC_ASSERT(hash.hex() == sha256_hex(bytes));
}

TEST(Sha256, RecognisesItsOwnHexOnly) {
  EXPECT_TRUE(is_sha256_hex(sha256_hex("abc")));
  EXPECT_FALSE(is_sha256_hex(sha256_hex("abc").substr(1)));
  EXPECT_FALSE(is_sha256_hex(std::string(63, 'a') + "G"));
  EXPECT_FALSE(is_sha256_hex("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"));
}

}  // namespace
}  // namespace subevict
