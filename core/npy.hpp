#pragma once
/// \file
/// NumPy .npy files (format versions 1.0, 2.0 and 3.0), restricted to what subevict stores:
/// little-endian float32 ('<f4') and float64 ('<f8') arrays in C order, and integer or boolean
/// arrays (parse_npy_integers: eviction schedules and keep masks).
///
/// Layout: the magic "\x93NUMPY", a version (major, minor), the header length (u16 LE for version
/// 1, u32 LE for versions 2 and 3), a header that is a Python dict literal with exactly the keys
/// 'descr', 'fortran_order' and 'shape' (padded with spaces and a newline), then the raw data.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

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

/// The shape a .npy file declares, from its header alone (magic, version and header checked as
/// parse_npy does; the dtype and payload are not examined). Lets a reader pick an element type by
/// rank before decoding. O(header size).
std::vector<std::size_t> npy_shape(std::span<const std::byte> bytes, const std::string& source_name);

/// Integer and boolean arrays (eviction schedules, keep masks), decoded to T = std::int64_t or
/// std::uint8_t. Accepted descr: '|b1' (bool), '|i1', '|u1' (also spelled with '<'), and
/// little-endian '<i2', '<u2', '<i4', '<u4', '<i8', '<u8'. Throws InputError(source_name, field,
/// ...) as parse_npy does for the container (magic, version, header, fortran_order, shape, size
/// limits, payload length), for any other descr (floats, big-endian), for a bool byte other than 0
/// or 1, and for the first element outside T's range ("values", naming its flat C-order index).
/// O(file size).
template <class T>
Tensor<T> parse_npy_integers(std::span<const std::byte> bytes, const std::string& source_name,
                             const ReadOptions& options = {});

/// Reads `path` (memory-mapped) with the checks of parse_npy_integers; errors name `path`.
template <class T>
Tensor<T> read_npy_integers(const std::string& path, const ReadOptions& options = {});

/// Writes `tensor` as '<i8' (int64) in C order, atomically, with the layout rules of write_npy.
void write_npy(const std::string& path, TensorView<std::int64_t> tensor);
/// Writes `tensor` as '|u1' (uint8) in C order, atomically, with the layout rules of write_npy.
void write_npy(const std::string& path, TensorView<std::uint8_t> tensor);

/// The bytes write_npy would store for an int64 tensor ('<i8'), for callers that publish files
/// themselves. Throws InputError(name, ...) when the data size disagrees with the shape.
std::string npy_file_bytes(const std::string& name, TensorView<std::int64_t> tensor);

extern template Tensor<std::int64_t> parse_npy_integers<std::int64_t>(std::span<const std::byte>,
                                                                      const std::string&,
                                                                      const ReadOptions&);
extern template Tensor<std::uint8_t> parse_npy_integers<std::uint8_t>(std::span<const std::byte>,
                                                                      const std::string&,
                                                                      const ReadOptions&);
extern template Tensor<std::int64_t> read_npy_integers<std::int64_t>(const std::string&,
                                                                     const ReadOptions&);
extern template Tensor<std::uint8_t> read_npy_integers<std::uint8_t>(const std::string&,
                                                                     const ReadOptions&);
extern template Tensor<float> parse_npy<float>(std::span<const std::byte>, const std::string&,
                                               const ReadOptions&);
extern template Tensor<double> parse_npy<double>(std::span<const std::byte>, const std::string&,
                                                 const ReadOptions&);
extern template Tensor<float> read_npy<float>(const std::string&, const ReadOptions&);
extern template Tensor<double> read_npy<double>(const std::string&, const ReadOptions&);

}  // namespace subevict
