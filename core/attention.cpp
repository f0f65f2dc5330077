#include "core/attention.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace subevict {

Eigen::VectorXd causal_logits(const ConstHeadMap& q, const ConstHeadMap& k, int i, double scale) {
  if (i < 0 || i >= q.rows() || i >= k.rows()) throw std::out_of_range("causal_logits: row out of range");
  const Eigen::VectorXd qi = q.row(i).transpose().cast<double>();
  return scale * (k.topRows(i + 1).cast<double>() * qi);
}

double log_sum_exp(const Eigen::VectorXd& x) {
  if (x.size() == 0) return -std::numeric_limits<double>::infinity();
  const double m = x.maxCoeff();
  if (!std::isfinite(m)) return m;
  return m + std::log((x.array() - m).exp().sum());
}

Eigen::VectorXd softmax(const Eigen::VectorXd& logits) {
  // Normalising exp(x - max) by its sum (rather than exp(x - log_sum_exp(x))) keeps the row sum
  // within n eps of 1 even for logits of magnitude 1e4, where log_sum_exp itself carries an
  // absolute rounding error of ulp(1e4) ~ 2e-12.
  const Eigen::ArrayXd e = underflow_exp(logits.array() - logits.maxCoeff());
  return (e / e.sum()).matrix();
}

Eigen::VectorXd attention_row(const ConstHeadMap& q, const ConstHeadMap& k, int i, double scale, int window) {
  if (window < 0) throw std::invalid_argument("attention_row: window must be >= 0");
  const Eigen::VectorXd logits = causal_logits(q, k, i, scale);
  const int first = first_visible_key(i, window);
  Eigen::VectorXd row = Eigen::VectorXd::Zero(logits.size());
  row.tail(i + 1 - first) = softmax(logits.tail(i + 1 - first));
  return row;
}

Eigen::VectorXd tracked_attention(const Eigen::VectorXd& logits, const std::vector<bool>& in_set) {
  if (in_set.size() != std::size_t(logits.size())) {
    throw std::invalid_argument("tracked_attention: in_set has " + std::to_string(in_set.size()) +
                                " entries, expected " + std::to_string(logits.size()));
  }
  double m = -std::numeric_limits<double>::infinity();
  for (Eigen::Index j = 0; j < logits.size(); ++j) {
    if (in_set[j]) m = std::max(m, logits[j]);
  }
  if (m == -std::numeric_limits<double>::infinity()) {
    throw std::invalid_argument("tracked_attention: the tracked set is empty");
  }
  Eigen::VectorXd out = Eigen::VectorXd::Zero(logits.size());
  double total = 0;
  for (Eigen::Index j = 0; j < logits.size(); ++j) {
    if (in_set[j]) total += (out[j] = logits[j] - m < kLogMinNormal ? 0.0 : std::exp(logits[j] - m));
  }
  return out / total;
}

Eigen::VectorXd attention_output(const Eigen::VectorXd& weights, const ConstHeadMap& v) {
  if (weights.size() > v.rows()) throw std::invalid_argument("attention_output: more weights than values");
  return v.topRows(weights.size()).cast<double>().transpose() * weights;
}

void for_each_attention_block(const ConstHeadMap& q, const ConstHeadMap& k, double scale,
                              int block_rows,
                              const std::function<void(int, const Eigen::MatrixXd&)>& visit,
                              int window,
                              const std::function<void(int, const Eigen::MatrixXd&)>& visit_logits) {
  const int n = int(q.rows());
  if (window < 0) throw std::invalid_argument("for_each_attention_block: window must be >= 0");
  if (k.rows() != n || q.cols() != k.cols()) {
    throw std::invalid_argument("for_each_attention_block: q and k disagree in shape");
  }
  if (block_rows <= 0) throw std::invalid_argument("for_each_attention_block: block_rows must be > 0");
  const Eigen::MatrixXd kd = k.cast<double>();
  Eigen::MatrixXd probs;
  for (int first = 0; first < n; first += block_rows) {
    const int rows = std::min(block_rows, n - first);
    const int cols = first + rows;  // keys a block can see
    probs.noalias() = scale * (q.middleRows(first, rows).cast<double>() * kd.topRows(cols).transpose());
    if (visit_logits) visit_logits(first, probs);
    for (int r = 0; r < rows; ++r) {
      const int visible = first + r + 1, from = first_visible_key(first + r, window);
      auto row = probs.row(r).segment(from, visible - from);
      const double m = row.maxCoeff();
      row = underflow_exp(row.array() - m).matrix();
      row /= row.sum();
      probs.row(r).head(from).setZero();
      probs.row(r).tail(cols - visible).setZero();
    }
    if (cols < n) {
      probs.conservativeResize(rows, n);
      probs.rightCols(n - cols).setZero();
    }
    visit(first, probs);
  }
}

Eigen::MatrixXd causal_attention(const ConstHeadMap& q, const ConstHeadMap& k, double scale, int window) {
  const int n = int(q.rows());
  Eigen::MatrixXd a(n, n);
  for_each_attention_block(
      q, k, scale, 256, [&](int first, const Eigen::MatrixXd& probs) { a.middleRows(first, probs.rows()) = probs; },
      window);
  return a;
}

}  // namespace subevict
