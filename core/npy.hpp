#pragma once
/// \file
/// NumPy .npy files (format versions 1.0, 2.0 and 3.0), restricted to what subevict stores:
/// little-endian float32 ('<f4') and float64 ('<f8') arrays in C order.
///
/// Layout: the magic "\x93NUMPY", a version (major, minor), the header length (u16 LE for version
/// 1, u32 LE for versions 2 and 3), a header that is a Python dict literal with exactly the keys
/// 'descr', 'fortran_order' and 'shape' (padded with spaces and a newline), then the raw data.

#include <cstddef>
#include <span>
#include <string>

#include "core/read_options.hpp"
#include "core/tensor.hpp"

namespace subevict {

/// Parses a whole .npy file held in memory; `source_name` names it in error messages. T = float
/// or double; the stored dtype is converted (f4 -> double is exact; f8 -> float rounds to
/// nearest, and magnitudes beyond float's range become Inf, hence rejected unless allowed).
/// Validates everything and throws InputError(source_name, field, ...) on: a short or wrong magic,
/// a version other than 1.0/2.0/3.0, a header length beyond the input, a header that is not a
/// strict dict literal (quoted keys, True/False, integer tuples; trailing commas allowed), missing,
/// repeated or extra keys, a descr other than '<f4'/'<f8' (big-endian included), fortran_order
/// True, negative or non-integer dimensions, a (1-element) shape written without its comma, an
/// element count that overflows or whose data exceeds options.max_bytes, a payload shorter or
/// longer than the shape requires, and NaN/Inf values unless options.allow_nonfinite. Allocates
/// only after the declared size has been checked against the input's real size. O(file size).
template <class T>
Tensor<T> parse_npy(std::span<const std::byte> bytes, const std::string& source_name,
                    const ReadOptions& options = {});

/// Reads `path` (memory-mapped, no intermediate copy) with the checks of parse_npy; errors name
/// `path`. Also throws InputError if the file cannot be opened, is not a regular file, or is
/// larger than options.max_bytes.
template <class T>
Tensor<T> read_npy(const std::string& path, const ReadOptions& options = {});

/// Writes `tensor` as '<f4' (float) or '<f8' (double) in C order, format version 1.0, or 2.0 when
/// the header exceeds 65535 bytes (very high rank). The header is padded so the data starts at a
/// multiple of 64 bytes, as NumPy does. Atomic (see write_file_atomically): on failure nothing
/// is left at `path` beyond what was there. Throws InputError(path, ...) if the data size
/// disagrees with the shape or the file cannot be written. Values are written as given, NaN
/// included.
void write_npy(const std::string& path, TensorView<float> tensor);
/// The float64 ('<f8') overload of write_npy.
void write_npy(const std::string& path, TensorView<double> tensor);
/// Convenience overload: writes a whole Tensor<float>.
inline void write_npy(const std::string& path, const Tensor<float>& tensor) {
  write_npy(path, view(tensor));
}
/// Convenience overload: writes a whole Tensor<double>.
inline void write_npy(const std::string& path, const Tensor<double>& tensor) {
  write_npy(path, view(tensor));
}

extern template Tensor<float> parse_npy<float>(std::span<const std::byte>, const std::string&,
                                               const ReadOptions&);
extern template Tensor<double> parse_npy<double>(std::span<const std::byte>, const std::string&,
                                                 const ReadOptions&);
extern template Tensor<float> read_npy<float>(const std::string&, const ReadOptions&);
extern template Tensor<double> read_npy<double>(const std::string&, const ReadOptions&);

}  // namespace subevict
