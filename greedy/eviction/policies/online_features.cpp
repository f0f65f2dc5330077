#include "greedy/eviction/policies/online_features.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/attention_avx2.hpp"
#include "core/cpu_path.hpp"
#include "core/input_error.hpp"

#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
#include <immintrin.h>
#endif
#include "greedy/eviction/policies/policy_support.hpp"

namespace subevict::greedy::policies {

const std::array<std::string_view, kOnlineFeatureCount>& online_feature_names() {
  static const std::array<std::string_view, kOnlineFeatureCount> names = {"accumulated_attention",
                                                                          "current_attention",
                                                                          "window_attention",
                                                                          "age",
                                                                          "position",
                                                                          "sink",
                                                                          "key_norm",
                                                                          "value_norm",
                                                                          "key_mean_cosine",
                                                                          "attention_trend",
                                                                          "layer",
                                                                          "kv_head"};
  return names;
}

namespace {

#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
/// out[e] = <rows[index[e] · d ..], vector> for e < count, in AVX2 + FMA (four partial sums, the
/// tail scalar). Raw pointers, no Eigen: nothing here can be merged with baseline code.
/// Precondition: a CPU with AVX2 and FMA.
__attribute__((target("avx2,fma"))) void gathered_dots_avx2(const double* rows, long d,
                                                            const Token* index, std::size_t count,
                                                            const double* vector, double* out) {
  for (std::size_t e = 0; e < count; ++e) {
    const double* row = rows + long(index[e]) * d;
    __m256d sum = _mm256_setzero_pd();
    long c = 0;
    for (; c + 4 <= d; c += 4)
      sum = _mm256_fmadd_pd(_mm256_loadu_pd(row + c), _mm256_loadu_pd(vector + c), sum);
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, sum);
    double total = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    for (; c < d; ++c) total += row[c] * vector[c];
    out[e] = total;
  }
}
#endif

}  // namespace

OnlineFeatures::OnlineFeatures(OnlineFeatureOptions options) : options_(options) {
  if (options_.window < 1)
    throw InputError("features", "window", "w >= 1", std::to_string(options_.window));
  if (options_.sinks < 0)
    throw InputError("features", "sinks", "s >= 0", std::to_string(options_.sinks));
  if (!(options_.trend_rate > 0.0 && options_.trend_rate <= 1.0)) {
    throw InputError("features", "trend_rate", "a rate in (0, 1]",
                     std::to_string(options_.trend_rate));
  }
}

void OnlineFeatures::reset(const PolicyContext& context) {
  context_ = context;
  next_step_ = 0;
  members_.clear();
  const std::size_t n = std::size_t(context_.input->tokens());
  seen_at_.assign(n, -1);
  for (std::vector<double>* state : per_token()) {
    state->assign(n, 0.0);
  }
  unit_key_sum_ = Eigen::VectorXd::Zero(context_.input->head_dim());
  keys_.resize(Eigen::Index(n), context_.input->head_dim());
  rows_.clear();
  features_.resize(0, kOnlineFeatureCount);
}

void OnlineFeatures::observe_prompt() {
  const int prompt = context_.prefill;
  if (next_step_ != 0 || prompt < 1)
    throw std::logic_error("online features: the prompt needs P >= 1 and a fresh run");
  const HeadGroup& input = *context_.input;
  constexpr std::size_t kBlockEntries = std::size_t(1)
                                        << 20;  // doubles per block of rows, all heads
  const int block = int(std::clamp<std::size_t>(
      kBlockEntries / (std::size_t(input.group_size()) * prompt), 1, std::size_t(prompt)));
  std::vector<Token> tokens;
  std::vector<double> attention, weights(std::size_t(input.group_size()));
  for (int first = 0; first < prompt; first += block) {
    const int rows = std::min(block, prompt - first);
    const std::vector<Eigen::MatrixXd> probs = attention_rows(input, first, rows);
    for (int r = 0; r < rows; ++r) {
      const int step = first + r;
      tokens.push_back(step);
      attention.resize(tokens.size());
      for (Token j = 0; j <= step; ++j) {
        for (std::size_t h = 0; h < probs.size(); ++h) weights[h] = probs[h](r, j);
        attention[std::size_t(j)] = aggregate(context_.aggregation, weights);
      }
      advance(step, tokens, attention);
    }
  }
  fill();
}

void OnlineFeatures::observe(const StepView& view) {
  if (view.step != next_step_ || view.tokens.empty() || view.tokens.back() != view.step ||
      view.attention.size() != view.tokens.size()) {
    throw std::logic_error("online features: step " + std::to_string(view.step) +
                           " out of order (expected " + std::to_string(next_step_) +
                           ") or a malformed view");
  }
  advance(view.step, view.tokens, view.attention);
  fill();
}

std::array<std::vector<double>*, 6> OnlineFeatures::per_token() {
  return {&acc_, &current_, &window_, &average_, &key_norm_, &value_norm_};
}

void OnlineFeatures::arrive(Token t) {
  const HeadGroup& input = *context_.input;
  if (t >= input.tokens())
    throw std::logic_error("online features: token " + std::to_string(t) + " has no row");
  if (std::size_t(t) >= seen_at_.size()) {  // a resumable run's group grew
    const std::size_t n = std::size_t(input.tokens());
    seen_at_.resize(n, -1);
    for (std::vector<double>* state : per_token()) {
      state->resize(n, 0.0);
    }
  }
  const Eigen::VectorXd key = input.k.row(t).cast<double>().transpose();
  if (keys_.rows() < input.tokens()) keys_.conservativeResize(input.tokens(), keys_.cols());
  keys_.row(t) = key.transpose();
  key_norm_[std::size_t(t)] = key.norm();
  value_norm_[std::size_t(t)] = input.v.row(t).cast<double>().norm();
  if (key_norm_[std::size_t(t)] > 0.0) unit_key_sum_ += key / key_norm_[std::size_t(t)];
}

void OnlineFeatures::advance(int step, std::span<const Token> tokens,
                             std::span<const double> attention) {
  // Membership: the new token arrives, every other one was a member at the last step.
  for (Token t : tokens) {
    if (t == step) {
      arrive(t);
    } else if (t < 0 || t > step || seen_at_[std::size_t(t)] != step - 1) {
      throw std::logic_error("online features: token " + std::to_string(t) +
                             " was not a member at step " + std::to_string(step - 1));
    }
    seen_at_[std::size_t(t)] = step;
  }
  // Tokens gone since the last step: drop their state.
  for (Token t : members_) {
    if (seen_at_[std::size_t(t)] == step) continue;
    for (std::vector<double>* state : per_token()) {
      (*state)[std::size_t(t)] = 0.0;
    }
  }
  const double rate = options_.trend_rate;
  for (std::size_t e = 0; e < tokens.size(); ++e) {
    const std::size_t t = std::size_t(tokens[e]);
    const double a = attention[e];
    acc_[t] += a;
    current_[t] = a;
    window_[t] += a;
    average_[t] = tokens[e] == step ? a : (1.0 - rate) * average_[t] + rate * a;
  }
  // The window: retire query step − w, remember this one; every w steps re-sum it from its rows.
  Row row;
  if (int(rows_.size()) == options_.window) {
    row = std::move(rows_.front());
    rows_.pop_front();
    for (std::size_t e = 0; e < row.tokens.size(); ++e) {
      const std::size_t t = std::size_t(row.tokens[e]);
      if (seen_at_[t] == step) window_[t] -= row.attention[e];
    }
  }
  row.step = step;
  row.tokens.assign(tokens.begin(), tokens.end());
  row.attention.assign(attention.begin(), attention.end());
  rows_.push_back(std::move(row));
  if (step % options_.window == 0) {
    for (Token t : tokens) window_[std::size_t(t)] = 0.0;
    for (const Row& past : rows_) {  // oldest first
      for (std::size_t e = 0; e < past.tokens.size(); ++e) {
        const std::size_t t = std::size_t(past.tokens[e]);
        if (seen_at_[t] == step) window_[t] += past.attention[e];
      }
    }
  }
  members_.assign(tokens.begin(), tokens.end());
  next_step_ = step + 1;
}

void OnlineFeatures::fill() {
  const int step = next_step_ - 1;
  const HeadGroup& input = *context_.input;
  const double anchor_norm = unit_key_sum_.norm();
  features_.resize(Eigen::Index(members_.size()), kOnlineFeatureCount);
  dots_.resize(members_.size());
#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
  if (active_cpu_path() == CpuPath::kAvx2Fma) {
    gathered_dots_avx2(keys_.data(), long(keys_.cols()), members_.data(), members_.size(),
                       unit_key_sum_.data(), dots_.data());
  } else
#endif
  {
    for (std::size_t e = 0; e < members_.size(); ++e)
      dots_[e] = keys_.row(members_[e]).dot(unit_key_sum_.transpose());
  }
  for (std::size_t e = 0; e < members_.size(); ++e) {
    const Token j = members_[e];
    const std::size_t t = std::size_t(j);
    const double denominator = key_norm_[t] * anchor_norm;
    const double cosine = denominator > 0.0 ? dots_[e] / denominator : 0.0;
    const double values[kOnlineFeatureCount] = {acc_[t],
                                                current_[t],
                                                window_[t],
                                                double(step - j),
                                                double(j),
                                                j < options_.sinks ? 1.0 : 0.0,
                                                key_norm_[t],
                                                value_norm_[t],
                                                cosine,
                                                average_[t] - acc_[t] / double(step - j + 1),
                                                double(input.layer),
                                                double(input.kv_head)};
    for (int f = 0; f < kOnlineFeatureCount; ++f) features_(Eigen::Index(e), f) = values[f];
  }
}

}  // namespace subevict::greedy::policies
