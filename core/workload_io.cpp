#include "core/workload_io.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <vector>

#include "core/dtype.hpp"
#include "core/input_error.hpp"
#include "core/npy.hpp"
#include "core/number_text.hpp"
#include "core/safetensors.hpp"

namespace subevict {
namespace {

namespace fs = std::filesystem;

constexpr std::array<std::string_view, 5> kParts = {"q", "k", "v", "q_pre", "k_pre"};
constexpr int kQ = 0, kK = 1, kV = 2, kQPre = 3, kKPre = 4;
constexpr std::string_view kLayerPrefix = "layers.";
constexpr std::string_view kNamePattern =
    "a name of the form layers.{l}.q, layers.{l}.k, layers.{l}.v, layers.{l}.q_pre or "
    "layers.{l}.k_pre (l = 0, 1, ... in decimal)";
constexpr std::string_view kFormatKey = "format";
constexpr std::string_view kScaleKey = "score_scale";
constexpr std::string_view kWindowsKey = "attention_windows";
constexpr std::string_view kRotaryBasesKey = "rotary_bases";
constexpr std::string_view kRotaryDimsKey = "rotary_dims";
constexpr std::string_view kRotaryPairingKey = "rotary_pairing";
constexpr std::array<std::string_view, 3> kRotaryKeys = {kRotaryBasesKey, kRotaryDimsKey, kRotaryPairingKey};
constexpr std::array<std::string_view, 3> kNpyFiles = {"q.npy", "k.npy", "v.npy"};

/// The q, k and v shapes of one layer, each [heads, tokens, head_dim], with the source and field
/// that name each in error messages.
struct LayerShapes {
  std::array<std::span<const std::size_t>, 3> dims;
  std::array<std::string, 3> sources;
  std::array<std::string, 3> fields;
};

/// A tensor's (layer, part) when its name follows the convention.
std::optional<std::pair<int, int>> parse_tensor_name(const std::string& name) {
  if (!name.starts_with(kLayerPrefix)) return std::nullopt;
  const char* first = name.data() + kLayerPrefix.size();
  const char* last = name.data() + name.size();
  int layer = 0;
  const auto [end, error] = std::from_chars(first, last, layer);
  const bool canonical = error == std::errc() && first != end && std::isdigit(*first) &&
                         !(*first == '0' && end - first > 1);
  if (!canonical || end == last || end[0] != '.') return std::nullopt;
  const std::string_view part_name(end + 1, std::size_t(last - end - 1));
  for (int part = 0; part < int(kParts.size()); ++part) {
    if (part_name == kParts[part]) return std::pair(layer, part);
  }
  return std::nullopt;
}

std::string layer_tensor_name(int layer, int part) {
  return "layers." + std::to_string(layer) + "." + std::string(kParts[part]);
}

/// dims[index] as an int; throws InputError naming the dimension unless it is in [1, INT_MAX].
int checked_dim(std::size_t index, const std::string& source, const std::string& field,
                std::span<const std::size_t> dims) {
  const std::size_t dim = dims[index];
  if (dim == 0 || dim > std::size_t(INT_MAX)) {
    throw InputError(source, field, "dimensions between 1 and " + std::to_string(INT_MAX),
                     shape_string(dims) + " (dimension " + std::to_string(index) + " is " +
                         std::to_string(dim) + ")");
  }
  return static_cast<int>(dim);
}

/// The Shape of a workload with `layers` layers whose every layer has the shapes `s`; throws
/// InputError naming the offending tensor when they are inconsistent.
Shape infer_shape(int layers, const LayerShapes& s) {
  for (int part : {kQ, kK, kV}) {
    if (s.dims[part].size() != 3) {
      throw InputError(s.sources[part], s.fields[part], "[heads, tokens, head_dim] (3 dimensions)",
                       shape_string(s.dims[part]));
    }
    for (std::size_t i = 0; i < s.dims[part].size(); ++i)
      checked_dim(i, s.sources[part], s.fields[part], s.dims[part]);
  }
  const auto q = s.dims[kQ], k = s.dims[kK], v = s.dims[kV];
  if (k[1] != q[1] || k[2] != q[2]) {
    throw InputError(s.sources[kK], s.fields[kK],
                     "tokens and head_dim equal to those of q (" + shape_string(q) + ")",
                     shape_string(k));
  }
  if (!std::equal(v.begin(), v.end(), k.begin(), k.end())) {
    throw InputError(s.sources[kV], s.fields[kV], "the shape of k (" + shape_string(k) + ")",
                     shape_string(v));
  }
  if (q[0] % k[0] != 0) {
    throw InputError(s.sources[kK], s.fields[kK],
                     "a number of KV heads that divides q_heads = " + std::to_string(q[0]),
                     std::to_string(k[0]) + " KV heads");
  }
  const Shape shape{layers, int(q[0]), int(k[0]), int(q[1]), int(q[2])};
  try {
    shape.validate();
  } catch (const std::invalid_argument& e) {
    throw InputError(s.sources[kQ], s.fields[kQ], "a valid workload shape", e.what());
  }
  return shape;
}

double parse_score_scale(const std::string& text, const std::string& source) {
  const std::optional<double> value = finite_number(text);
  if (!value || *value <= 0.0) {
    throw InputError(source, "__metadata__ 'score_scale'", "a positive finite decimal number",
                     "'" + text + "'");
  }
  return *value;
}

std::string format_score_scale(double scale) {
  std::array<char, 64> buffer{};
  const auto result =
      std::to_chars(buffer.data(), buffer.data() + buffer.size(), scale, std::chars_format::general,
                    std::numeric_limits<double>::max_digits10);
  return std::string(buffer.data(), result.ptr);
}

/// Per-layer windows from "0,512,..." (one non-negative decimal per layer, 0 = global).
std::vector<int> parse_windows(const std::string& text, int layers, const std::string& source) {
  const std::string expected = std::to_string(layers) +
                               " comma-separated integers >= 0 (one per layer: 0 global, W a window of W keys)";
  std::vector<int> windows;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    int value = -1;
    const auto [ptr, error] = std::from_chars(text.data() + begin, text.data() + end, value);
    if (error != std::errc() || ptr != text.data() + end || value < 0) {
      throw InputError(source, "__metadata__ 'attention_windows'", expected, "'" + text + "'");
    }
    windows.push_back(value);
    begin = end + 1;
  }
  if (windows.size() != std::size_t(layers)) {
    throw InputError(source, "__metadata__ 'attention_windows'", expected,
                     std::to_string(windows.size()) + " entries ('" + text + "')");
  }
  return windows;
}

std::string format_windows(const std::vector<int>& windows) {
  std::string text;
  for (std::size_t l = 0; l < windows.size(); ++l) text += (l ? "," : "") + std::to_string(windows[l]);
  return text;
}

/// Per-layer RoPE bases from "10000,1e6,..." (one finite decimal > 1 per layer).
std::vector<double> parse_rotary_bases(const std::string& text, int layers, const std::string& source) {
  const std::string expected = std::to_string(layers) + " comma-separated finite RoPE bases > 1 (one per layer)";
  std::vector<double> bases;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const std::optional<double> value = finite_number(text.substr(begin, end - begin));
    if (!value || !(*value > 1.0)) {
      throw InputError(source, "__metadata__ '" + std::string(kRotaryBasesKey) + "'", expected, "'" + text + "'");
    }
    bases.push_back(*value);
    begin = end + 1;
  }
  if (bases.size() != std::size_t(layers)) {
    throw InputError(source, "__metadata__ '" + std::string(kRotaryBasesKey) + "'", expected,
                     std::to_string(bases.size()) + " entries ('" + text + "')");
  }
  return bases;
}

/// Each layer's Rotary from the rotary_* entries (erased from `metadata`); throws InputError naming
/// the entry when one is missing or malformed.
std::vector<Rotary> take_rotaries(std::map<std::string, std::string>& metadata, const Shape& shape,
                                  const std::string& source) {
  for (std::string_view key : kRotaryKeys) {
    if (!metadata.contains(std::string(key))) {
      throw InputError(source, "__metadata__ '" + std::string(key) + "'",
                       "an entry (the pre-RoPE tensors layers.{l}.q_pre/k_pre need rotary_bases, rotary_dims "
                       "and rotary_pairing)",
                       "none");
    }
  }
  const std::string pairing = metadata.at(std::string(kRotaryPairingKey));
  if (pairing != kRotaryPairing) {
    throw InputError(source, "__metadata__ '" + std::string(kRotaryPairingKey) + "'",
                     "'" + std::string(kRotaryPairing) + "' (the only pairing supported)", "'" + pairing + "'");
  }
  const std::string dims_text = metadata.at(std::string(kRotaryDimsKey));
  int dims = -1;
  const auto [ptr, error] = std::from_chars(dims_text.data(), dims_text.data() + dims_text.size(), dims);
  if (error != std::errc() || ptr != dims_text.data() + dims_text.size() || dims < 2 || dims % 2 != 0 ||
      dims > shape.head_dim) {
    throw InputError(source, "__metadata__ '" + std::string(kRotaryDimsKey) + "'",
                     "an even count of rotated dims from 2 to head_dim " + std::to_string(shape.head_dim),
                     "'" + dims_text + "'");
  }
  std::vector<Rotary> rotaries;
  for (double base : parse_rotary_bases(metadata.at(std::string(kRotaryBasesKey)), shape.layers, source)) {
    rotaries.push_back(Rotary{base, dims});
  }
  for (std::string_view key : kRotaryKeys) metadata.erase(std::string(key));
  return rotaries;
}

/// Moves the metadata into the workload, interpreting the reserved keys. The rotary_* entries
/// are read by the caller (take_rotaries) and must be gone when there are no pre-RoPE tensors.
void apply_metadata(std::map<std::string, std::string> metadata, const std::string& source,
                    Workload& workload) {
  for (std::string_view key : kRotaryKeys) {
    if (metadata.contains(std::string(key))) {
      throw InputError(source, "__metadata__ '" + std::string(key) + "'",
                       "no rotary entry without the pre-RoPE tensors layers.{l}.q_pre and layers.{l}.k_pre",
                       "'" + metadata.at(std::string(key)) + "'");
    }
  }
  const auto format = metadata.find(std::string(kFormatKey));
  if (format != metadata.end()) {
    if (format->second != kWorkloadFormat) {
      throw InputError(source, "__metadata__ 'format'", "'" + std::string(kWorkloadFormat) + "'",
                       "'" + format->second + "'");
    }
    metadata.erase(format);
  }
  const auto scale = metadata.find(std::string(kScaleKey));
  if (scale != metadata.end()) {
    workload.set_score_scale(parse_score_scale(scale->second, source));
    metadata.erase(scale);
  }
  const auto windows = metadata.find(std::string(kWindowsKey));
  if (windows != metadata.end()) {
    workload.set_windows(parse_windows(windows->second, workload.shape().layers, source));
    metadata.erase(windows);
  }
  workload.metadata = std::move(metadata);
}

using LayerTensors = std::array<const Tensor<float>*, kParts.size()>;

/// Groups the tensors by layer, rejecting unknown names, gaps in the numbering and missing parts.
std::vector<LayerTensors> group_by_layer(const std::map<std::string, Tensor<float>>& tensors,
                                         const std::string& source) {
  std::map<int, LayerTensors> layers;
  for (const auto& [name, tensor] : tensors) {
    const auto parsed = parse_tensor_name(name);
    if (!parsed) throw InputError(source, "tensor '" + name + "'", std::string(kNamePattern));
    layers[parsed->first][parsed->second] = &tensor;
  }
  if (layers.empty()) {
    throw InputError(source, "tensors", "layers.0.q, layers.0.k and layers.0.v at least", "none");
  }
  std::vector<LayerTensors> grouped;
  for (const auto& [layer, parts] : layers) {
    const int expected = int(grouped.size());
    if (layer != expected) {
      throw InputError(source, "tensor '" + layer_tensor_name(expected, kQ) + "'",
                       "layers numbered contiguously from 0",
                       "no tensors for layer " + std::to_string(expected) + " but some for layer " +
                           std::to_string(layer));
    }
    for (int part : {kQ, kK, kV}) {
      if (parts[part] == nullptr) {
        throw InputError(source, "tensor '" + layer_tensor_name(layer, part) + "'",
                         "q, k and v for every layer", "missing");
      }
    }
    // q_pre and k_pre: in every layer or in none (as layer 0 has them).
    const bool pre = grouped.empty() ? (parts[kQPre] != nullptr || parts[kKPre] != nullptr)
                                     : grouped[0][kQPre] != nullptr;
    for (int part : {kQPre, kKPre}) {
      if ((parts[part] != nullptr) != pre) {
        throw InputError(source, "tensor '" + layer_tensor_name(layer, part) + "'",
                         "q_pre and k_pre in every layer or in none",
                         parts[part] != nullptr ? "present where layer 0 lacks one of them" : "missing");
      }
    }
    grouped.push_back(parts);
  }
  return grouped;
}

LayerShapes safetensors_layer_shapes(const LayerTensors& parts, int layer,
                                     const std::string& path) {
  LayerShapes shapes;
  for (int part : {kQ, kK, kV}) {
    shapes.dims[part] = parts[part]->shape;
    shapes.sources[part] = path;
    shapes.fields[part] = "tensor '" + layer_tensor_name(layer, part) + "': shape";
  }
  return shapes;
}

Workload read_workload_safetensors(const std::string& path, const ReadOptions& options) {
  SafetensorsFile file = read_safetensors(path, options);
  const std::vector<LayerTensors> layers = group_by_layer(file.tensors, path);
  const Shape shape = infer_shape(int(layers.size()), safetensors_layer_shapes(layers[0], 0, path));
  Workload workload(shape);
  const bool pre = layers[0][kQPre] != nullptr;
  std::vector<float> q_pre(pre ? workload.q_data().size() : 0), k_pre(pre ? workload.k_data().size() : 0);
  for (int l = 0; l < shape.layers; ++l) {
    for (int part : {kQ, kK, kV, kQPre, kKPre}) {
      if (layers[l][part] == nullptr) continue;
      const Tensor<float>& tensor = *layers[l][part];
      // q_pre and k_pre have the shapes of q and k
      const int like = part == kQPre ? kQ : part == kKPre ? kK : part;
      const auto& first = layers[0][like]->shape;
      if (tensor.shape != first) {
        throw InputError(path, "tensor '" + layer_tensor_name(l, part) + "': shape",
                         shape_string(first) +
                             (like == part ? " (as in layer 0)" : " (the shape of " + std::string(kParts[like]) + ")"),
                         shape_string(tensor.shape));
      }
      std::vector<float>& all = part == kQ      ? workload.q_data()
                                : part == kK    ? workload.k_data()
                                : part == kV    ? workload.v_data()
                                : part == kQPre ? q_pre
                                                : k_pre;
      std::copy(tensor.data.begin(), tensor.data.end(), all.begin() + l * tensor.data.size());
    }
  }
  if (pre) {
    workload.set_pre_rope(std::move(q_pre), std::move(k_pre), take_rotaries(file.metadata, shape, path));
  }
  apply_metadata(std::move(file.metadata), path, workload);
  return workload;
}

Workload read_workload_directory(const std::string& directory, const ReadOptions& options) {
  std::array<Tensor<float>, 3> tensors;
  LayerShapes shapes;
  for (int part : {kQ, kK, kV}) {
    shapes.sources[part] = (fs::path(directory) / kNpyFiles[part]).string();
    shapes.fields[part] = "shape";
    tensors[part] = read_npy<float>(shapes.sources[part], options);
    const auto& dims = tensors[part].shape;
    if (dims.size() != 4) {
      throw InputError(shapes.sources[part], "shape",
                       "[layers, heads, tokens, head_dim] (4 dimensions)", shape_string(dims));
    }
    if (dims[0] != tensors[kQ].shape[0]) {
      throw InputError(shapes.sources[part], "shape",
                       std::to_string(tensors[kQ].shape[0]) + " layers (as in q.npy)",
                       shape_string(dims));
    }
    shapes.dims[part] = std::span(dims).subspan(1);
  }
  const int layers =
      checked_dim(0, shapes.sources[kQ], "shape", tensors[kQ].shape);
  Workload workload(infer_shape(layers, shapes));
  workload.q_data() = std::move(tensors[kQ].data);
  workload.k_data() = std::move(tensors[kK].data);
  workload.v_data() = std::move(tensors[kV].data);
  return workload;
}

void check_writable(const std::string& path, const Workload& workload) {
  const Shape& shape = workload.shape();
  try {
    shape.validate();
  } catch (const std::invalid_argument& e) {
    throw InputError(path, "workload shape", "a valid shape", e.what());
  }
  if (workload.q_data().size() != shape.q_elements() ||
      workload.k_data().size() != shape.kv_elements() ||
      workload.v_data().size() != shape.kv_elements()) {
    throw InputError(path, "workload", "tensors sized as " + to_string(shape),
                     "q, k, v of " + std::to_string(workload.q_data().size()) + ", " +
                         std::to_string(workload.k_data().size()) + ", " +
                         std::to_string(workload.v_data().size()) + " values");
  }
  for (std::string_view key : {kFormatKey, kScaleKey, kWindowsKey, kRotaryBasesKey, kRotaryDimsKey, kRotaryPairingKey}) {
    if (workload.metadata.contains(std::string(key))) {
      throw InputError(
          path, "metadata", "no entry named '" + std::string(key) + "' (reserved)",
          "'" + std::string(key) + "' = '" + workload.metadata.at(std::string(key)) + "'");
    }
  }
}

void write_workload_safetensors(const std::string& path, const Workload& workload) {
  const Shape& s = workload.shape();
  const std::size_t q_size = std::size_t(s.q_heads) * s.tokens * s.head_dim;
  const std::size_t kv_size = std::size_t(s.kv_heads) * s.tokens * s.head_dim;
  std::map<std::string, TensorView<float>> tensors;
  for (int l = 0; l < s.layers; ++l) {
    const std::vector<std::size_t> q_shape = {std::size_t(s.q_heads), std::size_t(s.tokens),
                                              std::size_t(s.head_dim)};
    const std::vector<std::size_t> kv_shape = {std::size_t(s.kv_heads), std::size_t(s.tokens),
                                               std::size_t(s.head_dim)};
    tensors[layer_tensor_name(l, kQ)] = {q_shape,
                                         std::span(workload.q_data()).subspan(l * q_size, q_size)};
    tensors[layer_tensor_name(l, kK)] = {
        kv_shape, std::span(workload.k_data()).subspan(l * kv_size, kv_size)};
    tensors[layer_tensor_name(l, kV)] = {
        kv_shape, std::span(workload.v_data()).subspan(l * kv_size, kv_size)};
    if (workload.has_pre_rope()) {
      tensors[layer_tensor_name(l, kQPre)] = {q_shape, std::span(workload.q_pre_data()).subspan(l * q_size, q_size)};
      tensors[layer_tensor_name(l, kKPre)] = {kv_shape, std::span(workload.k_pre_data()).subspan(l * kv_size, kv_size)};
    }
  }
  std::map<std::string, std::string> metadata = workload.metadata;
  metadata[std::string(kFormatKey)] = kWorkloadFormat;
  metadata[std::string(kScaleKey)] = format_score_scale(workload.score_scale());
  if (workload.has_windows()) metadata[std::string(kWindowsKey)] = format_windows(workload.windows());
  if (workload.has_pre_rope()) {
    for (const Rotary& r : workload.rotaries()) {
      if (r.dims != workload.rotaries()[0].dims) {
        throw InputError(path, "rotary dims", "one count of rotated dims for every layer (the file records one)",
                         std::to_string(workload.rotaries()[0].dims) + " and " + std::to_string(r.dims));
      }
    }
    std::string bases;
    for (const Rotary& r : workload.rotaries()) bases += (bases.empty() ? "" : ",") + format_score_scale(r.base);
    metadata[std::string(kRotaryBasesKey)] = bases;
    metadata[std::string(kRotaryDimsKey)] = std::to_string(workload.rotaries()[0].dims);
    metadata[std::string(kRotaryPairingKey)] = kRotaryPairing;
  }
  write_safetensors(path, tensors, metadata);
}

void write_workload_directory(const std::string& path, const Workload& workload) {
  const Shape& s = workload.shape();
  if (workload.score_scale() != 1.0 / std::sqrt(double(s.head_dim))) {
    throw InputError(path, "score_scale",
                     "the default 1/sqrt(head_dim) (a directory of .npy files cannot store a "
                     "scale; write a .safetensors file instead)",
                     format_score_scale(workload.score_scale()));
  }
  if (workload.has_windows()) {
    throw InputError(path, "attention_windows",
                     "every layer global (a directory of .npy files cannot store sliding windows; "
                     "write a .safetensors file instead)",
                     format_windows(workload.windows()));
  }
  if (workload.has_pre_rope()) {
    throw InputError(path, "pre-RoPE tensors",
                     "none (a directory of .npy files cannot store the rotary parameters; write a "
                     ".safetensors file instead)",
                     "q_pre and k_pre of every layer");
  }
  std::error_code error;
  fs::create_directories(path, error);
  if (error || !fs::is_directory(path)) {
    throw InputError(path, "output directory", "a directory that exists or can be created",
                     error ? error.message() : "not a directory");
  }
  const std::array<const std::vector<float>*, 3> data = {&workload.q_data(), &workload.k_data(),
                                                         &workload.v_data()};
  for (int part : {kQ, kK, kV}) {
    const int heads = part == kQ ? s.q_heads : s.kv_heads;
    write_npy((fs::path(path) / kNpyFiles[part]).string(),
              TensorView<float>{{std::size_t(s.layers), std::size_t(heads), std::size_t(s.tokens),
                                 std::size_t(s.head_dim)},
                                *data[part]});
  }
}

}  // namespace

Workload read_workload(const std::string& path, const ReadOptions& options) {
  std::error_code error;
  if (fs::is_directory(path, error)) return read_workload_directory(path, options);
  return read_workload_safetensors(path, options);
}

void write_workload(const std::string& path, const Workload& workload) {
  check_writable(path, workload);
  if (path.ends_with(".safetensors")) {
    write_workload_safetensors(path, workload);
  } else {
    write_workload_directory(path, workload);
  }
}

void require_finite(const Workload& workload, const std::vector<int>& layers, const std::vector<int>& kv_heads,
                    const std::string& source, const std::string& why) {
  const Shape& s = workload.shape();
  auto check = [&](int layer, const char* tensor, const char* head_kind, int head, const ConstHeadMap& m) {
    for (int i = 0; i < int(m.rows()); ++i)
      for (int d = 0; d < int(m.cols()); ++d) {
        const float x = m(i, d);
        if (std::isfinite(x)) continue;
        throw InputError(source, "layer " + std::to_string(layer) + " " + tensor, "finite values " + why,
                         std::string(std::isnan(x) ? "NaN" : x > 0 ? "+Inf" : "-Inf") + " at " + head_kind +
                             " " + std::to_string(head) + ", token " + std::to_string(i) + ", dim " +
                             std::to_string(d));
      }
  };
  for (int layer : layers) {
    for (int kv : kv_heads)
      for (int h = kv * s.group_size(); h < (kv + 1) * s.group_size(); ++h) check(layer, "q", "query head", h, workload.q(layer, h));
    for (int kv : kv_heads) check(layer, "k", "KV head", kv, workload.k(layer, kv));
    for (int kv : kv_heads) check(layer, "v", "KV head", kv, workload.v(layer, kv));
    if (!workload.has_pre_rope()) continue;
    for (int kv : kv_heads)
      for (int h = kv * s.group_size(); h < (kv + 1) * s.group_size(); ++h)
        check(layer, "q_pre", "query head", h, workload.q_pre(layer, h));
    for (int kv : kv_heads) check(layer, "k_pre", "KV head", kv, workload.k_pre(layer, kv));
  }
}

void require_finite(const Workload& workload, const std::string& source, const std::string& why) {
  std::vector<int> layers(std::size_t(workload.shape().layers)), kv_heads(std::size_t(workload.shape().kv_heads));
  for (std::size_t l = 0; l < layers.size(); ++l) layers[l] = int(l);
  for (std::size_t h = 0; h < kv_heads.size(); ++h) kv_heads[h] = int(h);
  require_finite(workload, layers, kv_heads, source, why);
}

}  // namespace subevict
