#include "greedy/eviction/policies/learned_model.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>

#include "core/attention_avx2.hpp"
#include "core/cpu_path.hpp"
#include "core/input_error.hpp"

#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
#include <immintrin.h>
#endif

namespace subevict::greedy::policies {
namespace {

using nlohmann::json;

/// Reads the fields of one JSON object, each named by its path in errors.
class Reader {
 public:
  Reader(const json& node, std::string path, const std::string& source)
      : node_(node), path_(std::move(path)), source_(source) {
    if (!node_.is_object()) fail("", "an object", node_.type_name());
  }

  [[noreturn]] void fail(const std::string& key, const std::string& expected,
                         const std::string& got) const {
    throw InputError(source_, at(key), expected, got);
  }
  [[nodiscard]] std::string at(const std::string& key) const {
    return path_.empty() ? key : key.empty() ? path_ : path_ + "." + key;
  }
  [[nodiscard]] const json& field(const std::string& key) const {
    const auto it = node_.find(key);
    if (it == node_.end()) fail(key, "the field " + key, "none (missing)");
    return *it;
  }
  [[nodiscard]] bool has(const std::string& key) const { return node_.contains(key); }
  [[nodiscard]] std::string text(const std::string& key) const {
    const json& v = field(key);
    if (!v.is_string()) fail(key, "a string", v.dump());
    return v.get<std::string>();
  }
  [[nodiscard]] double number(const std::string& key) const {
    return number_at(field(key), at(key));
  }
  [[nodiscard]] double number_at(const json& v, const std::string& where) const {
    if (!v.is_number() || !std::isfinite(v.get<double>()))
      throw InputError(source_, where, "a finite number", v.dump());
    return v.get<double>();
  }
  [[nodiscard]] int integer(const std::string& key) const {
    const json& v = field(key);
    if (!v.is_number_integer()) fail(key, "an integer", v.dump());
    return v.get<int>();
  }
  [[nodiscard]] bool flag(const std::string& key) const {
    const json& v = field(key);
    if (!v.is_boolean()) fail(key, "true or false", v.dump());
    return v.get<bool>();
  }
  [[nodiscard]] const json& array(const std::string& key) const {
    const json& v = field(key);
    if (!v.is_array()) fail(key, "an array", v.type_name());
    return v;
  }
  [[nodiscard]] const std::string& source() const { return source_; }

 private:
  const json& node_;
  std::string path_;
  const std::string& source_;
};

OnlineFeature feature_named(const std::string& name, const Reader& r) {
  const auto& names = online_feature_names();
  for (int f = 0; f < kOnlineFeatureCount; ++f) {
    if (names[std::size_t(f)] == name) return OnlineFeature(f);
  }
  r.fail("feature", "an online feature name (docs/eviction.md)", name);
}

ModelInput read_input(const json& node, const std::string& path, const std::string& source) {
  const Reader r(node, path, source);
  ModelInput in;
  in.feature = feature_named(r.text("feature"), r);
  const std::string transform = r.text("transform");
  if (transform == "identity") {
    in.transform = InputTransform::kIdentity;
  } else if (transform == "log") {
    in.transform = InputTransform::kLog;
  } else {
    r.fail("transform", "identity or log", transform);
  }
  in.members_scaled = r.flag("members_scaled");
  in.offset = r.number("offset");
  if (in.transform == InputTransform::kLog && !(in.offset > 0.0)) {
    r.fail("offset", "an offset > 0 under the log (features are >= 0)", std::to_string(in.offset));
  }
  in.mean = r.number("mean");
  in.scale = r.number("scale");
  if (!(in.scale > 0.0)) r.fail("scale", "a scale > 0", std::to_string(in.scale));
  return in;
}

DenseLayer read_dense(const json& node, const std::string& path, const std::string& source,
                      int inputs) {
  const Reader r(node, path, source);
  DenseLayer layer;
  const std::string activation = r.text("activation");
  if (activation == "identity") {
    layer.activation = Activation::kIdentity;
  } else if (activation == "relu") {
    layer.activation = Activation::kRelu;
  } else if (activation == "tanh") {
    layer.activation = Activation::kTanh;
  } else {
    r.fail("activation", "identity, relu or tanh", activation);
  }
  const json& weights = r.array("weights");
  const json& bias = r.array("bias");
  if (weights.empty()) r.fail("weights", "at least one row", "[]");
  if (bias.size() != weights.size()) {
    r.fail("bias", std::to_string(weights.size()) + " entries (one per row of weights)",
           std::to_string(bias.size()));
  }
  layer.weights.resize(Eigen::Index(weights.size()), inputs);
  layer.bias.resize(Eigen::Index(weights.size()));
  for (std::size_t o = 0; o < weights.size(); ++o) {
    const std::string row_path = r.at("weights") + "[" + std::to_string(o) + "]";
    if (!weights[o].is_array() || int(weights[o].size()) != inputs) {
      throw InputError(source, row_path, std::to_string(inputs) + " numbers (the layer's inputs)",
                       weights[o].dump());
    }
    for (int i = 0; i < inputs; ++i) {
      layer.weights(Eigen::Index(o), i) =
          r.number_at(weights[o][std::size_t(i)], row_path + "[" + std::to_string(i) + "]");
    }
    layer.bias(Eigen::Index(o)) =
        r.number_at(bias[o], r.at("bias") + "[" + std::to_string(o) + "]");
  }
  return layer;
}

ModelNet read_net(const json& node, const std::string& path, const std::string& source) {
  const Reader r(node, path, source);
  ModelNet net;
  const json& layers = r.field("layers");
  if (!layers.is_null()) {
    if (!layers.is_array())
      r.fail("layers", "null (every other layer) or an array of model layers", layers.dump());
    for (const json& l : layers) {
      if (!l.is_number_integer() || l.get<int>() < 0)
        r.fail("layers", "model layers >= 0", l.dump());
      net.layers.push_back(l.get<int>());
    }
    if (net.layers.empty()) r.fail("layers", "null or a non-empty array", "[]");
  }
  const json& inputs = r.array("inputs");
  if (inputs.empty()) r.fail("inputs", "at least one input", "[]");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    net.inputs.push_back(
        read_input(inputs[i], r.at("inputs") + "[" + std::to_string(i) + "]", source));
  }
  const json& dense = r.array("dense");
  if (dense.empty()) r.fail("dense", "at least one layer", "[]");
  int width = int(net.inputs.size());
  for (std::size_t d = 0; d < dense.size(); ++d) {
    net.dense.push_back(
        read_dense(dense[d], r.at("dense") + "[" + std::to_string(d) + "]", source, width));
    width = int(net.dense.back().weights.rows());
  }
  if (width != 1)
    r.fail("dense", "a last layer with one output (the keep score)",
           std::to_string(width) + " outputs");
  for (std::size_t i = 0; i < net.inputs.size(); ++i) {
    const bool fixed = per_token_constant(net.inputs[i].feature) && !net.inputs[i].members_scaled;
    (fixed ? net.token_inputs : net.step_inputs).push_back(Eigen::Index(i));
  }
  net.dense[0].columns = net.step_inputs;
  for (std::size_t d = 1; d < net.dense.size(); ++d) {
    net.dense[d].columns.resize(std::size_t(net.dense[d].weights.cols()));
    std::iota(net.dense[d].columns.begin(), net.dense[d].columns.end(), Eigen::Index(0));
  }
  return net;
}

/// Members per block of dense_block: its accumulators stay in registers.
constexpr Eigen::Index kDenseBlock = 8;

/// Adds Σ_c weights(o, columns[c]) · in(m, c), in column order, to out(m, o) for the members
/// m0 .. m0 + kDenseBlock − 1 (a dense layer's terms; out starts with its bias). Eigen's GEMM would
/// start an OpenMP team at every step, and its lazy product is not vectorized along the members;
/// this form is, with no store between the terms.
void dense_block(const Eigen::MatrixXd& weights, std::span<const Eigen::Index> columns,
                 const Eigen::MatrixXd& in, Eigen::MatrixXd& out, Eigen::Index m0) {
  for (Eigen::Index o = 0; o < weights.rows(); ++o) {
    double* y = out.col(o).data() + m0;
    double sum[kDenseBlock];
    for (Eigen::Index m = 0; m < kDenseBlock; ++m) sum[m] = y[m];
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const double w = weights(o, columns[c]);
      const double* x = in.col(Eigen::Index(c)).data() + m0;
      for (Eigen::Index m = 0; m < kDenseBlock; ++m) sum[m] += w * x[m];
    }
    for (Eigen::Index m = 0; m < kDenseBlock; ++m) y[m] = sum[m];
  }
}

#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
/// A dense layer's outputs before the activation for every block of `padded` members (a multiple
/// of kDenseBlock) in AVX2 + FMA: out(m, o) = bias[o] (+ part[part_index[m] + o] when part is not
/// null: the first layer's per-token share) + Σ_c w(o, columns[c]) · in(m, c), in column order,
/// each term one fused multiply-add (so the sums may differ from the portable path's in the last
/// bits). Raw pointers (column-major: w(o, c) at w[o + c · outputs], in(m, c) at in[m + c ·
/// padded], out likewise), no Eigen: nothing here can be merged with baseline code. Precondition: a
/// CPU with AVX2 and FMA.
__attribute__((target("avx2,fma"))) void dense_layer_avx2(
    const double* w, long outputs, const Eigen::Index* columns, std::size_t count,
    const double* bias, const double* part, const long long* part_index, const double* in,
    double* out, long padded) {
  for (long m0 = 0; m0 < padded; m0 += kDenseBlock) {
    __m256i index_low = _mm256_setzero_si256(), index_high = _mm256_setzero_si256();
    if (part != nullptr) {
      index_low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(part_index + m0));
      index_high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(part_index + m0 + 4));
    }
    for (long o = 0; o < outputs; ++o) {
      __m256d low = _mm256_set1_pd(bias[o]), high = low;
      if (part != nullptr) {
        low = _mm256_add_pd(low, _mm256_i64gather_pd(part + o, index_low, 8));
        high = _mm256_add_pd(high, _mm256_i64gather_pd(part + o, index_high, 8));
      }
      for (std::size_t c = 0; c < count; ++c) {
        const __m256d weight = _mm256_set1_pd(w[o + columns[c] * outputs]);
        const double* x = in + long(c) * padded + m0;
        low = _mm256_fmadd_pd(weight, _mm256_loadu_pd(x), low);
        high = _mm256_fmadd_pd(weight, _mm256_loadu_pd(x + 4), high);
      }
      double* y = out + o * padded + m0;
      _mm256_storeu_pd(y, low);
      _mm256_storeu_pd(y + 4, high);
    }
  }
}
#endif

/// One dense layer's outputs before the activation for every member (rows padded to whole
/// blocks; `out` resized): its bias, plus the per-token share of token_part at part_index[m] when
/// token_part is not null (the first layer), plus its terms over `in`, on the active CPU path.
void dense_layer(const DenseLayer& layer, const Eigen::MatrixXd& in, const double* token_part,
                 const std::vector<long long>& part_index, Eigen::MatrixXd& out) {
  const Eigen::Index padded = in.rows(), outputs = layer.weights.rows();
  out.resize(padded, outputs);
#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
  static_assert(kDenseBlock == 8, "dense_layer_avx2 holds a block in two 4-wide registers");
  if (active_cpu_path() == CpuPath::kAvx2Fma) {
    dense_layer_avx2(layer.weights.data(), long(outputs), layer.columns.data(),
                     layer.columns.size(), layer.bias.data(), token_part, part_index.data(),
                     in.data(), out.data(), long(padded));
    return;
  }
#endif
  out.rowwise() = layer.bias.transpose();
  if (token_part != nullptr) {
    for (Eigen::Index e = 0; e < padded; ++e) {
      const double* part = token_part + part_index[std::size_t(e)];
      for (Eigen::Index o = 0; o < outputs; ++o) out(e, o) += part[o];
    }
  }
  for (Eigen::Index m0 = 0; m0 < padded; m0 += kDenseBlock)
    dense_block(layer.weights, layer.columns, in, out, m0);
}

/// Input `in` of every row of `features`, transformed and standardized, into `out`; `members` is
/// |G_i|. A log of a non-positive value (a feature below −offset) is taken at the offset.
template <typename Features>
void input_column(const ModelInput& in, const Features& features, double members,
                  Eigen::Ref<Eigen::VectorXd> out) {
  auto column = out.array();
  column = features.col(int(in.feature)).array() * (in.members_scaled ? members : 1.0) + in.offset;
  if (in.transform ==
      InputTransform::kLog) {  // two statements: Eigen vectorizes the log, not a select
    column = (column > 0.0).select(column, in.offset);
    column = column.log();
  }
  column =
      (column - in.mean) * (1.0 / in.scale);  // a multiply, not a divide, per member (as NumPy's)
}

void apply(Activation activation, Eigen::MatrixXd& x) {
  switch (activation) {
    case Activation::kRelu:
      x = x.cwiseMax(0.0);
      break;
    case Activation::kTanh:
      // tanh(x) = 1 − 2 / (exp(2x) + 1) on Eigen's vectorized exp (its double tanh is scalar, the
      // net's cost at |G_i| = 1024); saturates to ±1 without overflow (exp(+inf) = inf gives 1).
      x = (1.0 - 2.0 / ((2.0 * x.array()).exp() + 1.0)).matrix();
      break;
    case Activation::kIdentity:
      break;
  }
}

}  // namespace

LearnedModel LearnedModel::parse(std::string_view text, const std::string& source) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(source, "model file", "valid JSON (a truncated file is not)", e.what());
  }
  const Reader r(doc, "", source);
  if (r.text("format") != kLearnedModelFormat)
    r.fail("format", std::string(kLearnedModelFormat), r.text("format"));
  if (r.integer("version") != kLearnedModelVersion) {
    r.fail("version", std::to_string(kLearnedModelVersion), std::to_string(r.integer("version")));
  }
  if (r.integer("features_version") != kOnlineFeaturesVersion) {
    r.fail("features_version",
           std::to_string(kOnlineFeaturesVersion) + " (this build's online features)",
           std::to_string(r.integer("features_version")));
  }
  const json& names = r.array("features");
  std::string expected;
  for (std::string_view n : online_feature_names())
    expected += (expected.empty() ? "" : ", ") + std::string(n);
  bool same = names.size() == std::size_t(kOnlineFeatureCount);
  for (std::size_t f = 0; same && f < names.size(); ++f) {
    same = names[f].is_string() && names[f].get<std::string>() == online_feature_names()[f];
  }
  if (!same) r.fail("features", "the online features in order (" + expected + ")", names.dump());
  LearnedModel model;
  model.source_ = source;
  const Reader options(r.field("feature_options"), "feature_options", source);
  model.options_.window = options.integer("window");
  model.options_.sinks = options.integer("sinks");
  model.options_.trend_rate = options.number("trend_rate");
  try {
    (void)OnlineFeatures(model.options_);
  } catch (const InputError& e) {
    r.fail("feature_options", "valid feature options", e.what());
  }
  const json& nets = r.array("nets");
  if (nets.empty()) r.fail("nets", "at least one net", "[]");
  std::set<int> served;
  bool has_default = false;
  for (std::size_t i = 0; i < nets.size(); ++i) {
    const std::string path = "nets[" + std::to_string(i) + "]";
    model.nets_.push_back(read_net(nets[i], path, source));
    const ModelNet& net = model.nets_.back();
    if (net.layers.empty()) {
      if (has_default)
        r.fail(path + ".layers", "one default net (layers null) at most", "a second one");
      has_default = true;
    }
    for (int l : net.layers) {
      if (!served.insert(l).second)
        r.fail(path + ".layers", "each model layer in one net",
               "layer " + std::to_string(l) + " twice");
    }
  }
  return model;
}

LearnedModel LearnedModel::read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "file", "a readable learned-policy model file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

const ModelNet* LearnedModel::net_for(int layer) const {
  const ModelNet* fallback = nullptr;
  for (const ModelNet& net : nets_) {
    if (net.layers.empty()) fallback = &net;
    if (std::find(net.layers.begin(), net.layers.end(), layer) != net.layers.end()) return &net;
  }
  return fallback;
}

void LearnedModel::scores(const ModelNet& net, const Eigen::MatrixXd& features,
                          std::span<const Token> tokens, Eigen::VectorXd& scores,
                          ScoreScratch& scratch) const {
  const Eigen::Index rows = features.rows();
  const double members = double(rows);
  const Eigen::Index outputs = net.dense[0].weights.rows();
  // Per-token shares of the first layer for the tokens scored for the first time.
  std::vector<Eigen::Index> fresh;
  for (Eigen::Index e = 0; e < rows; ++e) {
    const std::size_t t = std::size_t(tokens[std::size_t(e)]);
    if (t >= scratch.known.size())
      scratch.known.resize(std::max(t + 1, 2 * scratch.known.size()), 0);
    if (!scratch.known[t]) fresh.push_back(e);
  }
  if (scratch.token_part.size() < scratch.known.size() * std::size_t(outputs)) {
    scratch.token_part.resize(scratch.known.size() * std::size_t(outputs));
  }
  if (!fresh.empty()) {
    const auto rows_of_fresh = features(fresh, Eigen::all);
    Eigen::VectorXd x(Eigen::Index(fresh.size()));
    Eigen::MatrixXd part = Eigen::MatrixXd::Zero(Eigen::Index(fresh.size()), outputs);
    for (Eigen::Index i : net.token_inputs) {
      input_column(net.inputs[std::size_t(i)], rows_of_fresh, members, x);
      for (Eigen::Index o = 0; o < outputs; ++o) part.col(o) += net.dense[0].weights(o, i) * x;
    }
    for (std::size_t f = 0; f < fresh.size(); ++f) {
      const std::size_t t = std::size_t(tokens[std::size_t(fresh[f])]);
      for (Eigen::Index o = 0; o < outputs; ++o)
        scratch.token_part[t * std::size_t(outputs) + std::size_t(o)] = part(Eigen::Index(f), o);
      scratch.known[t] = 1;
    }
  }
  // Rows padded to whole blocks (the padding rows are zeros, their scores dropped).
  const Eigen::Index padded = (rows + kDenseBlock - 1) / kDenseBlock * kDenseBlock;
  scratch.layers.resize(net.dense.size() + 1);
  Eigen::MatrixXd& x = scratch.layers[0];
  x.resize(padded, Eigen::Index(net.step_inputs.size()));
  x.bottomRows(padded - rows).setZero();
  for (std::size_t c = 0; c < net.step_inputs.size(); ++c) {
    input_column(net.inputs[std::size_t(net.step_inputs[c])], features, members,
                 x.col(Eigen::Index(c)).head(rows));
  }
  // Each member's offset into token_part (the padding rows take the first token's share).
  scratch.part_index.resize(std::size_t(padded));
  for (Eigen::Index e = 0; e < padded; ++e) {
    const Token t = tokens[std::size_t(e < rows ? e : 0)];
    scratch.part_index[std::size_t(e)] = (long long)(t) * (long long)(outputs);
  }
  for (std::size_t d = 0; d < net.dense.size(); ++d) {
    const DenseLayer& layer = net.dense[d];
    Eigen::MatrixXd& y = scratch.layers[d + 1];
    dense_layer(layer, scratch.layers[d], d == 0 ? scratch.token_part.data() : nullptr,
                scratch.part_index, y);
    apply(layer.activation, y);
  }
  scores = scratch.layers.back().col(0).head(rows);
}

}  // namespace subevict::greedy::policies
