#include "core/dtype.hpp"

#include <Eigen/Core>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "core/input_error.hpp"

namespace subevict {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the readers and writers reinterpret little-endian file bytes in place");
static_assert(sizeof(std::size_t) == 8, "declared 64-bit sizes must fit in std::size_t");

constexpr std::size_t kMaxShownDims = 16;

/// Multiplies with an overflow flag instead of wrapping.
bool multiply_overflows(std::size_t a, std::size_t b, std::size_t& product) {
  if (b != 0 && a > std::numeric_limits<std::size_t>::max() / b) return true;
  product = a * b;
  return false;
}

/// binary64 -> binary32 with IEEE round-to-nearest-even, defined for every input: magnitudes at or
/// above FLT_MAX + half an ulp become +-Inf (a plain cast of such values is undefined in C++).
float narrow_to_float(double value) {
  constexpr double kMax = std::numeric_limits<float>::max();
  constexpr double kHalfUlpAtMax = 0x1p103;  // float's ulp at its largest binade is 2^104
  if (std::isfinite(value) && std::abs(value) > kMax) {
    const float magnitude = std::abs(value) >= kMax + kHalfUlpAtMax
                                ? std::numeric_limits<float>::infinity()
                                : std::numeric_limits<float>::max();
    return std::copysign(magnitude, static_cast<float>(std::signbit(value) ? -1 : 1));
  }
  return static_cast<float>(value);
}

template <class T>
T convert(float value) {
  return static_cast<T>(value);
}

template <class T>
T convert(double value) {
  if constexpr (std::is_same_v<T, float>) {
    return narrow_to_float(value);
  } else {
    return value;
  }
}

/// Reads each element's little-endian bits as `Bits`, maps them to a float or double with
/// `to_real`, and converts that to T.
template <class Bits, class T, class ToReal>
void decode_each(std::span<const std::byte> bytes, std::span<T> out, ToReal to_real) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    Bits bits;
    std::memcpy(&bits, bytes.data() + i * sizeof(Bits), sizeof(Bits));
    out[i] = convert<T>(to_real(bits));
  }
}

template <class T>
void decode_values(DType dtype, std::span<const std::byte> bytes, std::span<T> out) {
  if ((dtype == DType::kF32 && std::is_same_v<T, float>) ||
      (dtype == DType::kF64 && std::is_same_v<T, double>)) {
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
    return;
  }
  switch (dtype) {
    case DType::kF16:
      return decode_each<std::uint16_t>(bytes, out, [](std::uint16_t bits) {
        return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(bits));
      });
    case DType::kBF16:
      return decode_each<std::uint16_t>(bytes, out, [](std::uint16_t bits) {
        return static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(bits));
      });
    case DType::kF32:
      return decode_each<std::uint32_t>(
          bytes, out, [](std::uint32_t bits) { return std::bit_cast<float>(bits); });
    case DType::kF64:
      return decode_each<std::uint64_t>(
          bytes, out, [](std::uint64_t bits) { return std::bit_cast<double>(bits); });
  }
}

template <class T>
std::string describe_nonfinite(T value) {
  if (std::isnan(value)) return "NaN";
  return value > 0 ? "+Inf" : "-Inf";
}

}  // namespace

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kF32:
      return 4;
    case DType::kF64:
      return 8;
  }
  throw std::logic_error("dtype_size: invalid DType");
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
    case DType::kF32:
      return "F32";
    case DType::kF64:
      return "F64";
  }
  throw std::logic_error("dtype_name: invalid DType");
}

std::string shape_string(std::span<const std::size_t> shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size() && i < kMaxShownDims; ++i) {
    text += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  }
  if (shape.size() > kMaxShownDims) {
    text += ", ... (" + std::to_string(shape.size()) + " dimensions)";
  }
  return text + "]";
}

TensorLayout checked_layout(std::span<const std::size_t> shape, DType dtype,
                            std::size_t decoded_size, const std::string& source,
                            const std::string& field, const ReadOptions& options) {
  const std::string described = shape_string(shape) + " of " + std::string(dtype_name(dtype));
  TensorLayout layout{1, 0};
  bool empty = false;
  for (std::size_t dim : shape) empty = empty || dim == 0;
  if (empty) return {0, 0};
  for (std::size_t dim : shape) {
    if (multiply_overflows(layout.elements, dim, layout.elements)) {
      throw InputError(source, field, "a shape whose element count fits in 64 bits",
                       shape_string(shape) + " (overflow)");
    }
  }
  std::size_t decoded_bytes = 0;
  if (multiply_overflows(layout.elements, dtype_size(dtype), layout.stored_bytes) ||
      multiply_overflows(layout.elements, decoded_size, decoded_bytes)) {
    throw InputError(source, field, "a shape whose size in bytes fits in 64 bits",
                     described + " (overflow)");
  }
  const std::size_t largest = std::max(layout.stored_bytes, decoded_bytes);
  if (largest > options.max_bytes) {
    throw InputError(
        source, field,
        "at most max_bytes = " + std::to_string(options.max_bytes) + " bytes of tensor data",
        std::to_string(largest) + " bytes for " + described);
  }
  return layout;
}

TensorLayout checked_output_layout(std::span<const std::size_t> shape, DType dtype,
                                   std::size_t values, const std::string& path,
                                   const std::string& shape_field, const std::string& data_field) {
  const ReadOptions unlimited{.allow_nonfinite = true,
                              .max_bytes = std::numeric_limits<std::uint64_t>::max()};
  const TensorLayout layout =
      checked_layout(shape, dtype, dtype_size(dtype), path, shape_field, unlimited);
  if (layout.elements != values) {
    throw InputError(path, data_field,
                     std::to_string(layout.elements) + " values for shape " + shape_string(shape),
                     std::to_string(values) + " values");
  }
  return layout;
}

std::uint64_t read_little_endian(std::span<const std::byte> bytes) {
  std::uint64_t value = 0;
  for (std::size_t i = bytes.size(); i-- > 0;) value = (value << 8) | std::uint8_t(bytes[i]);
  return value;
}

void append_little_endian(std::uint64_t value, std::size_t size, std::string& out) {
  for (std::size_t i = 0; i < size; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

template <class T>
void check_finite(std::span<const T> values, const std::string& source, const std::string& field) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      throw InputError(source, field,
                       "finite values (NaN and Inf are rejected unless allowed: --allow-nonfinite)",
                       describe_nonfinite(values[i]) + " at element " + std::to_string(i));
    }
  }
}

template <class T>
Tensor<T> decode_tensor(std::vector<std::size_t> shape, DType dtype,
                        std::span<const std::byte> bytes, const std::string& source,
                        const std::string& field, const ReadOptions& options) {
  const std::size_t elements = element_count(shape);
  if (bytes.size() / dtype_size(dtype) != elements || bytes.size() % dtype_size(dtype) != 0) {
    throw std::logic_error("decode_tensor: byte count does not match the validated shape");
  }
  Tensor<T> tensor{std::move(shape), std::vector<T>(elements)};
  decode_values<T>(dtype, bytes, tensor.data);
  if (!options.allow_nonfinite) check_finite<T>(tensor.data, source, field);
  return tensor;
}

template Tensor<float> decode_tensor<float>(std::vector<std::size_t>, DType,
                                            std::span<const std::byte>, const std::string&,
                                            const std::string&, const ReadOptions&);
template Tensor<double> decode_tensor<double>(std::vector<std::size_t>, DType,
                                              std::span<const std::byte>, const std::string&,
                                              const std::string&, const ReadOptions&);
template void check_finite<float>(std::span<const float>, const std::string&, const std::string&);
template void check_finite<double>(std::span<const double>, const std::string&, const std::string&);

}  // namespace subevict
