#include "core/safetensors.hpp"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "core/atomic_file.hpp"
#include "core/dtype.hpp"
#include "core/input_error.hpp"
#include "core/mapped_file.hpp"

namespace subevict {
namespace {

using nlohmann::json;

constexpr std::size_t kLengthSize = 8;
constexpr std::size_t kDataAlignment = 8;
/// {tensor: {"shape": [dims]}} is three levels of nesting; nothing valid goes deeper.
constexpr int kMaxNesting = 3;
constexpr std::size_t kMaxShownJson = 60;
constexpr std::string_view kMetadataKey = "__metadata__";

/// One tensor's header entry, validated on its own (not yet against the other tensors).
struct Entry {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::size_t> shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

std::string tensor_field(const std::string& name, const std::string& part = "") {
  return "tensor '" + name + "'" + (part.empty() ? "" : ": " + part);
}

/// A JSON value as error messages show it, abridged.
std::string show(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > kMaxShownJson) text = text.substr(0, kMaxShownJson) + "...";
  return text;
}

std::string range_string(std::uint64_t begin, std::uint64_t end) {
  std::string text = "[";
  text += std::to_string(begin);
  text += ", ";
  text += std::to_string(end);
  text += ']';
  return text;
}

std::string_view split_header(std::span<const std::byte> bytes, const std::string& source) {
  if (bytes.size() < kLengthSize) {
    throw InputError(source, "header length", "an 8-byte little-endian header length",
                     "a " + std::to_string(bytes.size()) + "-byte file");
  }
  const std::uint64_t length = read_little_endian(bytes.first(kLengthSize));
  if (length > kMaxSafetensorsHeaderBytes) {
    throw InputError(source, "header length",
                     "at most " + std::to_string(kMaxSafetensorsHeaderBytes) + " bytes",
                     std::to_string(length));
  }
  if (length > bytes.size() - kLengthSize) {
    throw InputError(
        source, "header length",
        "at most " + std::to_string(bytes.size() - kLengthSize) + " (the bytes left in the file)",
        std::to_string(length));
  }
  return {reinterpret_cast<const char*>(bytes.data() + kLengthSize), length};
}

/// Bounds the nesting depth before the DOM is built, so a header of brackets cannot make the
/// parser allocate far more than the header's size. Strings are skipped; malformed JSON is left
/// for the parser to report.
void check_nesting(std::string_view text, const std::string& source) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      in_string = c != '"';
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxNesting) {
        throw InputError(source, "header",
                         "JSON nested at most " + std::to_string(kMaxNesting) + " levels deep",
                         "deeper nesting at header byte " + std::to_string(i));
      }
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
}

/// Parses the JSON header, rejecting repeated keys in any object (JSON allows them; a file
/// holding two definitions of one tensor is ambiguous).
json parse_json(std::string_view text, const std::string& source) {
  check_nesting(text, source);
  std::vector<std::set<std::string>> open_objects;
  std::optional<std::string> repeated;
  const json::parser_callback_t track_keys = [&](int, json::parse_event_t event, json& value) {
    if (event == json::parse_event_t::object_start) open_objects.emplace_back();
    if (event == json::parse_event_t::object_end) open_objects.pop_back();
    if (event == json::parse_event_t::key && !open_objects.empty() &&
        !open_objects.back().insert(value.get<std::string>()).second && !repeated) {
      repeated = value.get<std::string>();
    }
    return true;
  };
  json header;
  try {
    header = json::parse(text.begin(), text.end(), track_keys);
  } catch (const json::exception& e) {
    std::string reason = e.what();
    reason.erase(0, reason.find(']') == std::string::npos ? 0 : reason.find(']') + 2);
    throw InputError(source, "header", "valid JSON", reason);
  }
  if (repeated) throw InputError(source, "header", "each key once", "'" + *repeated + "' repeated");
  if (!header.is_object()) throw InputError(source, "header", "a JSON object", show(header));
  return header;
}

std::vector<std::uint64_t> parse_unsigned_list(const json& value, const std::string& source,
                                               const std::string& field,
                                               std::optional<std::size_t> exact_size) {
  const std::string expected =
      exact_size ? "[begin, end], non-negative integers" : "an array of non-negative integers";
  if (!value.is_array() || (exact_size && value.size() != *exact_size)) {
    throw InputError(source, field, expected, show(value));
  }
  std::vector<std::uint64_t> numbers;
  numbers.reserve(value.size());
  for (const json& item : value) {
    if (!item.is_number_unsigned()) throw InputError(source, field, expected, show(value));
    numbers.push_back(item.get<std::uint64_t>());
  }
  return numbers;
}

DType parse_dtype(const json& value, const std::string& source, const std::string& field) {
  static constexpr std::array kDTypes = {DType::kF32, DType::kF16, DType::kBF16, DType::kF64};
  if (value.is_string()) {
    for (DType dtype : kDTypes) {
      if (value.get<std::string>() == dtype_name(dtype)) return dtype;
    }
  }
  throw InputError(source, field, "one of \"F32\", \"F16\", \"BF16\", \"F64\"", show(value));
}

void check_entry_keys(const std::string& name, const json& value, const std::string& source) {
  static constexpr std::array<std::string_view, 3> kKeys = {"dtype", "shape", "data_offsets"};
  if (!value.is_object()) {
    throw InputError(source, tensor_field(name), "an object with dtype, shape and data_offsets",
                     show(value));
  }
  for (const auto& item : value.items()) {
    if (std::find(kKeys.begin(), kKeys.end(), item.key()) == kKeys.end()) {
      throw InputError(source, tensor_field(name), "only the keys dtype, shape and data_offsets",
                       "unexpected key '" + item.key() + "'");
    }
  }
  for (std::string_view key : kKeys) {
    if (!value.contains(key)) {
      throw InputError(source, tensor_field(name), "the keys dtype, shape and data_offsets",
                       "missing key '" + std::string(key) + "'");
    }
  }
}

Entry parse_entry(const std::string& name, const json& value, std::size_t buffer_size,
                  const std::string& source, const ReadOptions& options) {
  if (name.empty()) throw InputError(source, "header", "non-empty tensor names", "\"\"");
  check_entry_keys(name, value, source);
  Entry entry;
  entry.name = name;
  entry.dtype = parse_dtype(value["dtype"], source, tensor_field(name, "dtype"));
  const std::vector<std::uint64_t> dims =
      parse_unsigned_list(value["shape"], source, tensor_field(name, "shape"), std::nullopt);
  entry.shape.assign(dims.begin(), dims.end());
  const TensorLayout layout = checked_layout(entry.shape, entry.dtype, sizeof(float), source,
                                             tensor_field(name, "shape"), options);
  const std::string field = tensor_field(name, "data_offsets");
  const std::vector<std::uint64_t> offsets =
      parse_unsigned_list(value["data_offsets"], source, field, 2);
  entry.begin = offsets[0];
  entry.end = offsets[1];
  const std::string shown = range_string(entry.begin, entry.end);
  if (entry.end < entry.begin) throw InputError(source, field, "begin <= end", shown);
  if (entry.end > buffer_size) {
    throw InputError(source, field,
                     "end <= " + std::to_string(buffer_size) + " (the size of the data buffer)",
                     shown);
  }
  if (entry.end - entry.begin != layout.stored_bytes) {
    throw InputError(source, field,
                     "end - begin = " + std::to_string(layout.stored_bytes) + " bytes for shape " +
                         shape_string(entry.shape) + " of " + std::string(dtype_name(entry.dtype)),
                     shown + " (" + std::to_string(entry.end - entry.begin) + " bytes)");
  }
  return entry;
}

std::map<std::string, std::string> parse_metadata(const json& value, const std::string& source) {
  const std::string field(kMetadataKey);
  if (!value.is_object()) throw InputError(source, field, "an object of strings", show(value));
  std::map<std::string, std::string> metadata;
  for (const auto& item : value.items()) {
    if (!item.value().is_string()) {
      throw InputError(source, field, "string values",
                       "'" + item.key() + "': " + show(item.value()));
    }
    metadata.emplace(item.key(), item.value().get<std::string>());
  }
  return metadata;
}

/// The tensors must tile the buffer exactly: sorted by offset, each begins where the previous
/// ends (no overlap, no gap), and the last ends at the end of the buffer (nothing left over).
void check_coverage(std::vector<const Entry*> entries, std::size_t buffer_size,
                    const std::string& source) {
  std::sort(entries.begin(), entries.end(), [](const Entry* a, const Entry* b) {
    return std::pair(a->begin, a->end) < std::pair(b->begin, b->end);
  });
  std::uint64_t next = 0;
  const Entry* previous = nullptr;
  for (const Entry* entry : entries) {
    const std::string after =
        previous == nullptr ? "the start of the buffer" : "tensor '" + previous->name + "'";
    if (entry->begin < next) {
      throw InputError(
          source, tensor_field(entry->name, "data_offsets"),
          "no overlap: begin >= " + std::to_string(next) + " (the end of " + after + ")",
          range_string(entry->begin, entry->end) + " overlaps");
    }
    if (entry->begin > next) {
      throw InputError(source, tensor_field(entry->name, "data_offsets"),
                       "begin = " + std::to_string(next) + " (right after " + after +
                           "; the buffer may not have gaps)",
                       range_string(entry->begin, entry->end) + " (gap)");
    }
    next = entry->end;
    previous = entry;
  }
  if (next != buffer_size) {
    throw InputError(
        source, "payload",
        std::to_string(next) + " bytes of tensor data (up to the end of the last tensor)",
        std::to_string(buffer_size) + " bytes (" + std::to_string(buffer_size - next) +
            " bytes left over)");
  }
}

/// The JSON header for `tensors` laid out contiguously in map order, padded to kDataAlignment.
std::string header_text(const std::string& path,
                        const std::map<std::string, TensorView<float>>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name.empty() || name == kMetadataKey) {
      throw InputError(path, tensor_field(name), "a non-empty name other than __metadata__");
    }
    const TensorLayout layout =
        checked_output_layout(tensor.shape, DType::kF32, tensor.data.size(), path,
                              tensor_field(name, "shape"), tensor_field(name, "data"));
    header[name] = {{"dtype", "F32"},
                    {"shape", tensor.shape},
                    {"data_offsets", {offset, offset + layout.stored_bytes}}};
    offset += layout.stored_bytes;
  }
  if (!metadata.empty()) header[std::string(kMetadataKey)] = metadata;
  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception& e) {
    throw InputError(path, "header", "UTF-8 tensor names and metadata", e.what());
  }
  text.append((kDataAlignment - (kLengthSize + text.size()) % kDataAlignment) % kDataAlignment,
              ' ');
  return text;
}

}  // namespace

SafetensorsFile parse_safetensors(std::span<const std::byte> bytes, const std::string& source_name,
                                  const ReadOptions& options) {
  const std::string_view header_json = split_header(bytes, source_name);
  const json header = parse_json(header_json, source_name);
  const std::span<const std::byte> buffer = bytes.subspan(kLengthSize + header_json.size());
  SafetensorsFile file;
  std::vector<Entry> entries;
  for (const auto& item : header.items()) {
    if (item.key() == kMetadataKey) {
      file.metadata = parse_metadata(item.value(), source_name);
    } else {
      entries.push_back(parse_entry(item.key(), item.value(), buffer.size(), source_name, options));
    }
  }
  std::vector<const Entry*> pointers;
  for (const Entry& entry : entries) pointers.push_back(&entry);
  check_coverage(std::move(pointers), buffer.size(), source_name);
  for (Entry& entry : entries) {
    file.tensors.emplace(
        entry.name, decode_tensor<float>(std::move(entry.shape), entry.dtype,
                                         buffer.subspan(entry.begin, entry.end - entry.begin),
                                         source_name, tensor_field(entry.name, "values"), options));
  }
  return file;
}

SafetensorsFile read_safetensors(const std::string& path, const ReadOptions& options) {
  const MappedFile file(path, options.max_bytes);
  return parse_safetensors(file.bytes(), path, options);
}

void write_safetensors(const std::string& path,
                       const std::map<std::string, TensorView<float>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::string header = header_text(path, tensors, metadata);
  std::string length;
  append_little_endian(header.size(), kLengthSize, length);
  std::vector<std::span<const std::byte>> chunks = {std::as_bytes(std::span<const char>(length)),
                                                    std::as_bytes(std::span<const char>(header))};
  for (const auto& item : tensors) chunks.push_back(std::as_bytes(item.second.data));
  write_file_atomically(path, chunks);
}

void write_safetensors(const std::string& path, const std::map<std::string, Tensor<float>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::map<std::string, TensorView<float>> views;
  for (const auto& [name, tensor] : tensors) views.emplace(name, view(tensor));
  write_safetensors(path, views, metadata);
}

}  // namespace subevict
