#include "core/workload_io.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <climits>
#include <cmath>
#include <limits>

#include "core/npy.hpp"
#include "core/safetensors.hpp"
#include "io_test_support.hpp"

namespace subevict {
namespace {

using testing::bits;
using testing::kValidDataDir;
using testing::rejects;
using testing::ScratchDir;

/// The reference workloads of tests/data/valid (see make_valid.py): layers=2, q_heads=2,
/// kv_heads=1, tokens=3, head_dim=2; q = value, k = -value / 4, v = value / 2.
const Shape kReferenceShape{2, 2, 1, 3, 2};
float reference_value(int layer, int head, int token, int dim) {
  return float(layer * 1000 + head * 100 + token * 10 + dim);
}

void expect_reference_values(const Workload& w) {
  ASSERT_EQ(w.shape(), kReferenceShape);
  for (int l = 0; l < 2; ++l) {
    for (int t = 0; t < 3; ++t) {
      for (int d = 0; d < 2; ++d) {
        for (int h = 0; h < 2; ++h) EXPECT_EQ(w.q(l, h)(t, d), reference_value(l, h, t, d));
        EXPECT_EQ(w.k(l, 0)(t, d), -0.25f * reference_value(l, 0, t, d));
        EXPECT_EQ(w.v(l, 0)(t, d), 0.5f * reference_value(l, 0, t, d));
      }
    }
  }
}

Workload arbitrary_workload() {
  Shape shape;
  shape.layers = *rc::gen::inRange(1, 4);
  shape.kv_heads = *rc::gen::inRange(1, 4);
  shape.q_heads = shape.kv_heads * *rc::gen::inRange(1, 4);
  shape.tokens = *rc::gen::inRange(1, 6);
  shape.head_dim = *rc::gen::inRange(1, 5);
  Workload workload(shape);
  for (std::vector<float>* data : {&workload.q_data(), &workload.k_data(), &workload.v_data()}) {
    *data = *rc::gen::container<std::vector<float>>(data->size(), testing::finite_value<float>());
  }
  return workload;
}

void assert_same_tensors(const Workload& read, const Workload& written) {
  RC_ASSERT(read.shape() == written.shape());
  RC_ASSERT(bits(read.q_data()) == bits(written.q_data()));
  RC_ASSERT(bits(read.k_data()) == bits(written.k_data()));
  RC_ASSERT(bits(read.v_data()) == bits(written.v_data()));
}

RC_GTEST_PROP(WorkloadIoRoundTrip, SafetensorsKeepsTensorsScaleAndMetadataBitExact, ()) {
  static ScratchDir scratch;
  Workload workload = arbitrary_workload();
  const double scale = std::abs(*testing::finite_value<double>());
  if (scale > 0.0) workload.set_score_scale(scale);
  const auto text = rc::gen::container<std::string>(
      rc::gen::map(rc::gen::inRange(32, 127), [](int c) { return static_cast<char>(c); }));
  const auto keys = *rc::gen::container<std::vector<std::string>>(text);
  for (const std::string& key : keys) workload.metadata["meta." + key] = *text;
  const std::string path = scratch.unique(".safetensors");
  write_workload(path, workload);
  const Workload read = read_workload(path);
  assert_same_tensors(read, workload);
  RC_ASSERT(std::bit_cast<std::uint64_t>(read.score_scale()) ==
            std::bit_cast<std::uint64_t>(workload.score_scale()));
  RC_ASSERT(read.metadata == workload.metadata);
}

RC_GTEST_PROP(WorkloadIoRoundTrip, NpyDirectoryKeepsTensorsBitExact, ()) {
  static ScratchDir scratch;
  const Workload workload = arbitrary_workload();
  const std::string dir = scratch.unique("_workload");
  write_workload(dir, workload);
  const Workload read = read_workload(dir);
  assert_same_tensors(read, workload);
  RC_ASSERT(read.score_scale() == 1.0 / std::sqrt(double(workload.shape().head_dim)));
}

TEST(WorkloadIo, GqaFileFollowsTheNamingConvention) {
  ScratchDir scratch;
  Workload workload(Shape{2, 8, 2, 5, 4});
  workload.k_data()[3] = 1.5f;
  workload.set_score_scale(0.1);
  workload.metadata = {{"source", "unit test"}};
  const std::string path = scratch.path("gqa.safetensors");
  write_workload(path, workload);
  const SafetensorsFile file = read_safetensors(path);
  EXPECT_EQ(file.tensors.size(), 6u);
  EXPECT_EQ(file.tensors.at("layers.1.q").shape, (std::vector<std::size_t>{8, 5, 4}));
  EXPECT_EQ(file.tensors.at("layers.1.k").shape, (std::vector<std::size_t>{2, 5, 4}));
  EXPECT_EQ(file.tensors.at("layers.0.k").data[3], 1.5f);
  EXPECT_EQ(file.metadata, (std::map<std::string, std::string>{
                               {"format", "subevict.qkv.v1"},
                               {"score_scale", "0.10000000000000001"},  // max_digits10 = 17
                               {"source", "unit test"}}));
  const Workload read = read_workload(path);
  EXPECT_EQ(read, workload);
  EXPECT_EQ(read.metadata, workload.metadata);
  EXPECT_EQ(read.shape().attention_kind(), "GQA");
}

TEST(WorkloadIo, ReadsIndependentlyWrittenF16File) {
  const Workload w = read_workload(kValidDataDir + "/reference_workload.safetensors");
  expect_reference_values(w);
  EXPECT_EQ(w.score_scale(), 0.5);
  EXPECT_EQ(w.metadata, (std::map<std::string, std::string>{{"model", "toy"}}));
}

TEST(WorkloadIo, ReadsIndependentlyWrittenNpyDirectory) {
  const Workload w = read_workload(kValidDataDir + "/reference_workload_npy");
  expect_reference_values(w);
  EXPECT_EQ(w.score_scale(), 1.0 / std::sqrt(2.0));
  EXPECT_TRUE(w.metadata.empty());
}

/// Tensors of a valid workload file (all ones) that a test then breaks.
std::map<std::string, Tensor<float>> layer_tensors(int layers, std::size_t q_heads,
                                                   std::size_t kv_heads, std::size_t tokens,
                                                   std::size_t head_dim) {
  std::map<std::string, Tensor<float>> tensors;
  for (int l = 0; l < layers; ++l) {
    const std::string prefix = "layers." + std::to_string(l) + ".";
    tensors[prefix + "q"] = {{q_heads, tokens, head_dim},
                             std::vector<float>(q_heads * tokens * head_dim, 1.0f)};
    for (const char* part : {"k", "v"}) {
      tensors[prefix + part] = {{kv_heads, tokens, head_dim},
                                std::vector<float>(kv_heads * tokens * head_dim, 1.0f)};
    }
  }
  return tensors;
}

class WorkloadFileValidation : public ::testing::Test {
 protected:
  /// Writes the tensors and metadata, then expects read_workload to reject them with `parts`.
  ::testing::AssertionResult rejected(const std::map<std::string, Tensor<float>>& tensors,
                                      const std::vector<std::string>& parts,
                                      const std::map<std::string, std::string>& metadata = {}) {
    const std::string path = scratch_.unique(".safetensors");
    write_safetensors(path, tensors, metadata);
    std::vector<std::string> with_path = parts;
    with_path.push_back(path);
    return rejects([&] { read_workload(path); }, with_path);
  }
  ScratchDir scratch_;
};

TEST_F(WorkloadFileValidation, AcceptsTheBaseCase) {
  const std::string path = scratch_.path("ok.safetensors");
  write_safetensors(path, layer_tensors(2, 4, 2, 3, 5));
  EXPECT_EQ(read_workload(path).shape(), (Shape{2, 4, 2, 3, 5}));
}

TEST_F(WorkloadFileValidation, UnknownNamesAreRejectedWithThePattern) {
  for (const std::string name : {"model.embed", "layers.01.q", "layers.0.qq", "layers.-1.q", "layers.0.v_pre",
                                 "layers.0.q_pre.", "layers.0.", "layers.0",
                                 "layers.0.Q", "layers..q", "layers.99999999999999999999.q"}) {
    auto tensors = layer_tensors(1, 1, 1, 2, 2);
    tensors[name] = {{1}, {1.0f}};
    EXPECT_TRUE(rejected(tensors, {"tensor '" + name + "'", "layers.{l}.q, layers.{l}.k, layers.{l}.v,"}));
  }
}

TEST_F(WorkloadFileValidation, LayersMustBeCompleteAndContiguous) {
  auto missing = layer_tensors(2, 2, 1, 2, 2);
  missing.erase("layers.1.v");
  EXPECT_TRUE(rejected(missing, {"tensor 'layers.1.v': expected q, k and v for every layer"}));
  auto gap = layer_tensors(3, 2, 1, 2, 2);
  for (const char* name : {"layers.1.q", "layers.1.k", "layers.1.v"}) gap.erase(name);
  EXPECT_TRUE(rejected(gap, {"tensor 'layers.1.q': expected layers numbered contiguously from 0",
                             "no tensors for layer 1 but some for layer 2"}));
  EXPECT_TRUE(rejected({}, {"tensors: expected layers.0.q"}));
}

TEST_F(WorkloadFileValidation, ShapesMustAgree) {
  auto layer_differs = layer_tensors(2, 2, 1, 3, 2);
  layer_differs["layers.1.k"] = {{1, 4, 2}, std::vector<float>(8, 1.0f)};
  layer_differs["layers.1.v"] = layer_differs["layers.1.k"];
  EXPECT_TRUE(
      rejected(layer_differs, {"tensor 'layers.1.k': shape: expected [1, 3, 2] (as in layer 0)"}));
  auto v_differs = layer_tensors(1, 2, 2, 3, 2);
  v_differs["layers.0.v"] = {{1, 3, 2}, std::vector<float>(6, 1.0f)};
  EXPECT_TRUE(rejected(v_differs, {"tensor 'layers.0.v': shape: expected the shape of k"}));
  EXPECT_TRUE(rejected(layer_tensors(1, 3, 2, 3, 2),
                       {"tensor 'layers.0.k': shape: expected a number of KV heads that divides "
                        "q_heads = 3, got 2 KV heads"}));
  auto tokens_differ = layer_tensors(1, 2, 1, 3, 2);
  tokens_differ["layers.0.k"] = tokens_differ["layers.0.v"] = {{1, 4, 2}, std::vector<float>(8)};
  EXPECT_TRUE(rejected(tokens_differ,
                       {"tensor 'layers.0.k': shape: expected tokens and head_dim equal to those "
                        "of q ([2, 3, 2])"}));
  auto rank = layer_tensors(1, 1, 1, 2, 2);
  rank["layers.0.q"] = {{1, 2, 2, 1}, std::vector<float>(4, 1.0f)};
  EXPECT_TRUE(rejected(rank, {"tensor 'layers.0.q': shape: expected [heads, tokens, head_dim]"}));
  EXPECT_TRUE(rejected(layer_tensors(1, 1, 1, 0, 2),
                       {"tensor 'layers.0.q': shape: expected dimensions between 1 and"}));
}

TEST_F(WorkloadFileValidation, MetadataMustBeWellFormed) {
  const auto tensors = layer_tensors(1, 1, 1, 2, 2);
  EXPECT_TRUE(rejected(tensors, {"__metadata__ 'format': expected 'subevict.qkv.v1'"},
                       {{"format", "subevict.qkv.v2"}}));
  for (const std::string bad : {"abc", "-1", "0", "inf", "nan", "0.5x", " 0.5", ""}) {
    EXPECT_TRUE(rejected(tensors,
                         {"__metadata__ 'score_scale': expected a positive finite decimal number"},
                         {{"score_scale", bad}}))
        << bad;
  }
}

TEST_F(WorkloadFileValidation, AttentionWindowsAreOneIntegerPerLayer) {
  const auto tensors = layer_tensors(3, 1, 1, 2, 2);
  const std::string path = scratch_.unique(".safetensors");
  write_safetensors(path, tensors, {{"attention_windows", "0,512,1"}});
  const Workload w = read_workload(path);
  EXPECT_EQ(w.windows(), (std::vector<int>{0, 512, 1}));
  EXPECT_EQ(w.window(1), 512);
  EXPECT_TRUE(w.metadata.empty());  // a reserved key, not provenance
  for (const std::string bad : {"0,512", "0,512,1,1", "0,-1,1", "0,x,1", "0,,1", "", "0, 1,1", "0,1,99999999999"}) {
    EXPECT_TRUE(rejected(tensors, {"__metadata__ 'attention_windows': expected 3 comma-separated integers >= 0"},
                         {{"attention_windows", bad}}))
        << bad;
  }
}

TEST(WorkloadWindows, RoundTripThroughSafetensorsAndRefusedByTheDirectoryForm) {
  ScratchDir scratch;
  Workload w(Shape{3, 2, 1, 4, 2});
  w.q_data()[5] = 1.5f;
  EXPECT_EQ(w.windows(), (std::vector<int>{0, 0, 0}));
  EXPECT_FALSE(w.has_windows());
  w.set_windows({0, 2, 0});
  EXPECT_TRUE(w.has_windows());
  const std::string file = scratch.path("w.safetensors");
  write_workload(file, w);
  const Workload back = read_workload(file);
  EXPECT_EQ(back.windows(), (std::vector<int>{0, 2, 0}));
  EXPECT_TRUE(back == w);
  Workload global = w;
  global.set_windows({0, 0, 0});
  EXPECT_FALSE(global == w);  // the mask is part of the workload
  EXPECT_FALSE(global.has_windows());
  const std::string dir = scratch.path("dir");
  EXPECT_TRUE(rejects([&] { write_workload(dir, w); }, {dir, "attention_windows: expected every layer global", "0,2,0"}));
  EXPECT_FALSE(std::filesystem::exists(dir));
  Workload reserved = global;
  reserved.metadata["attention_windows"] = "0,0,0";
  EXPECT_TRUE(rejects([&] { write_workload(scratch.path("r.safetensors"), reserved); },
                      {"metadata: expected no entry named 'attention_windows' (reserved)"}));
  EXPECT_THROW(w.set_windows({0, 1}), std::invalid_argument);
  EXPECT_THROW(w.set_windows({0, -1, 0}), std::invalid_argument);
  EXPECT_THROW((void)w.window(3), std::out_of_range);
}

TEST(WorkloadPrefix, FirstTokensKeepsEveryHeadsLeadingRowsAndTheMask) {
  Workload w(Shape{2, 4, 2, 5, 3});
  for (std::size_t i = 0; i < w.q_data().size(); ++i) w.q_data()[i] = float(i);
  for (std::size_t i = 0; i < w.k_data().size(); ++i) w.k_data()[i] = -float(i), w.v_data()[i] = 0.5f * float(i);
  w.set_score_scale(0.25);
  w.set_windows({0, 2});
  w.metadata["source"] = "test";
  const Workload p = first_tokens(w, 3);
  EXPECT_EQ(p.shape(), (Shape{2, 4, 2, 3, 3}));
  for (int l = 0; l < 2; ++l) {
    for (int h = 0; h < 4; ++h) EXPECT_EQ(RowMatrixf(p.q(l, h)), RowMatrixf(w.q(l, h).topRows(3))) << l << " " << h;
    for (int h = 0; h < 2; ++h) {
      EXPECT_EQ(RowMatrixf(p.k(l, h)), RowMatrixf(w.k(l, h).topRows(3))) << l << " " << h;
      EXPECT_EQ(RowMatrixf(p.v(l, h)), RowMatrixf(w.v(l, h).topRows(3))) << l << " " << h;
    }
  }
  EXPECT_EQ(p.score_scale(), 0.25);
  EXPECT_EQ(p.windows(), (std::vector<int>{0, 2}));
  EXPECT_EQ(p.metadata, w.metadata);
  EXPECT_TRUE(first_tokens(w, 5) == w);
  EXPECT_THROW(first_tokens(w, 0), std::invalid_argument);
  EXPECT_THROW(first_tokens(w, 6), std::invalid_argument);
}

TEST_F(WorkloadFileValidation, NonfiniteValuesNameTheTensor) {
  auto tensors = layer_tensors(1, 1, 1, 2, 2);
  tensors["layers.0.v"].data[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(rejected(tensors, {"tensor 'layers.0.v': values", "NaN at element 3"}));
}

TEST(WorkloadIoDirectory, ValidatesTheNpyTriple) {
  ScratchDir scratch;
  const std::string dir = scratch.path("w");
  write_workload(dir, Workload(Shape{2, 2, 1, 3, 2}));
  std::filesystem::remove(dir + "/k.npy");
  EXPECT_TRUE(rejects([&] { read_workload(dir); }, {"k.npy: file: expected a readable file"}));
  write_npy(dir + "/k.npy", Tensor<float>{{2, 1, 3, 2}, std::vector<float>(12)});
  write_npy(dir + "/v.npy", Tensor<float>{{1, 1, 3, 2}, std::vector<float>(6)});
  EXPECT_TRUE(rejects([&] { read_workload(dir); },
                      {"v.npy: shape: expected 2 layers (as in q.npy), got [1, 1, 3, 2]"}));
  write_npy(dir + "/q.npy", Tensor<float>{{2, 3, 2}, std::vector<float>(12)});
  EXPECT_TRUE(rejects([&] { read_workload(dir); },
                      {"q.npy: shape: expected [layers, heads, tokens, head_dim]"}));
}

TEST(WorkloadIoWrite, RefusesToLoseOrCorruptInformation) {
  ScratchDir scratch;
  Workload scaled(Shape{1, 1, 1, 2, 4});
  scaled.set_score_scale(0.25);
  const std::string dir = scratch.path("scaled");
  EXPECT_TRUE(rejects([&] { write_workload(dir, scaled); },
                      {dir, "score_scale: expected the default 1/sqrt(head_dim)", "got 0.25"}));
  EXPECT_FALSE(std::filesystem::exists(dir));
  scaled.set_score_scale(0.5);  // = 1/sqrt(4), the default
  EXPECT_NO_THROW(write_workload(dir, scaled));

  Workload reserved(Shape{1, 1, 1, 2, 2});
  reserved.metadata["score_scale"] = "2";
  EXPECT_TRUE(rejects([&] { write_workload(scratch.path("r.safetensors"), reserved); },
                      {"metadata: expected no entry named 'score_scale' (reserved)"}));
  EXPECT_TRUE(rejects([&] { write_workload(scratch.path("d.safetensors"), Workload()); },
                      {"workload: expected tensors sized as layers=1"}));
  const std::string file = scratch.path("plain_file");
  testing::write_bytes(file, {});
  EXPECT_TRUE(rejects([&] { write_workload(file, Workload(Shape{})); },
                      {file, "output directory: expected a directory"}));
  EXPECT_TRUE(
      rejects([&] { write_workload(scratch.path("no/such/dir/w.safetensors"), Workload(Shape{})); },
              {"output file: expected to be written atomically"}));
}

/// A workload of `shape` with distinct values everywhere and pre-RoPE tensors (q_pre = q + 0.5,
/// k_pre = k − 0.5: the reader does not tie them to q and k) on the given per-layer bases.
Workload pre_rope_workload(const Shape& shape, const std::vector<double>& bases, int dims) {
  Workload w(shape);
  for (std::size_t i = 0; i < w.q_data().size(); ++i) w.q_data()[i] = 0.25f * float(i);
  for (std::size_t i = 0; i < w.k_data().size(); ++i) w.k_data()[i] = -0.5f * float(i), w.v_data()[i] = float(i);
  std::vector<float> q_pre = w.q_data(), k_pre = w.k_data();
  for (float& x : q_pre) x += 0.5f;
  for (float& x : k_pre) x -= 0.5f;
  std::vector<Rotary> rotaries;
  for (double base : bases) rotaries.push_back(Rotary{base, dims});
  w.set_pre_rope(std::move(q_pre), std::move(k_pre), rotaries);
  return w;
}

TEST(WorkloadPreRope, RoundTripThroughSafetensorsWithEachLayersBase) {
  ScratchDir scratch;
  // Gemma 3's two bases (sliding and global layers), a base that needs 17 digits.
  const Workload w = pre_rope_workload(Shape{3, 4, 2, 5, 6}, {10000.0, 1e6, 1.0 / 3.0 + 500000.0}, 4);
  const std::string file = scratch.path("w.safetensors");
  write_workload(file, w);
  const Workload back = read_workload(file);
  ASSERT_TRUE(back.has_pre_rope());
  EXPECT_EQ(bits(back.q_pre_data()), bits(w.q_pre_data()));
  EXPECT_EQ(bits(back.k_pre_data()), bits(w.k_pre_data()));
  EXPECT_EQ(back.rotaries(), w.rotaries());
  EXPECT_EQ(back.rotary(2).base, 1.0 / 3.0 + 500000.0);
  EXPECT_TRUE(back == w);
  EXPECT_TRUE(back.metadata.empty());  // reserved keys, not provenance
  // The tensors are part of the workload: without them it differs.
  Workload without = w;
  without.clear_pre_rope();
  EXPECT_FALSE(without == w);
  EXPECT_FALSE(read_workload(file) == without);
  // A prefix keeps the pre-RoPE rows and the rotaries.
  const Workload p = first_tokens(w, 2);
  ASSERT_TRUE(p.has_pre_rope());
  EXPECT_EQ(p.rotaries(), w.rotaries());
  for (int l = 0; l < 3; ++l) {
    for (int h = 0; h < 4; ++h) EXPECT_EQ(RowMatrixf(p.q_pre(l, h)), RowMatrixf(w.q_pre(l, h).topRows(2)));
    for (int h = 0; h < 2; ++h) EXPECT_EQ(RowMatrixf(p.k_pre(l, h)), RowMatrixf(w.k_pre(l, h).topRows(2)));
  }
}

TEST(WorkloadPreRope, WritersRefuseWhatTheyCannotStore) {
  ScratchDir scratch;
  const Workload w = pre_rope_workload(Shape{1, 2, 1, 3, 4}, {10000.0}, 4);
  const std::string dir = scratch.path("dir");
  EXPECT_TRUE(rejects([&] { write_workload(dir, w); }, {dir, "pre-RoPE tensors: expected none"}));
  EXPECT_FALSE(std::filesystem::exists(dir));
  Workload two = pre_rope_workload(Shape{2, 2, 1, 3, 4}, {10000.0, 10000.0}, 4);
  two.set_pre_rope(two.q_pre_data(), two.k_pre_data(), {Rotary{10000.0, 4}, Rotary{10000.0, 2}});
  const std::string mixed = scratch.path("mixed.safetensors");
  EXPECT_TRUE(rejects([&] { write_workload(mixed, two); }, {mixed, "rotary dims: expected one count", "4 and 2"}));
  EXPECT_FALSE(std::filesystem::exists(mixed));
  for (const char* key : {"rotary_bases", "rotary_dims", "rotary_pairing"}) {
    Workload reserved = w;
    reserved.metadata[key] = "1";
    EXPECT_TRUE(rejects([&] { write_workload(scratch.unique(".safetensors"), reserved); },
                        {"metadata: expected no entry named '" + std::string(key) + "' (reserved)"}));
  }
  Workload bad = w;
  EXPECT_THROW(bad.set_pre_rope(w.q_pre_data(), {}, w.rotaries()), std::invalid_argument);
  EXPECT_THROW(bad.set_pre_rope(w.q_pre_data(), w.k_pre_data(), {}), std::invalid_argument);
  EXPECT_THROW(bad.set_pre_rope(w.q_pre_data(), w.k_pre_data(), {Rotary{10000.0, 3}}), std::invalid_argument);
  EXPECT_THROW(bad.set_pre_rope(w.q_pre_data(), w.k_pre_data(), {Rotary{10000.0, 6}}), std::invalid_argument);
  EXPECT_THROW(bad.set_pre_rope(w.q_pre_data(), w.k_pre_data(), {Rotary{1.0, 4}}), std::invalid_argument);
  EXPECT_THROW((void)Workload(Shape{1, 1, 1, 2, 2}).q_pre(0, 0), std::logic_error);
}

/// layer_tensors with q_pre and k_pre in every layer, and the rotary metadata for them.
std::map<std::string, Tensor<float>> pre_rope_tensors(int layers) {
  auto tensors = layer_tensors(layers, 2, 1, 3, 4);
  for (int l = 0; l < layers; ++l) {
    const std::string prefix = "layers." + std::to_string(l) + ".";
    tensors[prefix + "q_pre"] = tensors[prefix + "q"];
    tensors[prefix + "k_pre"] = tensors[prefix + "k"];
  }
  return tensors;
}
const std::map<std::string, std::string> kRotaryMetadata = {
    {"rotary_bases", "10000,1e6"}, {"rotary_dims", "4"}, {"rotary_pairing", "rotate_half"}};

TEST_F(WorkloadFileValidation, PreRopeTensorsComeInPairsInEveryLayerWithTheirShapes) {
  const std::string path = scratch_.unique(".safetensors");
  write_safetensors(path, pre_rope_tensors(2), kRotaryMetadata);
  const Workload ok = read_workload(path);
  ASSERT_TRUE(ok.has_pre_rope());
  EXPECT_EQ(ok.rotaries(), (std::vector<Rotary>{{10000.0, 4}, {1e6, 4}}));

  auto lone = pre_rope_tensors(2);
  lone.erase("layers.0.k_pre");
  EXPECT_TRUE(rejected(lone, {"tensor 'layers.0.k_pre': expected q_pre and k_pre in every layer or in none", "missing"},
                       kRotaryMetadata));
  auto partial = pre_rope_tensors(2);
  partial.erase("layers.1.q_pre");
  partial.erase("layers.1.k_pre");
  EXPECT_TRUE(rejected(partial, {"tensor 'layers.1.q_pre': expected q_pre and k_pre in every layer or in none"},
                       kRotaryMetadata));
  auto late = layer_tensors(2, 2, 1, 3, 4);
  late["layers.1.q_pre"] = late["layers.1.q"];
  EXPECT_TRUE(rejected(late, {"tensor 'layers.1.q_pre'", "present where layer 0 lacks one of them"}, kRotaryMetadata));
  auto shape = pre_rope_tensors(2);
  shape["layers.1.k_pre"] = shape["layers.1.q"];  // [2, 3, 4] where k is [1, 3, 4]
  EXPECT_TRUE(rejected(shape, {"tensor 'layers.1.k_pre': shape: expected [1, 3, 4] (the shape of k)", "got [2, 3, 4]"},
                       kRotaryMetadata));
  auto nan = pre_rope_tensors(2);
  nan["layers.1.q_pre"].data[5] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(rejected(nan, {"tensor 'layers.1.q_pre': values", "element 5"}, kRotaryMetadata));
}

TEST_F(WorkloadFileValidation, RotaryMetadataExactlyWithThePreRopeTensors) {
  for (const auto& [key, value] : kRotaryMetadata) {
    auto without = kRotaryMetadata;
    without.erase(key);
    EXPECT_TRUE(rejected(pre_rope_tensors(2), {"__metadata__ '" + key + "': expected an entry", "got none"}, without))
        << key;
    EXPECT_TRUE(rejected(layer_tensors(2, 2, 1, 3, 4),
                         {"__metadata__ '" + key + "': expected no rotary entry without the pre-RoPE tensors"},
                         {{key, value}}))
        << key;
  }
  const auto with = [](const std::string& key, const std::string& value) {
    auto metadata = kRotaryMetadata;
    metadata[key] = value;
    return metadata;
  };
  for (const std::string bad : {"10000", "10000,1e6,1e6", "10000,1", "10000,-5", "10000,inf", "10000,nan", "10000,x", "10000,"}) {
    EXPECT_TRUE(rejected(pre_rope_tensors(2), {"__metadata__ 'rotary_bases': expected 2 comma-separated finite RoPE bases > 1"},
                         with("rotary_bases", bad)))
        << bad;
  }
  for (const std::string bad : {"0", "3", "6", "-2", "4x", "", " 4"}) {
    EXPECT_TRUE(rejected(pre_rope_tensors(2), {"__metadata__ 'rotary_dims': expected an even count of rotated dims from 2 to head_dim 4"},
                         with("rotary_dims", bad)))
        << bad;
  }
  for (const std::string bad : {"interleaved", "rotate-half", ""}) {
    EXPECT_TRUE(rejected(pre_rope_tensors(2), {"__metadata__ 'rotary_pairing': expected 'rotate_half'"},
                         with("rotary_pairing", bad)))
        << bad;
  }
}

// Boundaries of the workload reader's bounds: at the limit and one below accepted, one above
// rejected naming the file, the tensor and the dimension.

TEST_F(WorkloadFileValidation, DimensionsUpToIntMax) {
  // Zero-element tensors carry the largest dimensions without data; the error names the first
  // dimension out of [1, INT_MAX], so a 0 after INT_MAX (or INT_MAX − 1) shows those were accepted.
  for (const std::size_t accepted : {std::size_t(INT_MAX), std::size_t(INT_MAX) - 1}) {
    auto tensors = layer_tensors(1, 1, 1, 2, 2);
    tensors["layers.0.q"] = {{accepted, 1, 0}, {}};
    EXPECT_TRUE(rejected(tensors, {"tensor 'layers.0.q': shape: expected dimensions between 1 and 2147483647",
                                   "(dimension 2 is 0)"}));
  }
  auto above = layer_tensors(1, 1, 1, 2, 2);
  above["layers.0.q"] = {{std::size_t(INT_MAX) + 1, 1, 0}, {}};
  EXPECT_TRUE(rejected(above, {"tensor 'layers.0.q': shape", "(dimension 0 is 2147483648)"}));
  // Layer numbers: INT_MAX parses (then the numbering has a gap), INT_MAX + 1 does not.
  auto last_layer = layer_tensors(1, 1, 1, 2, 2);
  last_layer["layers.2147483647.q"] = {{1}, {1.0f}};
  EXPECT_TRUE(rejected(last_layer, {"layers numbered contiguously from 0", "some for layer 2147483647"}));
  auto past_int = layer_tensors(1, 1, 1, 2, 2);
  past_int["layers.2147483648.q"] = {{1}, {1.0f}};
  EXPECT_TRUE(rejected(past_int, {"tensor 'layers.2147483648.q'", "layers.{l}.q, layers.{l}.k, layers.{l}.v,"}));
}

TEST(WorkloadShapeBounds, ElementCountUpTo2To40) {
  // Shape::validate, which read_workload applies to every file (as "a valid workload shape").
  constexpr int kTwoTo20 = 1 << 20;
  EXPECT_NO_THROW((Shape{1, 1, 1, kTwoTo20, kTwoTo20}.validate()));          // 2^40
  EXPECT_NO_THROW((Shape{1, 1, 1, kTwoTo20 - 1, kTwoTo20 + 1}.validate()));  // 2^40 − 1
  EXPECT_THROW((Shape{1, 1, 1, kTwoTo20 + 1, kTwoTo20}.validate()), std::invalid_argument);
  EXPECT_THROW((Shape{2, 1, 1, kTwoTo20, kTwoTo20}.validate()), std::invalid_argument);
  // 2^16 in each of the four factors is 2^64 elements, which wraps to 0 in 64 bits.
  EXPECT_THROW((Shape{1 << 16, 1 << 16, 1, 1 << 16, 1 << 16}.validate()), std::invalid_argument);
  EXPECT_THROW((Shape{INT_MAX, INT_MAX, 1, INT_MAX, INT_MAX}.validate()), std::invalid_argument);
}

}  // namespace
}  // namespace subevict
