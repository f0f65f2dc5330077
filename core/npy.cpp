#include "core/npy.hpp"

#include <array>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>
#include <algorithm>

#include "core/atomic_file.hpp"
#include "core/dtype.hpp"
#include "core/input_error.hpp"
#include "core/mapped_file.hpp"

namespace subevict {
namespace {

constexpr std::array<unsigned char, 6> kMagic = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::size_t kPreambleSize = 8;  // magic + major + minor
constexpr std::size_t kDataAlignment = 64;
constexpr std::uint64_t kMaxV1HeaderLength = 0xFFFF;
constexpr std::uint64_t kMaxV2HeaderLength = 0xFFFFFFFF;

/// The parts of a .npy file around its header text.
struct Sections {
  std::string_view header;
  std::span<const std::byte> payload;
};

/// The header dict's values; each present exactly once after a successful parse.
struct NpyHeader {
  std::optional<std::string> descr;
  std::optional<bool> fortran_order;
  std::optional<std::vector<std::size_t>> shape;
};

/// 'text' (built by appending: GCC 12 warns spuriously about "'" + std::string(...)).
std::string quoted(std::string_view text) {
  std::string result;
  result.reserve(text.size() + 2);
  result += '\'';
  result += text;
  result += '\'';
  return result;
}

std::string hex_bytes(std::span<const std::byte> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  for (std::byte b : bytes) {
    const auto v = std::uint8_t(b);
    if (!text.empty()) text += ' ';
    text += kDigits[v >> 4];
    text += kDigits[v & 15];
  }
  return text;
}

/// A character as error messages show it: 'x' when printable ASCII, \xNN otherwise.
std::string show_char(char c) {
  const auto v = static_cast<unsigned char>(c);
  if (v >= 0x20 && v < 0x7f) return std::string("'") + c + "'";
  return "\\x" + hex_bytes(std::span<const std::byte>(reinterpret_cast<const std::byte*>(&c), 1));
}

void check_magic_and_version(std::span<const std::byte> bytes, const std::string& source) {
  if (bytes.size() < kMagic.size() || std::memcmp(bytes.data(), kMagic.data(), kMagic.size())) {
    throw InputError(source, "magic", "the 6 bytes \\x93NUMPY that start every .npy file",
                     bytes.size() < kMagic.size()
                         ? "a " + std::to_string(bytes.size()) + "-byte file"
                         : "bytes " + hex_bytes(bytes.first(kMagic.size())));
  }
  if (bytes.size() < kPreambleSize) {
    throw InputError(source, "version", "2 version bytes after the magic", "end of file");
  }
  const auto major = std::uint8_t(bytes[6]);
  const auto minor = std::uint8_t(bytes[7]);
  if (major < 1 || major > 3 || minor != 0) {
    throw InputError(source, "version", "1.0, 2.0 or 3.0",
                     std::to_string(major) + "." + std::to_string(minor));
  }
}

Sections split_sections(std::span<const std::byte> bytes, const std::string& source) {
  check_magic_and_version(bytes, source);
  const std::size_t length_size = std::uint8_t(bytes[6]) == 1 ? 2 : 4;
  const std::size_t header_start = kPreambleSize + length_size;
  if (bytes.size() < header_start) {
    throw InputError(source, "header length",
                     "a " + std::to_string(length_size) + "-byte little-endian header length",
                     "end of file");
  }
  const std::uint64_t header_length = read_little_endian(bytes.subspan(kPreambleSize, length_size));
  const std::size_t available = bytes.size() - header_start;
  if (header_length > available) {
    throw InputError(source, "header length",
                     "at most " + std::to_string(available) + " (the bytes left in the file)",
                     std::to_string(header_length));
  }
  return {{reinterpret_cast<const char*>(bytes.data() + header_start), header_length},
          bytes.subspan(header_start + header_length)};
}

/// Strict recursive-descent parser for the header: a Python dict literal whose keys are exactly
/// 'descr' (a string), 'fortran_order' (True or False) and 'shape' (a tuple of non-negative
/// integers), in any order, with optional trailing commas and whitespace anywhere between tokens.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  NpyHeader parse() {
    NpyHeader header;
    skip_space();
    expect('{', "'{' opening the header dict");
    skip_space();
    while (peek() != '}') {
      parse_entry(header);
      skip_space();
      if (peek() == ',') {
        ++pos_;
        skip_space();
      } else if (peek() != '}') {
        syntax_error("',' or '}' after a value");
      }
    }
    ++pos_;
    skip_space();
    if (pos_ != text_.size()) syntax_error("only spaces and a newline after the dict");
    require_all_keys(header);
    return header;
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) {
      ++pos_;
    }
  }

  std::string found() const {
    return at_end() ? "end of header"
                    : show_char(peek()) + " at header byte " + std::to_string(pos_);
  }

  [[noreturn]] void syntax_error(const std::string& expected) const {
    throw InputError(source_, "header", expected + " (Python dict literal)", found());
  }

  void expect(char c, const std::string& what) {
    if (at_end() || peek() != c) syntax_error(what);
    ++pos_;
  }

  void parse_entry(NpyHeader& header) {
    if (peek() != '\'' && peek() != '"') syntax_error("a quoted key or '}'");
    const std::string key = parse_string("header");
    skip_space();
    expect(':', "':' after the key");
    skip_space();
    if (key == "descr" && !header.descr) {
      header.descr = parse_string("descr");
    } else if (key == "fortran_order" && !header.fortran_order) {
      header.fortran_order = parse_bool();
    } else if (key == "shape" && !header.shape) {
      header.shape = parse_shape();
    } else if (key == "descr" || key == "fortran_order" || key == "shape") {
      throw InputError(source_, "header", "each key once", "key '" + key + "' repeated");
    } else {
      throw InputError(source_, "header", "only the keys 'descr', 'fortran_order' and 'shape'",
                       "key '" + key + "'");
    }
  }

  /// A '...' or "..." literal without escapes or control characters.
  std::string parse_string(const std::string& field) {
    const char quote = peek();
    if (quote != '\'' && quote != '"') {
      throw InputError(source_, field, "a quoted string", found());
    }
    const std::size_t start = ++pos_;
    while (!at_end() && peek() != quote) {
      if (peek() == '\\' || static_cast<unsigned char>(peek()) < 0x20) {
        syntax_error("a string without escapes or control characters");
      }
      ++pos_;
    }
    if (at_end()) syntax_error("a closing quote");
    ++pos_;
    return std::string(text_.substr(start, pos_ - 1 - start));
  }

  std::string_view parse_word() {
    const std::size_t start = pos_;
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_' ||
                         peek() == '.' || peek() == '-' || peek() == '+')) {
      ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }

  bool parse_bool() {
    const std::string_view word = parse_word();
    if (word == "True") return true;
    if (word == "False") return false;
    throw InputError(source_, "fortran_order", "True or False",
                     word.empty() ? found() : quoted(word));
  }

  std::vector<std::size_t> parse_shape() {
    if (peek() != '(') {
      throw InputError(source_, "shape",
                       "a tuple of non-negative integers such as (2, 3), (3,) or ()", found());
    }
    ++pos_;
    std::vector<std::size_t> shape;
    bool trailing_comma = false;
    skip_space();
    while (peek() != ')') {
      shape.push_back(parse_dim());
      skip_space();
      trailing_comma = peek() == ',';
      if (trailing_comma) {
        ++pos_;
        skip_space();
      } else if (peek() != ')') {
        syntax_error("',' or ')' in the shape tuple");
      }
    }
    ++pos_;
    if (shape.size() == 1 && !trailing_comma) {
      throw InputError(source_, "shape", "a tuple: (n,) for one dimension",
                       "(" + std::to_string(shape[0]) + "), which is an integer in Python");
    }
    return shape;
  }

  std::size_t parse_dim() {
    const std::string_view word = parse_word();
    const std::string shown = word.empty() ? found() : quoted(word);
    std::size_t value = 0;
    const bool digits_only =
        !word.empty() && word.find_first_not_of("0123456789") == std::string_view::npos;
    if (!digits_only) throw InputError(source_, "shape", "non-negative integer dimensions", shown);
    if (word.size() > 1 && word[0] == '0') {
      throw InputError(source_, "shape", "decimal dimensions without leading zeros", shown);
    }
    for (char digit : word) {
      const std::size_t d = std::size_t(digit - '0');
      if (value > (std::numeric_limits<std::size_t>::max() - d) / 10) {
        throw InputError(source_, "shape", "dimensions below 2^64 (overflow)", shown);
      }
      value = value * 10 + d;
    }
    return value;
  }

  void require_all_keys(const NpyHeader& header) const {
    const char* missing = !header.descr           ? "descr"
                          : !header.fortran_order ? "fortran_order"
                          : !header.shape         ? "shape"
                                                  : nullptr;
    if (missing != nullptr) {
      throw InputError(source_, "header", "the keys 'descr', 'fortran_order' and 'shape'",
                       std::string("missing key '") + missing + "'");
    }
  }

  std::string_view text_;
  const std::string& source_;
  std::size_t pos_ = 0;
};

DType descr_dtype(const std::string& descr, const std::string& source) {
  if (descr == "<f4") return DType::kF32;
  if (descr == "<f8") return DType::kF64;
  const bool big_endian = descr == ">f4" || descr == ">f8";
  throw InputError(source, "descr", "'<f4' or '<f8' (little-endian float32 or float64)",
                   "'" + descr + "'" + (big_endian ? " (big-endian)" : ""));
}

void check_payload_size(std::size_t actual, std::size_t expected, const std::string& described,
                        const std::string& source) {
  if (actual == expected) return;
  const std::string detail = actual < expected
                                 ? " (truncated)"
                                 : " (" + std::to_string(actual - expected) + " bytes left over)";
  throw InputError(source, "payload", std::to_string(expected) + " bytes for " + described,
                   std::to_string(actual) + " bytes" + detail);
}

std::string shape_tuple(std::span<const std::size_t> shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    text += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  }
  return text + (shape.size() == 1 ? ",)" : ")");
}

/// Magic, version, header length and the header dict padded with spaces and a final newline so the
/// data starts at a multiple of 64 bytes; version 1.0 when the header length fits in 16 bits.
std::string npy_preamble(std::string_view descr, std::span<const std::size_t> shape,
                         const std::string& path) {
  const std::string dict = "{'descr': '" + std::string(descr) +
                           "', 'fortran_order': False, 'shape': " + shape_tuple(shape) + ", }";
  for (const std::uint8_t version : {1, 2}) {
    const std::size_t length_size = version == 1 ? 2 : 4;
    const std::size_t unpadded = kPreambleSize + length_size + dict.size() + 1;  // + '\n'
    const std::size_t padded = (unpadded + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
    const std::uint64_t header_length = padded - kPreambleSize - length_size;
    if (header_length > (version == 1 ? kMaxV1HeaderLength : kMaxV2HeaderLength)) continue;
    std::string preamble(kMagic.begin(), kMagic.end());
    preamble += static_cast<char>(version);
    preamble += '\0';
    append_little_endian(header_length, length_size, preamble);
    return preamble + dict + std::string(padded - unpadded, ' ') + '\n';
  }
  throw InputError(path, "shape", "a rank whose .npy header fits in 4 GiB",
                   std::to_string(shape.size()) + " dimensions");
}

template <class T>
void write_npy_as(const std::string& path, TensorView<T> tensor, DType dtype) {
  checked_output_layout(tensor.shape, dtype, tensor.data.size(), path, "shape", "tensor data");
  const std::string preamble =
      npy_preamble(dtype == DType::kF32 ? "<f4" : "<f8", tensor.shape, path);
  const std::array<std::span<const std::byte>, 2> chunks = {
      std::as_bytes(std::span<const char>(preamble)), std::as_bytes(tensor.data)};
  write_file_atomically(path, chunks);
}

/// An integer or boolean element type of parse_npy_integers.
struct IntegerDescr {
  std::size_t size = 0;
  bool is_signed = false;
  bool is_bool = false;
};

std::optional<IntegerDescr> integer_descr(const std::string& descr) {
  if (descr.size() < 3) return std::nullopt;
  const char order = descr[0], kind = descr[1];
  const std::string width = descr.substr(2);
  const std::size_t size = width == "1" ? 1 : width == "2" ? 2 : width == "4" ? 4 : width == "8" ? 8 : 0;
  if (size == 0 || (kind != 'i' && kind != 'u' && kind != 'b') || (kind == 'b' && size != 1)) {
    return std::nullopt;
  }
  // Little-endian or, for single bytes, byte order not applicable ('|'); never big-endian.
  if (!(order == '<' || (order == '|' && size == 1))) return std::nullopt;
  return IntegerDescr{size, kind == 'i', kind == 'b'};
}

/// The header of a file after its container checks: descr, fortran_order False, shape.
NpyHeader parsed_header(const Sections& sections, const std::string& source) {
  NpyHeader header = HeaderParser(sections.header, source).parse();
  if (*header.fortran_order) throw InputError(source, "fortran_order", "False (C order)", "True");
  return header;
}

std::string npy_bytes_as(std::string_view descr, std::span<const std::size_t> shape,
                         std::span<const std::byte> data, const std::string& path) {
  std::string out = npy_preamble(descr, shape, path);
  out.append(reinterpret_cast<const char*>(data.data()), data.size());
  return out;
}

}  // namespace

std::vector<std::size_t> npy_shape(std::span<const std::byte> bytes, const std::string& source_name) {
  return *HeaderParser(split_sections(bytes, source_name).header, source_name).parse().shape;
}

template <class T>
Tensor<T> parse_npy_integers(std::span<const std::byte> bytes, const std::string& source_name,
                             const ReadOptions& options) {
  const Sections sections = split_sections(bytes, source_name);
  NpyHeader header = parsed_header(sections, source_name);
  const std::optional<IntegerDescr> descr = integer_descr(*header.descr);
  if (!descr) {
    throw InputError(source_name, "descr",
                     "an integer or bool dtype: '|b1', '|i1', '|u1', '<i2', '<u2', '<i4', '<u4', "
                     "'<i8' or '<u8' (little-endian)",
                     "'" + *header.descr + "'");
  }
  // Sizes: elements and stored bytes within 64 bits and options.max_bytes, as checked_layout does.
  std::size_t elements = 1;
  for (std::size_t dim : *header.shape) {
    if (dim != 0 && elements > std::numeric_limits<std::size_t>::max() / dim) {
      throw InputError(source_name, "shape", "an element count below 2^64",
                       shape_tuple(*header.shape));
    }
    elements *= dim;
  }
  const std::size_t widest = std::max(descr->size, sizeof(T));
  if (elements > options.max_bytes / widest) {
    throw InputError(source_name, "shape",
                     "at most " + std::to_string(options.max_bytes) + " bytes of data",
                     shape_tuple(*header.shape) + " of " + *header.descr);
  }
  check_payload_size(sections.payload.size(), elements * descr->size,
                     "shape " + shape_tuple(*header.shape) + " of " + *header.descr, source_name);
  Tensor<T> out{std::move(*header.shape), std::vector<T>(elements)};
  const std::byte* data = sections.payload.data();
  for (std::size_t e = 0; e < elements; ++e) {
    const std::uint64_t raw = read_little_endian(std::span(data + e * descr->size, descr->size));
    const unsigned shift = unsigned(64 - 8 * descr->size);
    const bool negative = descr->is_signed && (raw >> (8 * descr->size - 1)) != 0;
    // Sign-extend signed values; unsigned 8-byte values above INT64_MAX do not fit any T.
    const bool too_large = !descr->is_signed && raw > std::uint64_t(std::numeric_limits<std::int64_t>::max());
    const std::int64_t value =
        descr->is_signed ? std::int64_t(raw << shift) >> shift : std::int64_t(raw);
    if (descr->is_bool && raw > 1) {
      throw InputError(source_name, "values", "bool bytes 0 or 1",
                       std::to_string(raw) + " at element " + std::to_string(e));
    }
    if (too_large || value < std::int64_t(std::numeric_limits<T>::min()) ||
        value > std::int64_t(std::numeric_limits<T>::max()) || (negative && std::is_unsigned_v<T>)) {
      throw InputError(source_name, "values",
                       "integers in [" + std::to_string(std::int64_t(std::numeric_limits<T>::min())) +
                           ", " + std::to_string(std::uint64_t(std::numeric_limits<T>::max())) + "]",
                       (too_large ? std::to_string(raw) : std::to_string(value)) + " at element " +
                           std::to_string(e));
    }
    out.data[e] = T(value);
  }
  return out;
}

template <class T>
Tensor<T> read_npy_integers(const std::string& path, const ReadOptions& options) {
  const MappedFile file(path, options.max_bytes);
  return parse_npy_integers<T>(file.bytes(), path, options);
}

std::string npy_file_bytes(const std::string& name, TensorView<std::int64_t> tensor) {
  checked_output_layout(tensor.shape, DType::kF64, tensor.data.size(), name, "shape", "tensor data");
  return npy_bytes_as("<i8", tensor.shape, std::as_bytes(tensor.data), name);
}

void write_npy(const std::string& path, TensorView<std::int64_t> tensor) {
  const std::string bytes = npy_file_bytes(path, tensor);
  const std::array<std::span<const std::byte>, 1> chunks = {std::as_bytes(std::span<const char>(bytes))};
  write_file_atomically(path, chunks);
}

void write_npy(const std::string& path, TensorView<std::uint8_t> tensor) {
  // Element count against the shape (the dtype only sets the byte count, unused here).
  checked_output_layout(tensor.shape, DType::kF32, tensor.data.size(), path, "shape", "tensor data");
  const std::string bytes = npy_bytes_as("|u1", tensor.shape, std::as_bytes(tensor.data), path);
  const std::array<std::span<const std::byte>, 1> chunks = {std::as_bytes(std::span<const char>(bytes))};
  write_file_atomically(path, chunks);
}

template <class T>
Tensor<T> parse_npy(std::span<const std::byte> bytes, const std::string& source_name,
                    const ReadOptions& options) {
  const Sections sections = split_sections(bytes, source_name);
  NpyHeader header = HeaderParser(sections.header, source_name).parse();
  const DType dtype = descr_dtype(*header.descr, source_name);
  if (*header.fortran_order) {
    throw InputError(source_name, "fortran_order", "False (C order)", "True");
  }
  const TensorLayout layout =
      checked_layout(*header.shape, dtype, sizeof(T), source_name, "shape", options);
  check_payload_size(sections.payload.size(), layout.stored_bytes,
                     "shape " + shape_tuple(*header.shape) + " of " + *header.descr, source_name);
  return decode_tensor<T>(std::move(*header.shape), dtype, sections.payload, source_name, "values",
                          options);
}

template <class T>
Tensor<T> read_npy(const std::string& path, const ReadOptions& options) {
  const MappedFile file(path, options.max_bytes);
  return parse_npy<T>(file.bytes(), path, options);
}

void write_npy(const std::string& path, TensorView<float> tensor) {
  write_npy_as(path, std::move(tensor), DType::kF32);
}

void write_npy(const std::string& path, TensorView<double> tensor) {
  write_npy_as(path, std::move(tensor), DType::kF64);
}

template Tensor<float> parse_npy<float>(std::span<const std::byte>, const std::string&,
                                        const ReadOptions&);
template Tensor<double> parse_npy<double>(std::span<const std::byte>, const std::string&,
                                          const ReadOptions&);
template Tensor<float> read_npy<float>(const std::string&, const ReadOptions&);
template Tensor<std::int64_t> parse_npy_integers<std::int64_t>(std::span<const std::byte>, const std::string&,
                                                               const ReadOptions&);
template Tensor<std::uint8_t> parse_npy_integers<std::uint8_t>(std::span<const std::byte>, const std::string&,
                                                               const ReadOptions&);
template Tensor<std::int64_t> read_npy_integers<std::int64_t>(const std::string&, const ReadOptions&);
template Tensor<std::uint8_t> read_npy_integers<std::uint8_t>(const std::string&, const ReadOptions&);
template Tensor<double> read_npy<double>(const std::string&, const ReadOptions&);

}  // namespace subevict
