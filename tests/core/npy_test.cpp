#include "core/npy.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

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

}  // namespace
}  // namespace subevict
