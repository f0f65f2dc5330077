#pragma once
/// \file
/// .safetensors files (https://github.com/huggingface/safetensors): an 8-byte little-endian header
/// length N, N bytes of JSON
///   {"NAME": {"dtype": "F32", "shape": [d0, ...], "data_offsets": [begin, end]}, ...,
///    "__metadata__": {"key": "value", ...}}
/// (optionally padded with spaces), then the data buffer; offsets are relative to the buffer.
/// subevict reads F32, F16, BF16 and F64 tensors (converted to float) and writes F32.

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "core/read_options.hpp"
#include "core/tensor.hpp"

namespace subevict {

/// Largest accepted JSON header, as in the reference implementation (a guard against absurd
/// lengths, checked before anything is allocated).
inline constexpr std::uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

/// The contents of a .safetensors file: every tensor converted to float, and the string-to-string
/// `__metadata__` (empty when the file has none).
struct SafetensorsFile {
  std::map<std::string, Tensor<float>> tensors;
  std::map<std::string, std::string> metadata;
};

/// Parses a whole .safetensors file held in memory; `source_name` names it in error messages.
/// F16 and BF16 widen exactly, F64 narrows as IEEE conversion does (magnitudes beyond float's
/// range become Inf). Throws InputError(source_name, field, ...) on: fewer than 8 bytes, a header
/// length above kMaxSafetensorsHeaderBytes or beyond the input, invalid JSON (UTF-8 included),
/// a header that is not an object, repeated keys, nesting deeper than the format uses, an empty
/// tensor name, a tensor entry that is not an object with exactly dtype, shape and data_offsets,
/// an unknown dtype, dimensions or offsets that are not non-negative integers, data_offsets not of
/// the form [begin, end] with begin <= end <= buffer size and end - begin equal to the shape's
/// byte count, an element count that overflows or whose data exceeds options.max_bytes,
/// overlapping tensors, gaps between tensors or bytes left over after the last one (the buffer
/// must be covered exactly), a `__metadata__` that is not an object of strings, and NaN/Inf
/// values unless options.allow_nonfinite. Fields are named like "tensor 'layers.0.q':
/// data_offsets". Allocates tensor data only after checking it against the real input size.
SafetensorsFile parse_safetensors(std::span<const std::byte> bytes, const std::string& source_name,
                                  const ReadOptions& options = {});

/// Reads `path` (memory-mapped) with the checks of parse_safetensors; errors name `path`. Also
/// throws InputError if the file cannot be opened, is not a regular file, or exceeds
/// options.max_bytes.
SafetensorsFile read_safetensors(const std::string& path, const ReadOptions& options = {});

/// Writes the tensors as F32 in name order, contiguous, the data starting at a multiple of 8
/// bytes (the JSON is padded with spaces), and `metadata` as `__metadata__` when not empty.
/// Atomic (see write_file_atomically). Throws InputError(path, ...) if a name is empty or
/// "__metadata__", a tensor's data size disagrees with its shape, a name or metadata string is
/// not valid UTF-8, or the file cannot be written. Values are written as given, NaN included.
void write_safetensors(const std::string& path,
                       const std::map<std::string, TensorView<float>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

/// Convenience overload of write_safetensors for owned tensors.
void write_safetensors(const std::string& path, const std::map<std::string, Tensor<float>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace subevict
