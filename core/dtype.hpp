#pragma once
/// \file
/// Element types stored in tensor files, their decoding to float or double, and the checks that
/// every reader shares (element counts, size limits, finiteness). Used by npy.cpp and
/// safetensors.cpp so that both formats accept and reject exactly the same things.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/read_options.hpp"
#include "core/tensor.hpp"

namespace subevict {

/// Floating-point element types the readers decode, all stored little-endian: IEEE binary16,
/// bfloat16 (the top half of a binary32), binary32, binary64.
enum class DType { kF16, kBF16, kF32, kF64 };

/// Bytes per stored element: 2, 2, 4, 8.
std::size_t dtype_size(DType dtype);

/// The safetensors spelling: "F16", "BF16", "F32", "F64".
std::string_view dtype_name(DType dtype);

/// How shapes appear in error messages: "[2, 3]", "[]" for rank 0; ranks above 16 are abridged.
std::string shape_string(std::span<const std::size_t> shape);

/// Sizes of a declared shape that passed checked_layout.
struct TensorLayout {
  std::size_t elements = 0;      ///< product of the dimensions (0 if any dimension is 0)
  std::size_t stored_bytes = 0;  ///< elements * dtype_size(dtype): bytes the file must hold
};

/// Validates a declared shape before anything is allocated from it. The element count and the
/// stored byte count must fit in 64 bits, and both the stored bytes and the decoded bytes
/// (elements * decoded_size) must not exceed options.max_bytes. A shape with a zero dimension has 0
/// elements, whatever its other dimensions. Throws InputError(source, field, ...) naming the
/// violated bound. O(rank).
TensorLayout checked_layout(std::span<const std::size_t> shape, DType dtype,
                            std::size_t decoded_size, const std::string& source,
                            const std::string& field, const ReadOptions& options);

/// For writers: the layout of `shape` stored as `dtype`, with no size limit, after checking that
/// the data holds exactly its element count (`values`). Throws InputError(path, ...) on an
/// overflowing shape, and InputError(path, data_field, ...) on a count mismatch.
TensorLayout checked_output_layout(std::span<const std::size_t> shape, DType dtype,
                                   std::size_t values, const std::string& path,
                                   const std::string& shape_field, const std::string& data_field);

/// The unsigned little-endian integer stored in `bytes` (at most 8 of them).
std::uint64_t read_little_endian(std::span<const std::byte> bytes);

/// Appends the `size` (<= 8) low-order bytes of `value` to `out`, least significant first.
void append_little_endian(std::uint64_t value, std::size_t size, std::string& out);

/// Decodes `bytes` (little-endian elements of `dtype`, C order) into a Tensor<T> of `shape`, for
/// T = float or double. Widening is exact; narrowing binary64 to float rounds to nearest (ties to
/// even) and turns magnitudes beyond float's range into +-Inf, as IEEE 754 conversion does. Then
/// enforces finiteness unless options.allow_nonfinite (see check_finite). Precondition, checked
/// (std::logic_error): bytes.size() == element_count(shape) * dtype_size(dtype), i.e. the caller
/// has validated the shape with checked_layout and the byte range against the real input. O(n).
template <class T>
Tensor<T> decode_tensor(std::vector<std::size_t> shape, DType dtype,
                        std::span<const std::byte> bytes, const std::string& source,
                        const std::string& field, const ReadOptions& options);

/// Throws InputError(source, field, "finite values ...", "NaN at element i") naming the first
/// NaN, +Inf or -Inf (by flat C-order index). O(n).
template <class T>
void check_finite(std::span<const T> values, const std::string& source, const std::string& field);

extern template Tensor<float> decode_tensor<float>(std::vector<std::size_t>, DType,
                                                   std::span<const std::byte>, const std::string&,
                                                   const std::string&, const ReadOptions&);
extern template Tensor<double> decode_tensor<double>(std::vector<std::size_t>, DType,
                                                     std::span<const std::byte>, const std::string&,
                                                     const std::string&, const ReadOptions&);
extern template void check_finite<float>(std::span<const float>, const std::string&,
                                         const std::string&);
extern template void check_finite<double>(std::span<const double>, const std::string&,
                                          const std::string&);

}  // namespace subevict
