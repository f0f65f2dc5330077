#include "core/npy.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/dtype.hpp"
#include "core/mapped_file.hpp"
#include "io_test_support.hpp"

namespace subevict {
namespace {

using testing::bits;
using testing::kValidDataDir;
using testing::read_bytes;
using testing::rejects;
using testing::ScratchDir;

/// Largest finite float, and half its ulp: the rounding boundary of binary64 -> binary32.
constexpr double kFloatMax = std::numeric_limits<float>::max();
constexpr double kHalfUlpAtFloatMax = 0x1p103;
/// Rank whose header exceeds version 1.0's 65535-byte limit ("1, " per dimension).
constexpr std::size_t kRankNeedingVersion2 = 30000;

/// A .npy file built by hand: magic, version `major`.0, the header length, the header text
/// verbatim (no padding), then the payload.
std::vector<std::byte> npy_bytes(const std::string& header, const std::vector<std::byte>& payload,
                                 std::uint8_t major = 1) {
  std::string text = "\x93NUMPY";
  text += static_cast<char>(major);
  text += '\0';
  const std::size_t length_size = major == 1 ? 2 : 4;
  for (std::size_t i = 0; i < length_size; ++i) text += static_cast<char>(header.size() >> (8 * i));
  text += header;
  std::vector<std::byte> bytes = testing::to_bytes(text);
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  return bytes;
}

std::vector<std::byte> float_bytes(const std::vector<float>& values) {
  std::vector<std::byte> bytes(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

template <class T>
void check_round_trip(ScratchDir& scratch, const Tensor<T>& tensor, const ReadOptions& options) {
  const std::string path = scratch.unique(".npy");
  write_npy(path, tensor);
  const Tensor<T> read = read_npy<T>(path, options);
  RC_ASSERT(read.shape == tensor.shape);
  RC_ASSERT(bits(read.data) == bits(tensor.data));
  const Tensor<T> parsed = parse_npy<T>(read_bytes(path), path, options);
  RC_ASSERT(bits(parsed.data) == bits(tensor.data));
}

RC_GTEST_PROP(NpyRoundTrip, FloatIsBitExactForAnyShape, ()) {
  static ScratchDir scratch;
  Tensor<float> tensor;
  tensor.shape = *testing::small_shape();
  tensor.data = *rc::gen::container<std::vector<float>>(element_count(tensor.shape),
                                                        testing::finite_value<float>());
  check_round_trip(scratch, tensor, {});
}

RC_GTEST_PROP(NpyRoundTrip, DoubleIsBitExactForAnyShape, ()) {
  static ScratchDir scratch;
  Tensor<double> tensor;
  tensor.shape = *testing::small_shape();
  tensor.data = *rc::gen::container<std::vector<double>>(element_count(tensor.shape),
                                                         testing::finite_value<double>());
  check_round_trip(scratch, tensor, {});
}

RC_GTEST_PROP(NpyRoundTrip, AnyBitPatternSurvivesWithAllowNonfinite, ()) {
  static ScratchDir scratch;
  Tensor<float> tensor;
  tensor.shape = {*rc::gen::inRange<std::size_t>(0, 16)};
  tensor.data =
      *rc::gen::container<std::vector<float>>(tensor.shape[0], testing::any_value<float>());
  check_round_trip(scratch, tensor, {.allow_nonfinite = true});
}

TEST(NpyWrite, MatchesNumpyByteForByte) {
  ScratchDir scratch;
  const std::string matrix = scratch.path("matrix.npy");
  write_npy(matrix, Tensor<float>{{2, 3}, {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f}});
  EXPECT_EQ(read_bytes(matrix), read_bytes(kValidDataDir + "/numpy_f4_2x3.npy"));
  const std::string scalar = scratch.path("scalar.npy");
  write_npy(scalar, Tensor<double>{{}, {3.25}});
  EXPECT_EQ(read_bytes(scalar), read_bytes(kValidDataDir + "/numpy_f8_scalar.npy"));
}

TEST(NpyWrite, SwitchesToVersion2WhenTheHeaderNeedsIt) {
  ScratchDir scratch;
  const std::string path = scratch.path("high_rank.npy");
  Tensor<float> tensor{std::vector<std::size_t>(kRankNeedingVersion2, 1), {42.0f}};
  write_npy(path, tensor);
  const std::vector<std::byte> bytes = read_bytes(path);
  ASSERT_GT(bytes.size(), 8u);
  EXPECT_EQ(std::uint8_t(bytes[6]), 2);
  EXPECT_EQ(read_npy<float>(path), tensor);
  write_npy(path, Tensor<float>{{4}, {1, 2, 3, 4}});
  EXPECT_EQ(std::uint8_t(read_bytes(path)[6]), 1);
}

TEST(NpyWrite, RejectsDataThatDisagreesWithTheShape) {
  ScratchDir scratch;
  const std::string path = scratch.path("bad.npy");
  EXPECT_TRUE(rejects(
      [&] {
        write_npy(path, Tensor<float>{{2, 2}, {1, 2, 3}});
      },
      {path, "tensor data: expected 4 values for shape [2, 2], got 3 values"}));
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(NpyRead, NumpyReferenceFiles) {
  const Tensor<float> matrix = read_npy<float>(kValidDataDir + "/numpy_f4_2x3.npy");
  EXPECT_EQ(matrix, (Tensor<float>{{2, 3}, {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f}}));
  EXPECT_EQ(read_npy<double>(kValidDataDir + "/numpy_f8_scalar.npy"), (Tensor<double>{{}, {3.25}}));
  EXPECT_EQ(read_npy<double>(kValidDataDir + "/numpy_f8_1d.npy"),
            (Tensor<double>{{3}, {0.1, -2.5, 1e10}}));
  EXPECT_EQ(read_npy<float>(kValidDataDir + "/numpy_f4_empty_0x4.npy"),
            (Tensor<float>{{0, 4}, {}}));
  EXPECT_EQ(read_npy<float>(kValidDataDir + "/numpy_f4_v2.npy"),
            (Tensor<float>{{4}, {0.0f, 1.0f, 2.0f, 3.0f}}));
  EXPECT_EQ(read_npy<float>(kValidDataDir + "/numpy_f4_v3.npy"),
            (Tensor<float>{{2, 2}, {1.0f, 2.0f, 3.0f, 4.0f}}));
  const Tensor<float> special = read_npy<float>(kValidDataDir + "/numpy_f4_special.npy");
  const std::vector<float> expected = {std::numeric_limits<float>::denorm_min(), -0.0f,
                                       std::numeric_limits<float>::max()};
  EXPECT_EQ(bits(special.data), bits(expected));
}

TEST(NpyRead, ConvertsBetweenFloatAndDouble) {
  const Tensor<float> narrowed = read_npy<float>(kValidDataDir + "/numpy_f8_1d.npy");
  EXPECT_EQ(narrowed.data, (std::vector<float>{static_cast<float>(0.1), -2.5f, 1e10f}));
  const Tensor<double> widened = read_npy<double>(kValidDataDir + "/numpy_f4_2x3.npy");
  EXPECT_EQ(widened.data, (std::vector<double>{-1.0, -0.5, 0.0, 0.5, 1.0, 1.5}));
}

TEST(NpyRead, NarrowingBeyondFloatRangeGivesInfWhichIsRejectedByDefault) {
  ScratchDir scratch;
  const std::string path = scratch.path("wide.npy");
  const double below_tie = std::nextafter(kFloatMax + kHalfUlpAtFloatMax, 0.0);
  write_npy(path, Tensor<double>{{4}, {below_tie, kFloatMax + kHalfUlpAtFloatMax, -1e300, 1.0}});
  EXPECT_TRUE(rejects([&] { read_npy<float>(path); }, {path, "values", "+Inf at element 1"}));
  const Tensor<float> read = read_npy<float>(path, {.allow_nonfinite = true});
  constexpr float kInf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(read.data, (std::vector<float>{std::numeric_limits<float>::max(), kInf, -kInf, 1.0f}));
  EXPECT_EQ(read_npy<double>(path).data[2], -1e300);
}

TEST(NpyRead, NonfiniteValuesNeedTheOptIn) {
  ScratchDir scratch;
  const std::string path = scratch.path("nan.npy");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  write_npy(path, Tensor<float>{{3}, {1.0f, 2.0f, nan}});
  EXPECT_TRUE(rejects([&] { read_npy<float>(path); }, {path, "values", "NaN at element 2"}));
  EXPECT_TRUE(rejects([&] { read_npy<double>(path); }, {"NaN at element 2"}));
  EXPECT_TRUE(std::isnan(read_npy<float>(path, {.allow_nonfinite = true}).data[2]));
}

TEST(NpyRead, MaxBytesBoundsTheFileAndTheDecodedData) {
  ScratchDir scratch;
  const std::string path = scratch.path("four.npy");
  write_npy(path, Tensor<float>{{4}, {1, 2, 3, 4}});  // 128-byte header + 16 bytes
  const auto size = std::filesystem::file_size(path);
  EXPECT_TRUE(rejects([&] { read_npy<float>(path, {.max_bytes = size - 1}); },
                      {path, "file size: expected at most max_bytes"}));
  const auto bytes = read_bytes(path);
  EXPECT_TRUE(rejects([&] { parse_npy<double>(bytes, "mem", {.max_bytes = 24}); },
                      {"mem: shape: expected at most max_bytes = 24", "got 32 bytes"}));
  EXPECT_EQ(parse_npy<float>(bytes, "mem", {.max_bytes = 16}).data.size(), 4u);
}

TEST(NpyRead, UnopenableInputs) {
  ScratchDir scratch;
  EXPECT_TRUE(rejects([&] { read_npy<float>(scratch.path("missing.npy")); },
                      {"missing.npy: file: expected a readable file"}));
  EXPECT_TRUE(rejects([&] { read_npy<float>(scratch.dir().string()); },
                      {"file: expected a regular file, got a directory"}));
}

TEST(NpyRead, AcceptsEveryDictSpellingPythonAllows) {
  const auto payload = float_bytes({1, 2, 3, 4, 5, 6});
  const std::vector<std::string> headers = {
      "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}",
      "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3,)}\n",
      "  {'descr':'<f4','fortran_order':False,'shape':(2,3),}   \n",
      "{'descr': '<f4',\n 'fortran_order': False,\n 'shape': ( 2 , 3 ) ,\n}",
  };
  for (const std::string& header : headers) {
    for (std::uint8_t major : {1, 2, 3}) {
      const Tensor<float> tensor = parse_npy<float>(npy_bytes(header, payload, major), "mem");
      EXPECT_EQ(tensor, (Tensor<float>{{2, 3}, {1, 2, 3, 4, 5, 6}})) << header;
    }
  }
  const auto scalar = parse_npy<float>(
      npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': ()}", float_bytes({7})), "m");
  EXPECT_EQ(scalar, (Tensor<float>{{}, {7}}));
  const auto empty = parse_npy<float>(
      npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4294967296, 8)}", {}), "m");
  EXPECT_EQ(empty.shape, (std::vector<std::size_t>{0, 4294967296, 8}));
  EXPECT_TRUE(empty.data.empty());
}

TEST(NpyRead, NamesTheFieldThatIsWrong) {
  const auto payload = float_bytes({1, 2});
  const auto parse = [&](const std::string& header) {
    return [=] { parse_npy<float>(npy_bytes(header, payload), "x.npy"); };
  };
  EXPECT_TRUE(rejects(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'shape': ()}"),
                      {"x.npy: header: expected each key once"}));
  EXPECT_TRUE(rejects(parse("{'descr': '<f2', 'fortran_order': False, 'shape': (2,)}"),
                      {"x.npy: descr: expected '<f4' or '<f8'", "got '<f2'"}));
  EXPECT_TRUE(rejects(parse("{'descr': '<f4', 'fortran_order': false, 'shape': (2,)}"),
                      {"x.npy: fortran_order: expected True or False, got 'false'"}));
  EXPECT_TRUE(rejects(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (02,)}"),
                      {"x.npy: shape: expected decimal dimensions without leading zeros"}));
  EXPECT_TRUE(rejects(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (2,,)}"),
                      {"x.npy: shape: expected non-negative integer dimensions, got ','"}));
  EXPECT_TRUE(rejects(parse("{'descr': '<\\x66\\x34', 'fortran_order': False, 'shape': (2,)}"),
                      {"x.npy: header: expected a string without escapes"}));
  EXPECT_TRUE(rejects(parse(""), {"x.npy: header: expected '{'", "got end of header"}));
}

TEST(NpyRead, EveryTruncationOfAValidFileIsRejected) {
  ScratchDir scratch;
  const std::string path = scratch.path("valid.npy");
  write_npy(path, Tensor<double>{{2, 2}, {1, 2, 3, 4}});
  const std::vector<std::byte> bytes = read_bytes(path);
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    const std::span<const std::byte> prefix(bytes.data(), size);
    EXPECT_TRUE(rejects([&] { parse_npy<double>(prefix, "cut.npy"); }, {"cut.npy: "}))
        << "prefix of " << size << " bytes";
  }
}

// Boundaries of every size check, each at the limit (accepted), one below (accepted) and one
// above (rejected, naming the field); "accepted" for a check means that what follows it runs.

/// A header dict for '<f4' C-order data of the given shape tuple text, e.g. "(0, 3)".
std::string f4_header(const std::string& shape) {
  return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }\n";
}

TEST(NpyBounds, HeaderLengthUpToTheBytesLeftInTheFile) {
  const std::string header = f4_header("(0,)");
  const auto exact = npy_bytes(header, {});
  EXPECT_EQ(parse_npy<float>(exact, "mem").shape, (std::vector<std::size_t>{0}));
  // One above: the declared length passes the end of the file by one byte.
  auto above = exact;
  above[8] = std::byte(header.size() + 1);
  EXPECT_TRUE(rejects([&] { parse_npy<float>(above, "mem"); },
                      {"mem: header length: expected at most " + std::to_string(header.size()),
                       "got " + std::to_string(header.size() + 1)}));
  // One below: the length check passes; the last header byte becomes a payload byte.
  auto below = exact;
  below[8] = std::byte(header.size() - 1);
  EXPECT_TRUE(rejects([&] { parse_npy<float>(below, "mem"); }, {"mem: payload", "1 bytes left over"}));
  // Version 2.0 (4-byte length) at its largest declared length, beyond the input.
  auto v2 = npy_bytes(header, {}, 2);
  for (int i = 8; i < 12; ++i) v2[std::size_t(i)] = std::byte(0xFF);
  EXPECT_TRUE(rejects([&] { parse_npy<float>(v2, "mem"); }, {"mem: header length", "got 4294967295"}));
}

TEST(NpyBounds, DimensionsUpTo2To64Minus1) {
  // A zero dimension makes the tensor empty, so the largest dimensions need no data.
  const std::string max = std::to_string(std::numeric_limits<std::size_t>::max());
  EXPECT_EQ(max, "18446744073709551615");
  for (const std::string& dim : {max, std::string("18446744073709551614")}) {
    const Tensor<float> t = parse_npy<float>(npy_bytes(f4_header("(0, " + dim + ")"), {}), "mem");
    EXPECT_EQ(t.shape[1], std::stoull(dim));
  }
  EXPECT_TRUE(rejects([&] { parse_npy<float>(npy_bytes(f4_header("(0, 18446744073709551616)"), {}), "mem"); },
                      {"mem: shape: expected dimensions below 2^64 (overflow)", "18446744073709551616"}));
  EXPECT_TRUE(rejects([&] { parse_npy<float>(npy_bytes(f4_header("(0, 18446744073709551620)"), {}), "mem"); },
                      {"mem: shape: expected dimensions below 2^64 (overflow)"}));
}

TEST(NpyBounds, ElementCountAndByteCountFitIn64Bits) {
  const ReadOptions unlimited{.max_bytes = std::numeric_limits<std::uint64_t>::max()};
  const auto parse = [&](const std::string& shape) {
    return [&, shape] { parse_npy<float>(npy_bytes(f4_header(shape), {}), "mem", unlimited); };
  };
  // Elements: 2^64 - 1 = 3 · 5 · 17 · 257 · 641 · 65537 · 6700417 fits; 2^32 · 2^32 does not.
  EXPECT_TRUE(rejects(parse("(18446744073709551615, 1)"), {"size in bytes fits in 64 bits"}));
  EXPECT_TRUE(rejects(parse("(4294967296, 4294967296)"), {"element count fits in 64 bits"}));
  EXPECT_TRUE(rejects(parse("(4294967296, 4294967295)"), {"size in bytes fits in 64 bits"}));
  // Bytes of '<f4': 4 · (2^62 − 1) fits (the payload check comes next), 4 · 2^62 does not.
  EXPECT_TRUE(rejects(parse("(4611686018427387903,)"), {"mem: payload", "18446744073709551612 bytes"}));
  EXPECT_TRUE(rejects(parse("(4611686018427387902,)"), {"mem: payload"}));
  EXPECT_TRUE(rejects(parse("(4611686018427387904,)"), {"mem: shape", "size in bytes fits in 64 bits"}));
}

TEST(NpyBounds, MaxBytesIsInclusiveForStoredAndDecodedData) {
  const auto file = [](std::size_t n) {
    return npy_bytes(f4_header("(" + std::to_string(n) + ",)"),
                     float_bytes(std::vector<float>(n, 1.0f)));
  };
  // Stored and decoded as float: 4 bytes per element; max_bytes = 400.
  EXPECT_EQ(parse_npy<float>(file(100), "mem", {.max_bytes = 400}).data.size(), 100u);
  EXPECT_EQ(parse_npy<float>(file(99), "mem", {.max_bytes = 400}).data.size(), 99u);
  EXPECT_TRUE(rejects([&] { parse_npy<float>(file(101), "mem", {.max_bytes = 400}); },
                      {"mem: shape: expected at most max_bytes = 400", "got 404 bytes"}));
  // Decoded as double: 8 bytes per element count against the limit.
  EXPECT_EQ(parse_npy<double>(file(50), "mem", {.max_bytes = 400}).data.size(), 50u);
  EXPECT_EQ(parse_npy<double>(file(49), "mem", {.max_bytes = 400}).data.size(), 49u);
  EXPECT_TRUE(rejects([&] { parse_npy<double>(file(51), "mem", {.max_bytes = 400}); },
                      {"mem: shape: expected at most max_bytes = 400", "got 408 bytes"}));
}

TEST(NpyBounds, FileSizeUpToMaxBytes) {
  ScratchDir scratch;
  const std::string path = scratch.path("four.npy");
  write_npy(path, Tensor<float>{{4}, {1, 2, 3, 4}});
  const auto size = std::uint64_t(std::filesystem::file_size(path));
  EXPECT_EQ(read_npy<float>(path, {.max_bytes = size}).data.size(), 4u);
  EXPECT_EQ(read_npy<float>(path, {.max_bytes = size + 1}).data.size(), 4u);
  EXPECT_TRUE(rejects([&] { read_npy<float>(path, {.max_bytes = size - 1}); },
                      {path, "file size: expected at most max_bytes = " + std::to_string(size - 1),
                       "got " + std::to_string(size) + " bytes"}));
  // The mapping itself, directly: the limit is inclusive.
  EXPECT_EQ(MappedFile(path, size).bytes().size(), size);
  EXPECT_TRUE(rejects([&] { MappedFile(path, size - 1); }, {path, "file size"}));
}

TEST(NpyBounds, WriterUsesVersion1WhileTheHeaderLengthFitsIn16Bits) {
  // The writer pads magic (6) + version (2) + length (2) + dict + '\n' to a multiple of 64, so
  // version 1.0 holds dicts up to 65536 − 11 bytes (header length 65526 ≤ 65535); one byte more
  // needs 65600 bytes, a header length above 65535, hence version 2.0. Shapes (0, 1, ..., 1, D)
  // hold no data; D = 1, 10 or 100 sets the dict size to every byte count in the window.
  ScratchDir scratch;
  bool at_limit = false, above_limit = false;
  for (std::size_t rank = 21822; rank < 21827; ++rank) {
    for (const std::size_t last : {1, 10, 100}) {
      std::vector<std::size_t> shape(rank, 1);
      shape[0] = 0;
      shape.back() = last;
      std::string dims;
      for (std::size_t d : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
      const std::size_t dict = ("{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }").size();
      const std::size_t unpadded = 11 + dict;
      at_limit = at_limit || unpadded == 65536;
      above_limit = above_limit || unpadded == 65537;
      const std::string path = scratch.unique(".npy");
      write_npy(path, Tensor<float>{shape, {}});
      const auto bytes = read_bytes(path);
      SCOPED_TRACE("dict of " + std::to_string(dict) + " bytes");
      EXPECT_EQ(int(bytes[6]), unpadded <= 65536 ? 1 : 2);
      EXPECT_EQ(bytes.size() % 64, 0u);  // the (empty) data starts at a multiple of 64
      EXPECT_EQ(parse_npy<float>(bytes, path).shape, shape);
    }
  }
  EXPECT_TRUE(at_limit);
  EXPECT_TRUE(above_limit);
}

}  // namespace
}  // namespace subevict
