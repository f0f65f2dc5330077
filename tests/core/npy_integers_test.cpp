// Integer and boolean .npy arrays (core/npy.hpp parse_npy_integers, read_npy_integers, the int64
// and uint8 writers, npy_shape): every accepted dtype decoded from hand-built bytes, round trips,
// and the rejections.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/input_error.hpp"
#include "core/npy.hpp"
#include "io_test_support.hpp"

namespace subevict {
namespace {

using testing::read_bytes;
using testing::ScratchDir;

/// A version 1.0 .npy with `descr` and `shape_text` (e.g. "(3,)") around `payload`.
std::vector<std::byte> npy(const std::string& descr, const std::string& shape_text,
                           const std::vector<std::uint8_t>& payload) {
  const std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_text + ", }\n";
  std::string text = "\x93NUMPY";
  text += '\x01';
  text += '\0';
  text += static_cast<char>(header.size() & 0xff);
  text += static_cast<char>(header.size() >> 8);
  text += header;
  std::vector<std::byte> bytes = testing::to_bytes(text);
  for (std::uint8_t b : payload) bytes.push_back(std::byte(b));
  return bytes;
}

template <class T>
std::string error_of(const std::vector<std::byte>& bytes) {
  try {
    (void)parse_npy_integers<T>(bytes, "f.npy");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(NpyIntegers, EveryDtypeDecodes) {
  using V = std::vector<std::int64_t>;
  // Little-endian payloads written out byte by byte.
  EXPECT_EQ(parse_npy_integers<std::int64_t>(npy("|b1", "(3,)", {1, 0, 1}), "f").data, (V{1, 0, 1}));
  EXPECT_EQ(parse_npy_integers<std::int64_t>(npy("|i1", "(2,)", {0xff, 0x7f}), "f").data, (V{-1, 127}));
  EXPECT_EQ(parse_npy_integers<std::int64_t>(npy("<i1", "(1,)", {0x80}), "f").data, (V{-128}));
  EXPECT_EQ(parse_npy_integers<std::int64_t>(npy("|u1", "(2,)", {0xff, 3}), "f").data, (V{255, 3}));
  EXPECT_EQ(parse_npy_integers<std::int64_t>(npy("<i2", "(2,)", {0x00, 0x80, 0x34, 0x12}), "f").data,
            (V{-32768, 0x1234}));
  EXPECT_EQ(parse_npy_integers<std::int64_t>(npy("<u2", "(1,)", {0xff, 0xff}), "f").data, (V{65535}));
  EXPECT_EQ(parse_npy_integers<std::int64_t>(npy("<i4", "(2,)", {0xfe, 0xff, 0xff, 0xff, 1, 0, 0, 0}), "f").data,
            (V{-2, 1}));
  EXPECT_EQ(parse_npy_integers<std::int64_t>(npy("<u4", "(1,)", {0xff, 0xff, 0xff, 0xff}), "f").data,
            (V{4294967295LL}));
  EXPECT_EQ(parse_npy_integers<std::int64_t>(npy("<i8", "(1,)", {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), "f")
                .data,
            (V{-1}));
  EXPECT_EQ(parse_npy_integers<std::int64_t>(npy("<u8", "(1,)", {1, 0, 0, 0, 0, 0, 0, 0x7f}), "f").data,
            (V{0x7f00000000000001LL}));
  const Tensor<std::uint8_t> mask = parse_npy_integers<std::uint8_t>(npy("|b1", "(2, 2)", {1, 0, 1, 1}), "f");
  EXPECT_EQ(mask.shape, (std::vector<std::size_t>{2, 2}));
  EXPECT_EQ(mask.data, (std::vector<std::uint8_t>{1, 0, 1, 1}));
  EXPECT_EQ(npy_shape(npy("<i8", "(3, 0, 5)", {}), "f"), (std::vector<std::size_t>{3, 0, 5}));
  EXPECT_TRUE(parse_npy_integers<std::int64_t>(npy("<i4", "(0,)", {}), "f").data.empty());
}

TEST(NpyIntegers, RejectionsNameTheFieldAndTheValue) {
  EXPECT_EQ(error_of<std::int64_t>(npy("<f8", "(1,)", {0, 0, 0, 0, 0, 0, 0, 0})),
            "f.npy: descr: expected an integer or bool dtype: '|b1', '|i1', '|u1', '<i2', '<u2', '<i4', '<u4', "
            "'<i8' or '<u8' (little-endian), got '<f8'");
  EXPECT_NE(error_of<std::int64_t>(npy(">i4", "(1,)", {0, 0, 0, 1})).find("got '>i4'"), std::string::npos);
  EXPECT_NE(error_of<std::int64_t>(npy("|i4", "(1,)", {0, 0, 0, 1})).find("got '|i4'"), std::string::npos);
  EXPECT_NE(error_of<std::int64_t>(npy("<b2", "(1,)", {0, 0})).find("got '<b2'"), std::string::npos);
  EXPECT_EQ(error_of<std::int64_t>(npy("|b1", "(2,)", {1, 2})),
            "f.npy: values: expected bool bytes 0 or 1, got 2 at element 1");
  EXPECT_EQ(error_of<std::int64_t>(npy("<u8", "(1,)", {0, 0, 0, 0, 0, 0, 0, 0x80})),
            "f.npy: values: expected integers in [-9223372036854775808, 9223372036854775807], got "
            "9223372036854775808 at element 0");
  EXPECT_EQ(error_of<std::uint8_t>(npy("<i2", "(2,)", {1, 0, 0xff, 0xff})),
            "f.npy: values: expected integers in [0, 255], got -1 at element 1");
  EXPECT_EQ(error_of<std::uint8_t>(npy("<i2", "(1,)", {0, 1})),
            "f.npy: values: expected integers in [0, 255], got 256 at element 0");
  EXPECT_NE(error_of<std::int64_t>(npy("<i4", "(2,)", {0, 0, 0, 0})).find("f.npy: payload: expected 8 bytes"),
            std::string::npos);
  EXPECT_NE(error_of<std::int64_t>(npy("<i4", "(1,)", {0, 0, 0, 0, 0})).find("(1 bytes left over)"), std::string::npos);
  // The container checks of parse_npy apply.
  std::vector<std::byte> fortran = npy("<i8", "(1,)", {0, 0, 0, 0, 0, 0, 0, 0});
  const std::string text(reinterpret_cast<const char*>(fortran.data()), fortran.size());
  const std::size_t at = text.find("False");
  std::memcpy(fortran.data() + at, "True ", 5);
  EXPECT_EQ(error_of<std::int64_t>(fortran), "f.npy: fortran_order: expected False (C order), got True");
  EXPECT_NE(error_of<std::int64_t>(std::vector<std::byte>(3)).find("f.npy: magic:"), std::string::npos);
  ReadOptions small;
  small.max_bytes = 15;
  try {
    (void)parse_npy_integers<std::int64_t>(npy("<i8", "(2,)", std::vector<std::uint8_t>(16, 0)), "f", small);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("f: shape: expected at most 15 bytes of data"), std::string::npos) << e.what();
  }
}

RC_GTEST_PROP(NpyIntegers, WritersRoundTrip, ()) {
  static ScratchDir scratch;
  std::vector<std::size_t> shape = *rc::gen::container<std::vector<std::size_t>>(
      *rc::gen::inRange<std::size_t>(0, 4), rc::gen::inRange<std::size_t>(0, 5));
  std::size_t count = 1;
  for (std::size_t d : shape) count *= d;
  const auto values = *rc::gen::container<std::vector<std::int64_t>>(count, rc::gen::arbitrary<std::int64_t>());
  const std::string path = scratch.unique(".npy");
  write_npy(path, TensorView<std::int64_t>{shape, values});
  const Tensor<std::int64_t> read = read_npy_integers<std::int64_t>(path);
  RC_ASSERT(read.shape == shape);
  RC_ASSERT(read.data == values);
  RC_ASSERT(npy_shape(read_bytes(path), path) == shape);
  const std::string bytes = npy_file_bytes("x", TensorView<std::int64_t>{shape, values});
  const std::vector<std::byte> file = read_bytes(path);
  RC_ASSERT(std::string(reinterpret_cast<const char*>(file.data()), file.size()) == bytes);
  std::vector<std::uint8_t> small(count);
  for (std::size_t e = 0; e < count; ++e) small[e] = std::uint8_t(values[e]);
  write_npy(path, TensorView<std::uint8_t>{shape, small});
  RC_ASSERT(read_npy_integers<std::uint8_t>(path).data == small);
}

TEST(NpyIntegers, WritersCheckTheShape) {
  ScratchDir scratch;
  EXPECT_THROW(write_npy(scratch.path("x.npy"), TensorView<std::int64_t>{{3}, std::vector<std::int64_t>{1, 2}}),
               InputError);
  EXPECT_THROW(write_npy(scratch.path("y.npy"), TensorView<std::uint8_t>{{2, 2}, std::vector<std::uint8_t>{1}}),
               InputError);
  EXPECT_FALSE(std::filesystem::exists(scratch.path("x.npy")));
}

}  // namespace
}  // namespace subevict
