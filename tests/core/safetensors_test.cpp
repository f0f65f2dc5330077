#include "core/safetensors.hpp"

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

constexpr float kInf = std::numeric_limits<float>::infinity();
/// Known binary16 values: largest finite (2 - 2^-10) * 2^15 and smallest subnormal 2^-24.
constexpr float kF16MaxFinite = 65504.0f;
const float kF16SmallestSubnormal = std::ldexp(1.0f, -24);
/// Known bfloat16 values: largest finite (2 - 2^-7) * 2^127 = 255 * 2^120 and smallest
/// subnormal 2^-133.
const float kBF16MaxFinite = std::ldexp(255.0f, 120);
const float kBF16SmallestSubnormal = std::ldexp(1.0f, -133);
/// Where the data buffer must start: the writer pads the header to a multiple of 8 bytes.
constexpr std::size_t kDataAlignment = 8;

/// A .safetensors file from literal header JSON and raw buffer bytes.
std::vector<std::byte> safetensors_bytes(const std::string& header,
                                         const std::vector<std::byte>& buffer) {
  std::string text(8, '\0');
  for (std::size_t i = 0; i < 8; ++i) text[i] = static_cast<char>(header.size() >> (8 * i));
  text += header;
  std::vector<std::byte> bytes = testing::to_bytes(text);
  bytes.insert(bytes.end(), buffer.begin(), buffer.end());
  return bytes;
}

/// A file holding one 16-bit tensor "t" of the given dtype with these little-endian patterns.
std::vector<std::byte> sixteen_bit_file(const std::string& dtype,
                                        const std::vector<std::uint16_t>& patterns) {
  std::vector<std::byte> buffer(patterns.size() * 2);
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    buffer[2 * i] = std::byte(patterns[i] & 0xFF);
    buffer[2 * i + 1] = std::byte(patterns[i] >> 8);
  }
  const std::string header = "{\"t\":{\"dtype\":\"" + dtype + "\",\"shape\":[" +
                             std::to_string(patterns.size()) + "],\"data_offsets\":[0," +
                             std::to_string(buffer.size()) + "]}}";
  return safetensors_bytes(header, buffer);
}

std::vector<float> decode(const std::string& dtype, const std::vector<std::uint16_t>& patterns,
                          const ReadOptions& options = {}) {
  return parse_safetensors(sixteen_bit_file(dtype, patterns), "mem", options).tensors.at("t").data;
}

RC_GTEST_PROP(SafetensorsRoundTrip, TensorsAndMetadataAreBitExact, ()) {
  static ScratchDir scratch;
  const auto names = *rc::gen::container<std::set<std::string>>(
      rc::gen::element<std::string>("a", "layers.0.q", "layers.10.v", "x y",
                                    "\xc3\xbc"
                                    "ber",
                                    "z"));
  std::map<std::string, Tensor<float>> tensors;
  for (const std::string& name : names) {
    Tensor<float> tensor;
    tensor.shape = *testing::small_shape();
    tensor.data = *rc::gen::container<std::vector<float>>(element_count(tensor.shape),
                                                          testing::finite_value<float>());
    tensors.emplace(name, std::move(tensor));
  }
  const auto ascii = rc::gen::container<std::string>(
      rc::gen::map(rc::gen::inRange(0, 128), [](int c) { return static_cast<char>(c); }));
  const auto metadata = *rc::gen::container<std::map<std::string, std::string>>(ascii, ascii);
  const std::string path = scratch.unique(".safetensors");
  write_safetensors(path, tensors, metadata);
  const SafetensorsFile read = read_safetensors(path);
  RC_ASSERT(read.metadata == metadata);
  RC_ASSERT(read.tensors.size() == tensors.size());
  for (const auto& [name, tensor] : tensors) {
    RC_ASSERT(read.tensors.at(name).shape == tensor.shape);
    RC_ASSERT(bits(read.tensors.at(name).data) == bits(tensor.data));
  }
}

TEST(SafetensorsDecode, F16KnownBitPatterns) {
  const std::vector<float> values = decode("F16", {0x3C00, 0xC000, 0x0001, 0x7BFF, 0x8000});
  const std::vector<float> expected = {1.0f, -2.0f, kF16SmallestSubnormal, kF16MaxFinite, -0.0f};
  EXPECT_EQ(bits(values), bits(expected));
}

TEST(SafetensorsDecode, BF16KnownBitPatterns) {
  const std::vector<float> values = decode("BF16", {0x3F80, 0xC000, 0x0001, 0x7F7F, 0x8000});
  const std::vector<float> expected = {1.0f, -2.0f, kBF16SmallestSubnormal, kBF16MaxFinite, -0.0f};
  EXPECT_EQ(bits(values), bits(expected));
}

TEST(SafetensorsDecode, InfinityIsRejectedByDefaultAndAcceptedWithOptIn) {
  for (const auto& [dtype, positive, negative] :
       {std::tuple<std::string, std::uint16_t, std::uint16_t>{"F16", 0x7C00, 0xFC00},
        {"BF16", 0x7F80, 0xFF80}}) {
    EXPECT_TRUE(rejects(
        [&] {
          decode(dtype, {0x0000, positive});
        },
        {"mem: tensor 't': values", "+Inf at element 1"}))
        << dtype;
    EXPECT_EQ(decode(dtype, {positive, negative}, {.allow_nonfinite = true}),
              (std::vector<float>{kInf, -kInf}))
        << dtype;
  }
}

TEST(SafetensorsDecode, F64NarrowsToNearestFloat) {
  std::vector<std::byte> buffer(16);
  const double values[2] = {0.1, -1e300};
  std::memcpy(buffer.data(), values, sizeof(values));
  const auto file =
      safetensors_bytes(R"({"d":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})", buffer);
  EXPECT_TRUE(rejects([&] { parse_safetensors(file, "mem"); }, {"-Inf at element 1"}));
  EXPECT_EQ(parse_safetensors(file, "mem", {.allow_nonfinite = true}).tensors.at("d").data,
            (std::vector<float>{static_cast<float>(0.1), -kInf}));
}

TEST(SafetensorsRead, IndependentlyWrittenReferenceFile) {
  const SafetensorsFile file = read_safetensors(kValidDataDir + "/reference_f16_bf16.safetensors");
  EXPECT_EQ(file.metadata, (std::map<std::string, std::string>{{"producer", "make_valid.py"}}));
  ASSERT_EQ(file.tensors.size(), 5u);
  EXPECT_EQ(file.tensors.at("half"), (Tensor<float>{{2, 2}, {1.0f, -2.0f, 0.5f, kF16MaxFinite}}));
  EXPECT_EQ(file.tensors.at("brain"), (Tensor<float>{{3}, {1.0f, -2.0f, 3.140625f}}));
  EXPECT_EQ(file.tensors.at("single"), (Tensor<float>{{2}, {0.25f, -0.001f}}));
  EXPECT_EQ(file.tensors.at("double"), (Tensor<float>{{}, {static_cast<float>(0.1)}}));
  EXPECT_EQ(file.tensors.at("empty"), (Tensor<float>{{0, 3}, {}}));
}

TEST(SafetensorsWrite, DataIsAlignedContiguousAndInNameOrder) {
  ScratchDir scratch;
  const std::string path = scratch.path("layout.safetensors");
  write_safetensors(
      path, std::map<std::string, Tensor<float>>{{"b", {{1}, {2.0f}}}, {"a", {{3}, {1, 1, 1}}}});
  const std::vector<std::byte> bytes = read_bytes(path);
  std::uint64_t header_length = 0;
  std::memcpy(&header_length, bytes.data(), 8);
  EXPECT_EQ((8 + header_length) % kDataAlignment, 0u);
  EXPECT_EQ(bytes.size(), 8 + header_length + 16);
  const std::string header(reinterpret_cast<const char*>(bytes.data()) + 8, header_length);
  EXPECT_NE(header.find(R"("a":{"data_offsets":[0,12])"), std::string::npos) << header;
  EXPECT_NE(header.find(R"("b":{"data_offsets":[12,16])"), std::string::npos) << header;
  EXPECT_EQ(header.find("__metadata__"), std::string::npos) << "no metadata, no key";
}

TEST(SafetensorsWrite, RejectsWhatCannotBeRepresented) {
  ScratchDir scratch;
  const std::string path = scratch.path("bad.safetensors");
  using Tensors = std::map<std::string, Tensor<float>>;
  EXPECT_TRUE(rejects(
      [&] {
        write_safetensors(path, Tensors{{"__metadata__", {{1}, {1}}}});
      },
      {path, "a non-empty name other than __metadata__"}));
  EXPECT_TRUE(rejects([&] { write_safetensors(path, Tensors{{"", {{1}, {1}}}}); }, {path}));
  EXPECT_TRUE(rejects(
      [&] {
        write_safetensors(path, Tensors{{"t", {{2, 2}, {1}}}});
      },
      {"tensor 't': data: expected 4 values for shape [2, 2], got 1 values"}));
  EXPECT_TRUE(rejects(
      [&] {
        write_safetensors(path, Tensors{}, {{"k", "\xff"}});
      },
      {path, "header: expected UTF-8"}));
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(SafetensorsRead, AcceptsHeaderPaddingAndZeroSizedTensorsAnywhere) {
  const auto file = safetensors_bytes(R"({"e":{"dtype":"BF16","shape":[0],"data_offsets":[4,4]},)"
                                      R"("f":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})"
                                      "      ",
                                      testing::to_bytes(std::string("\x00\x00\x80\x3f", 4)));
  const SafetensorsFile read = parse_safetensors(file, "mem");
  EXPECT_EQ(read.tensors.at("f").data, std::vector<float>{1.0f});
  EXPECT_TRUE(read.tensors.at("e").data.empty());
  EXPECT_TRUE(read.metadata.empty());
}

TEST(SafetensorsRead, MaxBytesBoundsTheFileAndEachTensor) {
  ScratchDir scratch;
  const std::string path = scratch.path("limit.safetensors");
  write_safetensors(path, std::map<std::string, Tensor<float>>{{"t", {{4}, {1, 2, 3, 4}}}});
  const auto size = std::filesystem::file_size(path);
  EXPECT_TRUE(rejects([&] { read_safetensors(path, {.max_bytes = size - 1}); },
                      {path, "file size: expected at most max_bytes"}));
  const auto bytes = read_bytes(path);
  EXPECT_TRUE(rejects([&] { parse_safetensors(bytes, "mem", {.max_bytes = 15}); },
                      {"tensor 't': shape: expected at most max_bytes = 15", "got 16 bytes"}));
  EXPECT_EQ(parse_safetensors(bytes, "mem", {.max_bytes = 16}).tensors.at("t").data.size(), 4u);
}

TEST(SafetensorsRead, NamesTheTensorAndFieldThatIsWrong) {
  const auto buffer = testing::to_bytes(std::string(8, '\0'));
  EXPECT_TRUE(rejects(
      [&] {
        parse_safetensors(
            safetensors_bytes(R"({"layers.0.q":{"dtype":"F32","shape":[2],"data_offsets":[0,9]}})",
                              buffer),
            "w.safetensors");
      },
      {"w.safetensors: tensor 'layers.0.q': data_offsets: expected end <= 8"}));
  EXPECT_TRUE(rejects(
      [&] {
        parse_safetensors(
            safetensors_bytes(R"({"q":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                              R"("r":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                              buffer),
            "w.safetensors");
      },
      {"tensor 'r': data_offsets: expected no overlap", "the end of tensor 'q'"}));
  EXPECT_TRUE(rejects(
      [&] {
        parse_safetensors(safetensors_bytes(R"({"__metadata__":{"a":"1","a":"2"}})", {}),
                          "w.safetensors");
      },
      {"header: expected each key once, got 'a' repeated"}));
}

TEST(SafetensorsRead, EveryTruncationOfAValidFileIsRejected) {
  ScratchDir scratch;
  const std::string path = scratch.path("valid.safetensors");
  write_safetensors(path, std::map<std::string, Tensor<float>>{{"a", {{2}, {1, 2}}}}, {{"k", "v"}});
  const std::vector<std::byte> bytes = read_bytes(path);
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    const std::span<const std::byte> prefix(bytes.data(), size);
    EXPECT_TRUE(rejects([&] { parse_safetensors(prefix, "cut"); }, {"cut: "}))
        << "prefix of " << size << " bytes";
  }
}

// Boundaries of every size check, each at the limit (accepted), one below (accepted) and one
// above (rejected, naming the field); "accepted" for a check means that what follows it runs.

/// The header of one tensor "t".
std::string one_tensor(const std::string& dtype, const std::string& shape, std::uint64_t begin,
                       std::uint64_t end) {
  return "{\"t\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
         std::to_string(begin) + "," + std::to_string(end) + "]}}";
}

TEST(SafetensorsBounds, LengthPrefixNeedsEightBytes) {
  EXPECT_TRUE(rejects([] { parse_safetensors(std::vector<std::byte>(7), "mem"); },
                      {"mem: header length", "a 7-byte file"}));
  // Eight zero bytes: a complete length (0), so the error moves on to the (empty) JSON.
  EXPECT_TRUE(rejects([] { parse_safetensors(std::vector<std::byte>(8), "mem"); }, {"mem: header: expected valid JSON"}));
}

TEST(SafetensorsBounds, HeaderLengthUpToTheLimitAndTheBytesLeft) {
  const auto declaring = [](std::uint64_t length) {
    std::vector<std::byte> bytes(16);
    for (std::size_t i = 0; i < 8; ++i) bytes[i] = std::byte((length >> (8 * i)) & 0xFF);
    return bytes;
  };
  const std::string left = "at most 8 (the bytes left in the file)";
  // The 100 MB limit is checked first: at and below it, a short input fails the next check.
  for (std::uint64_t length : {kMaxSafetensorsHeaderBytes, kMaxSafetensorsHeaderBytes - 1}) {
    EXPECT_TRUE(rejects([&] { parse_safetensors(declaring(length), "mem"); }, {"mem: header length", left}));
  }
  EXPECT_TRUE(rejects([&] { parse_safetensors(declaring(kMaxSafetensorsHeaderBytes + 1), "mem"); },
                      {"mem: header length: expected at most 100000000 bytes", "got 100000001"}));
  // The header may end exactly at the end of the file (no data), not one byte later.
  const std::string header = "{}      ";
  auto exact = safetensors_bytes(header, {});
  EXPECT_TRUE(parse_safetensors(exact, "mem").tensors.empty());
  exact[0] = std::byte(header.size() + 1);
  EXPECT_TRUE(rejects([&] { parse_safetensors(exact, "mem"); },
                      {"mem: header length: expected at most 8 (the bytes left in the file)", "got 9"}));
  exact[0] = std::byte(header.size() - 1);  // one byte of padding becomes an unclaimed buffer byte
  EXPECT_TRUE(rejects([&] { parse_safetensors(exact, "mem"); }, {"mem: payload", "1 bytes left over"}));
}

TEST(SafetensorsBounds, JsonNestingUpToThreeLevels) {
  // {tensor: {"shape": [...]}} is three levels: accepted. A fourth is rejected before parsing.
  EXPECT_EQ(parse_safetensors(safetensors_bytes(one_tensor("F32", "[0]", 0, 0), {}), "mem").tensors.size(), 1u);
  EXPECT_TRUE(rejects([] { parse_safetensors(safetensors_bytes(one_tensor("F32", "[[0]]", 0, 0), {}), "mem"); },
                      {"mem: header: expected JSON nested at most 3 levels deep"}));
  // Brackets inside strings do not count.
  EXPECT_EQ(parse_safetensors(safetensors_bytes("{\"__metadata__\":{\"[[[[\":\"{{{{\"}}", {}), "mem")
                .metadata.at("[[[["),
            "{{{{");
}

TEST(SafetensorsBounds, DataOffsetsWithinTheBufferAndExactlyTheTensorsSize) {
  const auto buffer = [](std::size_t n) { return std::vector<std::byte>(n, std::byte(0)); };
  // A 2-element F32 tensor needs exactly 8 bytes; the buffer is 8 bytes long.
  EXPECT_EQ(parse_safetensors(safetensors_bytes(one_tensor("F32", "[2]", 0, 8), buffer(8)), "mem").tensors.at("t").data.size(), 2u);
  EXPECT_TRUE(rejects([&] { parse_safetensors(safetensors_bytes(one_tensor("F32", "[2]", 1, 9), buffer(8)), "mem"); },
                      {"tensor 't': data_offsets: expected end <= 8 (the size of the data buffer)", "[1, 9]"}));
  EXPECT_TRUE(rejects([&] { parse_safetensors(safetensors_bytes(one_tensor("F32", "[2]", 0, 7), buffer(8)), "mem"); },
                      {"tensor 't': data_offsets: expected end - begin = 8 bytes", "(7 bytes)"}));
  EXPECT_TRUE(rejects([&] { parse_safetensors(safetensors_bytes(one_tensor("F32", "[2]", 0, 9), buffer(9)), "mem"); },
                      {"tensor 't': data_offsets: expected end - begin = 8 bytes", "(9 bytes)"}));
  // begin = end is an empty tensor; begin = end + 1 is rejected.
  EXPECT_TRUE(parse_safetensors(safetensors_bytes(one_tensor("F32", "[0]", 0, 0), {}), "mem").tensors.at("t").data.empty());
  EXPECT_TRUE(rejects([&] { parse_safetensors(safetensors_bytes(one_tensor("F32", "[0]", 1, 0), buffer(1)), "mem"); },
                      {"tensor 't': data_offsets: expected begin <= end", "[1, 0]"}));
}

TEST(SafetensorsBounds, DimensionsAndOffsetsUpTo2To64Minus1) {
  EXPECT_EQ(parse_safetensors(safetensors_bytes(one_tensor("F32", "[0,18446744073709551615]", 0, 0), {}), "mem")
                .tensors.at("t").shape[1],
            std::numeric_limits<std::size_t>::max());
  EXPECT_TRUE(rejects([] { parse_safetensors(safetensors_bytes(one_tensor("F32", "[0,18446744073709551616]", 0, 0), {}), "mem"); },
                      {"tensor 't': shape: expected an array of non-negative integers"}));
  // An offset of 2^64 - 1 is a number (then too far), 2^64 is not an integer any more.
  EXPECT_TRUE(rejects([] { parse_safetensors(safetensors_bytes(one_tensor("F32", "[0]", 18446744073709551615u, 18446744073709551615u), {}), "mem"); },
                      {"tensor 't': data_offsets: expected end <= 0"}));
  const std::string huge = "{\"t\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,18446744073709551616]}}";
  EXPECT_TRUE(rejects([&] { parse_safetensors(safetensors_bytes(huge, {}), "mem"); },
                      {"tensor 't': data_offsets: expected [begin, end], non-negative integers"}));
}

TEST(SafetensorsBounds, MaxBytesIsInclusiveForStoredAndDecodedData) {
  const auto file = [](const std::string& dtype, std::size_t elements, std::size_t size) {
    return safetensors_bytes(one_tensor(dtype, "[" + std::to_string(elements) + "]", 0, elements * size),
                             std::vector<std::byte>(elements * size, std::byte(0)));
  };
  // F64: 8 stored bytes per element dominate the 4 decoded ones. 50 elements = 400 bytes.
  for (std::uint64_t limit : {400u, 401u}) {
    EXPECT_EQ(parse_safetensors(file("F64", 50, 8), "mem", {.max_bytes = limit}).tensors.at("t").data.size(), 50u);
  }
  EXPECT_TRUE(rejects([&] { parse_safetensors(file("F64", 50, 8), "mem", {.max_bytes = 399}); },
                      {"tensor 't': shape: expected at most max_bytes = 399", "got 400 bytes"}));
  // F16: the 4 decoded bytes per element dominate the 2 stored ones. 100 elements = 400 bytes.
  for (std::uint64_t limit : {400u, 401u}) {
    EXPECT_EQ(parse_safetensors(file("F16", 100, 2), "mem", {.max_bytes = limit}).tensors.at("t").data.size(), 100u);
  }
  EXPECT_TRUE(rejects([&] { parse_safetensors(file("F16", 100, 2), "mem", {.max_bytes = 399}); },
                      {"tensor 't': shape: expected at most max_bytes = 399", "got 400 bytes"}));
}

}  // namespace
}  // namespace subevict
