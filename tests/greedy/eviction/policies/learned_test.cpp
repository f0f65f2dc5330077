// Tests greedy/eviction/policies/learned_model.hpp, learned.hpp and
// greedy/eviction/evaluation/feature_trace.hpp: every malformed or mismatched model file is refused
// naming its field; a net's scores equal a hand evaluation; the learned policy keeps the process
// contract and evicts, at every full step, the member a hand evaluation of its net scores lowest
// on the recorded features; feature traces record what the replayed schedule evicts.
#include "greedy/eviction/policies/learned.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/counter_rng.hpp"
#include "core/input_error.hpp"
#include "greedy/eviction/evaluation/feature_trace.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"
#include "greedy/eviction/policies/recorded_policy.hpp"
#include "tests/core/scoped_cpu_path.hpp"
#include "tests/greedy/eviction/evaluation/resumable_check.hpp"
#include "tests/greedy/naive_eviction.hpp"

namespace subevict::greedy {
namespace {

using policies::kOnlineFeatureCount;
using policies::LearnedModel;
using policies::OnlineFeature;
using policies::ScoreScratch;

std::string number(double x) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", x);
  return text;
}

/// A valid model document: one hidden layer of `hidden` units with `activation` over every feature
/// (attention features logged and scaled by |G_i|), weights drawn from `seed`; `layers` is the
/// net's "layers" value.
std::string model_text(std::uint64_t seed, int hidden = 3, const std::string& layers = "null",
                       const std::string& activation = "tanh") {
  auto draw = [&, i = std::uint64_t(0)]() mutable {
    return 2.0 * uniform(seed, 0x1ea7, i++) - 1.0;
  };
  std::string inputs;
  for (int f = 0; f < kOnlineFeatureCount; ++f) {
    const bool attention = f <= 2;
    inputs += std::string(f ? "," : "") + "{\"feature\":\"" +
              std::string(policies::online_feature_names()[f]) + "\",\"transform\":\"" +
              (attention || f == 3 ? "log" : "identity") +
              "\",\"members_scaled\":" + (attention ? "true" : "false") + ",\"offset\":" +
              (attention ? "0.001"
               : f == 3  ? "1"
                         : "0") +
              ",\"mean\":" + number(draw()) + ",\"scale\":" + number(1.0 + draw() * 0.5) + "}";
  }
  const auto matrix = [&](int rows, int cols) {
    std::string m = "[";
    for (int r = 0; r < rows; ++r) {
      m += r ? ",[" : "[";
      for (int c = 0; c < cols; ++c) m.append(c ? "," : "").append(number(draw()));
      m += "]";
    }
    return m + "]";
  };
  const auto vector = [&](int size) {
    std::string v = "[";
    for (int i = 0; i < size; ++i) v.append(i ? "," : "").append(number(draw()));
    return v + "]";
  };
  std::string names;
  for (std::string_view n : policies::online_feature_names())
    names += (names.empty() ? "\"" : ",\"") + std::string(n) + "\"";
  return "{\"format\":\"subevict-learned-policy\",\"version\":1,\"features_version\":1,"
         "\"features\":[" +
         names +
         "],\"feature_options\":{\"window\":4,\"sinks\":2,\"trend_rate\":0.25},\"nets\":[{"
         "\"layers\":" +
         layers + ",\"inputs\":[" + inputs + "],\"dense\":[{\"activation\":\"" + activation +
         "\",\"weights\":" + matrix(hidden, kOnlineFeatureCount) + ",\"bias\":" + vector(hidden) +
         "},{\"activation\":\"identity\",\"weights\":" + matrix(1, hidden) +
         ",\"bias\":" + vector(1) + "}]}]}";
}

/// `text` with the first occurrence of `from` replaced by `to` (the test's edits must apply).
std::string edited(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

/// The keep score of one member by hand: transforms, standardization, hidden layer, output.
double hand_score(const policies::ModelNet& net, const Eigen::MatrixXd& f, int row) {
  std::vector<double> x;
  for (const policies::ModelInput& in : net.inputs) {
    double v = f(row, int(in.feature)) * (in.members_scaled ? double(f.rows()) : 1.0) + in.offset;
    if (in.transform == policies::InputTransform::kLog) v = std::log(v > 0.0 ? v : in.offset);
    x.push_back((v - in.mean) / in.scale);
  }
  for (const policies::DenseLayer& layer : net.dense) {
    std::vector<double> y;
    for (Eigen::Index o = 0; o < layer.weights.rows(); ++o) {
      double s = layer.bias(o);
      for (std::size_t i = 0; i < x.size(); ++i) s += layer.weights(o, Eigen::Index(i)) * x[i];
      y.push_back(layer.activation == policies::Activation::kTanh   ? std::tanh(s)
                  : layer.activation == policies::Activation::kRelu ? std::max(s, 0.0)
                                                                    : s);
    }
    x = y;
  }
  return x[0];
}

TEST(LearnedModel, RefusesEveryMalformedOrMismatchedFileNamingTheField) {
  const std::string good = model_text(1);
  EXPECT_NO_THROW((void)LearnedModel::parse(good, "m.json"));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {good.substr(0, good.size() / 2), "model file"},  // truncated
      {edited(good, "\"subevict-learned-policy\"", "\"other\""), "format"},
      {edited(good, "\"version\":1", "\"version\":2"), "version"},
      {edited(good, "\"features_version\":1", "\"features_version\":2"), "features_version"},
      {edited(good, "\"accumulated_attention\",\"current_attention\"",
              "\"current_attention\",\"accumulated_attention\""),
       "features"},
      {edited(good, "\"window\":4", "\"window\":0"), "feature_options"},
      {edited(good, "\"transform\":\"log\"", "\"transform\":\"sqrt\""),
       "nets[0].inputs[0].transform"},
      {edited(good, "\"offset\":0.001", "\"offset\":0"), "nets[0].inputs[0].offset"},
      {edited(good, "\"feature\":\"accumulated_attention\"", "\"feature\":\"nonsense\""),
       "nets[0].inputs[0].feature"},
      {edited(good, "\"activation\":\"tanh\"", "\"activation\":\"gelu\""),
       "nets[0].dense[0].activation"},
      {edited(good, "\"bias\":[", "\"bias\":[0.5,"), "nets[0].dense[0].bias"},
      {edited(good, "\"weights\":[[", "\"weights\":[[0.5,"), "nets[0].dense[0].weights[0]"},
      {edited(good, "\"layers\":null", "\"layers\":[-1]"), "nets[0].layers"},
      {edited(good, "\"dense\":[",
              "\"dense\":[{\"activation\":\"relu\",\"weights\":[[1],[1]],\"bias\":[0,0]},"),
       "nets[0].dense[0].weights[0]"},
      {edited(good, "\"nets\":[{", "\"nets\":[{\"layers\":null,\"inputs\":[],\"dense\":[]},{"),
       "nets[0].inputs"},
  };
  for (const auto& [text, field] : cases) {
    try {
      (void)LearnedModel::parse(text, "m.json");
      ADD_FAILURE() << "accepted a file that breaks " << field;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("m.json: " + field), std::string::npos) << e.what();
    }
  }
  // Two outputs in the last layer, two default nets, a layer served twice.
  const std::string two_outputs = edited(good, "{\"activation\":\"identity\",\"weights\":[[",
                                         "{\"activation\":\"identity\",\"weights\":[[0,0,0],[");
  EXPECT_THROW(
      (void)LearnedModel::parse(edited(two_outputs, "\"bias\":[", "\"bias\":[0,"), "m.json"),
      InputError);
  const std::string net =
      good.substr(good.find("{\"layers\""), good.size() - 2 - good.find("{\"layers\""));
  EXPECT_THROW(
      (void)LearnedModel::parse(edited(good, "\"nets\":[", "\"nets\":[" + net + ","), "m.json"),
      InputError);
  const std::string layer3 = model_text(2, 3, "[3]");
  const std::string net3 =
      layer3.substr(layer3.find("{\"layers\""), layer3.size() - 2 - layer3.find("{\"layers\""));
  EXPECT_NO_THROW(
      (void)LearnedModel::parse(edited(good, "\"nets\":[", "\"nets\":[" + net3 + ","), "m.json"));
  EXPECT_THROW(
      (void)LearnedModel::parse(edited(layer3, "\"nets\":[", "\"nets\":[" + net3 + ","), "m.json"),
      InputError);
  EXPECT_THROW((void)LearnedModel::read("/nonexistent/model.json"), InputError);
}

TEST(LearnedModel, ScoresEqualAHandEvaluationAndNetsServeTheirLayers) {
  const std::string both = edited(
      model_text(3, 4, "[2,5]"), "\"nets\":[", "\"nets\":[" + [] {
        const std::string t = model_text(4, 5, "null", "relu");
        return t.substr(t.find("{\"layers\""), t.size() - 2 - t.find("{\"layers\"")) + ",";
      }());
  const LearnedModel model = LearnedModel::parse(both, "m.json");
  ASSERT_NE(model.net_for(5), nullptr);
  EXPECT_EQ(model.net_for(5)->layers, (std::vector<int>{2, 5}));
  EXPECT_TRUE(model.net_for(0)->layers.empty());
  Eigen::MatrixXd f(19, kOnlineFeatureCount);  // members in blocks of 8 and a tail
  for (Eigen::Index r = 0; r < f.rows(); ++r)
    for (int c = 0; c < kOnlineFeatureCount; ++c)
      f(r, c) = uniform(9, std::uint64_t(r), std::uint64_t(c)) * (c + 1);
  f(0, 0) = -1.0;  // below −offset: the log is taken at the offset
  std::vector<Token> tokens(std::size_t(f.rows()));
  for (std::size_t e = 0; e < tokens.size(); ++e) tokens[e] = Token(3 * e + 1);
  for (const std::string& path : testing_support::runnable_cpu_paths())
    for (int layer : {0, 5}) {
      SCOPED_TRACE("CPU path " + path);
      const testing_support::ScopedCpuPath scoped(path);
      Eigen::VectorXd scores;
      ScoreScratch scratch;
      model.scores(*model.net_for(layer), f, tokens, scores, scratch);
      for (int r = 0; r < f.rows(); ++r)
        EXPECT_NEAR(scores(r), hand_score(*model.net_for(layer), f, r), 1e-12);
      // A later step: the per-token inputs come from the first scoring, the others from this one.
      Eigen::MatrixXd later = f.bottomRows(11);
      later.col(int(OnlineFeature::kAccumulated)).array() += 0.25;
      later.col(int(OnlineFeature::kAge)).array() += 7.0;
      model.scores(*model.net_for(layer), later, std::span<const Token>(tokens).last(11), scores,
                   scratch);
      for (int r = 0; r < later.rows(); ++r) {
        EXPECT_NEAR(scores(r), hand_score(*model.net_for(layer), later, r), 1e-12);
      }
    }
  EXPECT_EQ(LearnedModel::parse(model_text(5, 2, "[1]"), "m.json").net_for(0), nullptr);
}

/// The spec of a model written to a temporary file.
PolicySpec learned_spec(const std::string& text, const std::string& name) {
  const std::string path = testing::TempDir() + name;
  std::ofstream(path) << text;
  return parse_policy_spec("learned:model=" + path, "test", "policy", 16);
}

RC_GTEST_PROP(LearnedPolicy, KeepsTheContractAndEvictsTheLowestHandScore, ()) {
  const int n = *rc::gen::inRange(3, 36);
  const naive::Instance in = naive::random_instance(
      *rc::gen::inRange<std::uint64_t>(0, 1u << 30), n, *rc::gen::inRange(2, 7),
      *rc::gen::inRange(1, 4), *rc::gen::element(0.5, 2.0), *rc::gen::inRange(0, 3));
  const PolicySpec spec =
      learned_spec(model_text(*rc::gen::inRange<std::uint64_t>(0, 1000), 3, "null",
                              *rc::gen::element<std::string>("tanh", "relu")),
                   "prop_model.json");
  SimulationOptions options;
  options.budget = *rc::gen::inRange(1, n + 1);
  options.prefill = *rc::gen::element(0, *rc::gen::inRange(0, n + 1));
  options.aggregation = *rc::gen::element(GroupAggregation::kSum, GroupAggregation::kMax);
  options.compute_metrics = false;
  auto policy = make_policy(spec);
  // The simulator checks the process contract at every step (throws std::logic_error otherwise).
  FeatureTraceOptions trace_options;
  trace_options.features = spec.learned_model->feature_options();
  const FeatureTrace t = record_features(in.group(), *policy, options, trace_options);
  const policies::ModelNet& net = *spec.learned_model->net_for(in.layer);
  for (std::size_t s = 0; s < t.steps.size(); ++s) {
    const int first = t.offsets[s], rows = t.offsets[s + 1] - first;
    const Eigen::MatrixXd f = t.features.middleRows(first, rows);
    int best = 0;
    for (int r = 1; r < rows; ++r) {
      const double a = hand_score(net, f, r), b = hand_score(net, f, best);
      if (a < b ||
          (a == b && t.tokens[std::size_t(first + r)] < t.tokens[std::size_t(first + best)]))
        best = r;
    }
    RC_ASSERT(t.evicted_row[s] >= 0);
    const double chosen = hand_score(net, f, t.evicted_row[s]), lowest = hand_score(net, f, best);
    if (t.evicted_row[s] != best) {
      RC_ASSERT(std::abs(chosen - lowest) <= 1e-12 * (1.0 + std::abs(lowest)));  // a near-tie only
    }
  }
  // The same decisions from a second instance (the model is shared, the state is not).
  const Trace again = simulate(in.group(), *make_policy(spec), options);
  for (int i = 0; i < n; ++i)
    RC_ASSERT(again.steps[std::size_t(i)].evicted == t.trace.steps[std::size_t(i)].evicted);
}

// A run forked at step s reads the fork's rows from there (its features re-pointed), not the rows
// the original goes on with.
RC_GTEST_PROP(LearnedPolicy, AForkDecidesAsOneRunOnTheRowsItGets, ()) {
  const int n = *rc::gen::inRange(2, 36), d = *rc::gen::inRange(2, 7), g = *rc::gen::inRange(1, 4);
  const int layer = *rc::gen::inRange(0, 3);
  const naive::Instance a = naive::random_instance(*rc::gen::inRange<std::uint64_t>(0, 1u << 30), n, d, g, 2.0, layer);
  naive::Instance other = naive::random_instance(*rc::gen::inRange<std::uint64_t>(0, 1u << 30), n, d, g, 2.0, layer);
  other.kv_head = a.kv_head;
  const int s = *rc::gen::inRange(1, n);
  const PolicySpec spec = learned_spec(model_text(*rc::gen::inRange<std::uint64_t>(0, 1000), 3), "fork_model.json");
  SimulationOptions options;
  options.budget = *rc::gen::inRange(1, n + 1);
  const naive::Instance b = resumable_check::spliced(a, other, s);
  const std::string mismatch =
      resumable_check::fork_mismatch([&] { return make_policy(spec); }, a.group(), b.group(), options, s);
  RC_ASSERT(mismatch.empty());
}

TEST(LearnedPolicy, SpecNeedsAReadableValidModel) {
  EXPECT_THROW((void)parse_policy_spec("learned", "test", "policy", 16), InputError);
  EXPECT_THROW((void)parse_policy_spec("learned:model=/nonexistent.json", "test", "policy", 16),
               InputError);
  const PolicySpec spec = learned_spec(model_text(6), "spec_model.json");
  EXPECT_EQ(spec.label(), "learned:model=" + testing::TempDir() + "spec_model.json");
  const PolicySpec back =
      parse_policy_spec(spec.label(), "test", "policy", 16);  // the label parses back
  EXPECT_EQ(back.label(), spec.label());
  EXPECT_EQ(effective_parameters(back), effective_parameters(spec));
  EXPECT_EQ(make_policy(spec)->name(), "learned");
  // A model without a net for the group's layer is refused at reset, naming its nets.
  const PolicySpec other = learned_spec(model_text(7, 2, "[4]"), "layer4_model.json");
  const naive::Instance in = naive::random_instance(1, 10, 4, 2, 1.0, 0);
  SimulationOptions options;
  options.budget = 4;
  try {
    (void)simulate(in.group(), *make_policy(other), options);
    ADD_FAILURE() << "ran a layer no net serves";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nets"), std::string::npos) << e.what();
  }
}

TEST(FeatureTrace, RecordsTheReplayedScheduleAndSamplesSteps) {
  const naive::Instance in = naive::random_instance(11, 40, 4, 2, 2.0, 1);
  SimulationOptions options;
  options.budget = 8;
  options.compute_metrics = false;
  auto h2o = make_policy("h2o");
  const Trace run = simulate(in.group(), *h2o, options);
  RecordedPolicy replay("recorded:h2o", run.last_step(), "test");
  FeatureTraceOptions every3;
  every3.every = 3;
  const FeatureTrace t = record_features(in.group(), replay, options, every3);
  EXPECT_EQ(t.trace.last_step(), run.last_step());
  ASSERT_FALSE(t.steps.empty());
  for (std::size_t s = 0; s < t.steps.size(); ++s) {
    EXPECT_EQ(t.steps[s] % 3, 0);
    EXPECT_GE(t.steps[s], options.budget);  // full steps only
    EXPECT_EQ(t.offsets[s + 1] - t.offsets[s], options.budget + 1);
    EXPECT_EQ(t.tokens[std::size_t(t.offsets[s] + t.evicted_row[s])],
              run.steps[std::size_t(t.steps[s])].evicted);
  }
  // Recording h2o itself sees the same features as recording its replay.
  const FeatureTrace direct = record_features(in.group(), *h2o, options, every3);
  EXPECT_EQ(direct.features, t.features);
  every3.every = 0;
  EXPECT_THROW((void)record_features(in.group(), replay, options, every3), InputError);
}

}  // namespace
}  // namespace subevict::greedy
