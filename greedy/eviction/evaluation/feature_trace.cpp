#include "greedy/eviction/evaluation/feature_trace.hpp"

#include <string>

#include "core/input_error.hpp"

namespace subevict::greedy {
namespace {

/// Runs the policy it wraps and records the features before each sampled full step's choice.
class FeatureRecorder final : public EvictionPolicy {
 public:
  FeatureRecorder(EvictionPolicy& inner, const FeatureTraceOptions& options)
      : inner_(inner), every_(options.every), features_(options.features) {}

  [[nodiscard]] std::string name() const override { return inner_.name(); }
  [[nodiscard]] bool is_oracle() const override { return inner_.is_oracle(); }
  [[nodiscard]] bool compresses() const override { return inner_.compresses(); }
  void reset(const PolicyContext& context) override {
    inner_.reset(context);
    features_.reset(context);
  }
  void rows_added(int from) override { inner_.rows_added(from); }
  [[nodiscard]] std::vector<Token> prefill() override {
    features_.observe_prompt();
    return inner_.prefill();
  }
  [[nodiscard]] Token step(const StepView& view) override {
    features_.observe(view);
    const Token evicted = inner_.step(view);
    if (view.full && view.step % every_ == 0) record(view, evicted);
    return evicted;
  }

  /// The rows so far, stacked into `out` (steps, offsets, tokens, evicted rows filled as recorded).
  void finish(FeatureTrace& out) {
    out.features = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, policies::kOnlineFeatureCount, Eigen::RowMajor>>(
        values_.data(), Eigen::Index(values_.size() / policies::kOnlineFeatureCount), policies::kOnlineFeatureCount);
    out.steps = std::move(steps_);
    out.offsets = std::move(offsets_);
    out.tokens = std::move(tokens_);
    out.evicted_row = std::move(evicted_row_);
  }

 private:
  void record(const StepView& view, Token evicted) {
    const Eigen::MatrixXd& f = features_.features();
    int row = -1;
    for (std::size_t e = 0; e < view.tokens.size(); ++e) {
      if (view.tokens[e] == evicted) row = int(e);
      tokens_.push_back(view.tokens[e]);
      for (int c = 0; c < policies::kOnlineFeatureCount; ++c) values_.push_back(f(Eigen::Index(e), c));
    }
    steps_.push_back(view.step);
    offsets_.push_back(int(tokens_.size()));
    evicted_row_.push_back(row);
  }

  EvictionPolicy& inner_;
  int every_;
  policies::OnlineFeatures features_;
  std::vector<double> values_;
  std::vector<int> steps_, offsets_{0}, evicted_row_;
  std::vector<Token> tokens_;
};

}  // namespace

FeatureTrace record_features(const HeadGroup& input, EvictionPolicy& policy, const SimulationOptions& options,
                             const FeatureTraceOptions& trace_options) {
  if (trace_options.every < 1) {
    throw InputError("features", "every", "an integer >= 1", std::to_string(trace_options.every));
  }
  FeatureRecorder recorder(policy, trace_options);
  FeatureTrace out;
  out.trace = simulate(input, recorder, options);
  recorder.finish(out);
  return out;
}

}  // namespace subevict::greedy
