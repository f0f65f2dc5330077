#include "greedy/eviction/process/query_rows.hpp"

#include <algorithm>
#include <stdexcept>

#include "core/attention.hpp"
#include "core/input_error.hpp"

namespace subevict::greedy {

namespace {

void check_mask(const std::vector<char>& mask, Eigen::Index n) {
  if (Eigen::Index(mask.size()) != n) {
    throw std::invalid_argument("restrict_to_rows: the mask has " + std::to_string(mask.size()) +
                                " entries for " + std::to_string(n) + " rows");
  }
}

}  // namespace

std::vector<char> query_row_mask(const std::vector<int>& rows, int n, const std::string& source) {
  if (rows.empty()) throw InputError(source, "optimum_rows", "at least one query row", "none");
  std::vector<char> mask(std::size_t(std::max(n, 0)), 0);
  for (int i : rows) {
    if (i < 0 || i >= n) {
      throw InputError(source, "optimum_rows", "row indices in [0, " + std::to_string(n) + ")",
                       std::to_string(i));
    }
    mask[std::size_t(i)] = 1;
  }
  return mask;
}

template <class Scalar>
void restrict_to_rows(TriangularGains<Scalar>& gains, const std::vector<char>& mask) {
  const int n = gains.size();
  check_mask(mask, n);
  for (int j = 0; j < n; ++j) {
    Scalar* column = gains.column(j);
    for (int i = j; i < n; ++i) {
      if (!mask[std::size_t(i)]) column[i - j] = Scalar(0);
    }
  }
}

template void restrict_to_rows<float>(TriangularGains<float>&, const std::vector<char>&);
template void restrict_to_rows<double>(TriangularGains<double>&, const std::vector<char>&);

template <class Scalar>
TriangularGains<Scalar> row_gain_matrix(const HeadGroup& group, const std::vector<char>& mask) {
  group.validate();
  const int n = group.tokens();
  check_mask(mask, n);
  TriangularGains<Scalar> out(n);
  for (const ConstHeadMap& q : group.q) {
    for (int i = 0; i < n; ++i) {
      if (!mask[std::size_t(i)]) continue;
      const Eigen::VectorXd row = attention_row(q, group.k, i, group.scale, group.window);
      for (int j = 0; j <= i; ++j) out.column(j)[i - j] += static_cast<Scalar>(row[j]);
    }
  }
  return out;
}

template TriangularGains<float> row_gain_matrix<float>(const HeadGroup&, const std::vector<char>&);
template TriangularGains<double> row_gain_matrix<double>(const HeadGroup&,
                                                         const std::vector<char>&);

void restrict_to_rows(Eigen::MatrixXd& gains, const std::vector<char>& mask) {
  check_mask(mask, gains.rows());
  for (Eigen::Index i = 0; i < gains.rows(); ++i) {
    if (!mask[std::size_t(i)]) gains.row(i).setZero();
  }
}

}  // namespace subevict::greedy
