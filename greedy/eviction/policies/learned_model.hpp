#pragma once
/// \file
/// The model file of the learned policy (docs/learned_policy.md, "The model file"): a small JSON
/// document that maps the online features of the members of G_i (online_features.hpp) to one keep
/// score per member; the policy evicts the member with the lowest score. The file pins the feature
/// set (its version and names) and the feature options it was trained with, and holds one or more
/// nets: an input transform per feature, a standardization and dense layers. Reading it checks
/// every field and refuses a malformed, truncated or mismatched file with one InputError naming the
/// field.

#include <Eigen/Core>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "greedy/eviction/policies/online_features.hpp"

namespace subevict::greedy::policies {

/// The format name and version a model file declares ("format", "version").
inline constexpr std::string_view kLearnedModelFormat = "subevict-learned-policy";
inline constexpr int kLearnedModelVersion = 1;

/// How a feature becomes an input of a net: x = T(f · (members_scaled ? |G_i| : 1) + offset), then
/// (x − mean) / scale.
enum class InputTransform { kIdentity, kLog };

/// One input of a net: which feature and how it is transformed.
struct ModelInput {
  OnlineFeature feature = OnlineFeature::kAccumulated;
  InputTransform transform = InputTransform::kIdentity;
  bool members_scaled = false;  ///< multiply by |G_i| first (attention sums to ~g over G_i)
  double offset = 0.0;          ///< added before the transform; with kLog every value must be > 0
  double mean = 0.0;
  double scale = 1.0;  ///< > 0
};

/// The activation of a dense layer.
enum class Activation { kIdentity, kRelu, kTanh };

/// y = act(W x + b), W of (outputs × inputs).
struct DenseLayer {
  Eigen::MatrixXd weights;
  Eigen::VectorXd bias;
  Activation activation = Activation::kIdentity;
  /// The columns of `weights` LearnedModel::scores multiplies, in order, with the columns of the
  /// layer's input matrix: the first layer's step inputs (ModelNet::step_inputs), every column for
  /// a later layer. LearnedModel::parse fills them.
  std::vector<Eigen::Index> columns;
};

/// One net: its inputs, its layers (the last has one output: the keep score) and the model layers
/// it serves (empty: every layer no other net lists).
struct ModelNet {
  std::vector<int> layers;
  std::vector<ModelInput> inputs;
  std::vector<DenseLayer> dense;
  /// The inputs whose value is fixed per token (a per_token_constant feature, not members_scaled),
  /// and the others, each in input order; LearnedModel::parse fills them.
  std::vector<Eigen::Index> token_inputs, step_inputs;
};

/// What LearnedModel::scores keeps for one net between the steps of one run: the intermediate
/// layers, and per token the share of the first layer's pre-activations that comes from its
/// per-token inputs (ModelNet::token_inputs), computed when the token is first scored. A new run or
/// another net needs reset().
struct ScoreScratch {
  std::vector<Eigen::MatrixXd> layers;
  std::vector<double> token_part;  ///< token t's share for first-layer output o at t · outputs + o
  std::vector<char> known;         ///< whether token_part holds token t's share
  std::vector<long long> part_index;  ///< per member row: its token's offset into token_part
  void reset() { known.clear(); }
};

/// A read and checked model file.
class LearnedModel {
 public:
  /// Parses and checks `text` (the file's contents); `source` names it in errors. Throws
  /// InputError(source, FIELD, ...) for invalid JSON, a missing or mistyped field, another format,
  /// version or feature version, feature names other than online_feature_names() in order, a net
  /// whose shapes do not chain to one output, a non-finite number, a scale <= 0, a layer served by
  /// two nets, or two default nets.
  static LearnedModel parse(std::string_view text, const std::string& source);
  /// Reads the file at `path` and parses it (InputError(path, "file", ...) when it cannot be read).
  static LearnedModel read(const std::string& path);

  /// The feature options the model was trained with (the policy builds its features with them).
  [[nodiscard]] const OnlineFeatureOptions& feature_options() const { return options_; }
  /// The net that serves model layer `layer`: the one that lists it, else the default; nullptr
  /// when none does.
  [[nodiscard]] const ModelNet* net_for(int layer) const;
  /// The keep scores of the rows of `features` (one member per row, OnlineFeatures' columns) of
  /// the members `tokens` (one per row) under `net`, into `scores` (resized); `scratch` is the
  /// caller's (one model serves several threads) and must have been reset() when the net or the run
  /// changed: a token's per-token inputs are read at its first scoring only. O(rows · Σ layer
  /// sizes).
  void scores(const ModelNet& net, const Eigen::MatrixXd& features, std::span<const Token> tokens,
              Eigen::VectorXd& scores, ScoreScratch& scratch) const;
  /// The file it was read from (or the parse source).
  [[nodiscard]] const std::string& source() const { return source_; }

 private:
  std::string source_;
  OnlineFeatureOptions options_;
  std::vector<ModelNet> nets_;
};

}  // namespace subevict::greedy::policies
