#include "greedy/functions/attention_fidelity.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "core/attention.hpp"

namespace subevict::greedy {

namespace {

/// Rebuild threshold: a remove leaving D_i below this fraction of its peak triggers a rebuild.
constexpr double kCancellationLimit = 1e-3;

class FidelityState final : public SetState {
 public:
  explicit FidelityState(const AttentionFidelity& f)
      : SetState(f.ground_size()),
        f_(&f),
        numerators_(Eigen::MatrixXd::Zero(f.exact_outputs().rows(), f.exact_outputs().cols())),
        denominators_(Eigen::VectorXd::Zero(f.exact_outputs().rows())),
        peaks_(Eigen::VectorXd::Zero(f.exact_outputs().rows())),
        value_(-f.exact_outputs().squaredNorm()) {}

  double value() const override { return value_; }
  std::unique_ptr<SetState> clone() const override {
    return std::make_unique<FidelityState>(*this);
  }

 protected:
  double on_gain(Element e) const override { return value_with(e, 1.0) - value_; }
  void on_add(Element e) override {
    accumulate(e, 1.0);
    peaks_ = peaks_.cwiseMax(denominators_);
    value_ = value_with_current();
  }
  void on_remove(Element e) override {
    accumulate(e, -1.0);
    if (size() == 0 || (denominators_.array() < kCancellationLimit * peaks_.array()).any()) {
      rebuild();
    }
    value_ = value_with_current();
  }

 private:
  void accumulate(Element e, double sign) {
    const auto w = f_->shifted_weights().col(Eigen::Index(e));
    numerators_.noalias() += sign * w * f_->values().row(Eigen::Index(e));
    denominators_ += sign * w;
  }
  void rebuild() {
    numerators_.setZero();
    denominators_.setZero();
    for (Element j : members()) {
      accumulate(j, 1.0);
    }
    peaks_ = denominators_;
  }
  /// −Σ_i ‖o_i − (N_i + sign w_ie v_e) / (D_i + sign w_ie)‖², with õ_i = 0 where the denominator
  /// is 0 (empty set or underflow).
  double value_with(Element e, double sign) const {
    const auto& o = f_->exact_outputs();
    const auto w = f_->shifted_weights().col(Eigen::Index(e));
    const auto v = f_->values().row(Eigen::Index(e));
    double total = 0;
    for (Eigen::Index i = 0; i < o.rows(); ++i) {
      const double d = denominators_[i] + sign * w[i];
      if (d > 0) {
        total += (o.row(i) - (numerators_.row(i) + sign * w[i] * v) / d).squaredNorm();
      } else {
        total += o.row(i).squaredNorm();
      }
    }
    return -total;
  }
  double value_with_current() const {
    const auto& o = f_->exact_outputs();
    double total = 0;
    for (Eigen::Index i = 0; i < o.rows(); ++i) {
      const double d = denominators_[i];
      total += d > 0 ? (o.row(i) - numerators_.row(i) / d).squaredNorm() : o.row(i).squaredNorm();
    }
    return -total;
  }

  const AttentionFidelity* f_;
  Eigen::MatrixXd numerators_;
  Eigen::VectorXd denominators_;
  Eigen::VectorXd peaks_;
  double value_;
};

}  // namespace

AttentionFidelity::AttentionFidelity(Eigen::MatrixXd logits, Eigen::MatrixXd values)
    : logits_(std::move(logits)), values_(std::move(values)) {
  if (logits_.rows() == 0 || logits_.cols() == 0 || values_.cols() == 0) {
    throw std::invalid_argument("AttentionFidelity: logits and values must be non-empty");
  }
  if (values_.rows() != logits_.cols()) {
    throw std::invalid_argument("AttentionFidelity: logits have " + std::to_string(logits_.cols()) +
                                " keys (columns) but values have " +
                                std::to_string(values_.rows()) + " rows; expected equal");
  }
  if (!logits_.allFinite() || !values_.allFinite()) {
    throw std::invalid_argument("AttentionFidelity: logits and values must be finite");
  }
  shifted_.resize(logits_.rows(), logits_.cols());
  outputs_.resize(logits_.rows(), values_.cols());
  for (Eigen::Index i = 0; i < logits_.rows(); ++i) {
    const Eigen::VectorXd row = logits_.row(i).transpose();
    shifted_.row(i) = underflow_exp(row.array() - row.maxCoeff()).matrix().transpose();
    outputs_.row(i) = (values_.transpose() * softmax(row)).transpose();
  }
}

double AttentionFidelity::evaluate(std::span<const Element> set) const {
  if (set.empty()) {
    return -outputs_.squaredNorm();
  }
  std::vector<bool> in_set(ground_size(), false);
  for (Element j : set) {
    in_set.at(j) = true;
  }
  double total = 0;
  for (Eigen::Index i = 0; i < logits_.rows(); ++i) {
    const Eigen::VectorXd weights = tracked_attention(logits_.row(i).transpose(), in_set);
    total += (outputs_.row(i).transpose() - values_.transpose() * weights).squaredNorm();
  }
  return -total;
}

std::unique_ptr<SetState> AttentionFidelity::empty_state() const {
  return std::make_unique<FidelityState>(*this);
}

}  // namespace subevict::greedy
