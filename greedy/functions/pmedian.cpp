#include "greedy/functions/pmedian.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "core/input_error.hpp"

namespace subevict::greedy {
namespace {

/// A text file read line by line with the line number kept for error messages.
class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path), in_(path) {
    if (!in_) throw InputError(path, "file", "a readable p-median text file");
  }
  /// The next non-blank line split into whitespace-separated fields; false at end of file.
  bool next(std::vector<std::string>& fields) {
    std::string line;
    while (std::getline(in_, line)) {
      ++line_number_;
      std::istringstream tokens(line);
      fields.clear();
      for (std::string field; tokens >> field;) fields.push_back(field);
      if (!fields.empty()) return true;
    }
    return false;
  }
  [[nodiscard]] std::string where() const { return "line " + std::to_string(line_number_); }
  [[nodiscard]] const std::string& path() const { return path_; }

  /// Field `index` as a nonnegative integer, or InputError naming `what`.
  std::size_t count(const std::vector<std::string>& fields, std::size_t index, const char* what) {
    const std::string& text = fields[index];
    std::size_t used = 0;
    unsigned long long value = 0;
    try {
      value = std::stoull(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || text.front() == '-') {
      throw InputError(path_, where(), std::string(what) + " as a nonnegative integer", text);
    }
    return std::size_t(value);
  }
  /// Field `index` as a finite nonnegative number.
  double cost(const std::vector<std::string>& fields, std::size_t index) {
    const std::string& text = fields[index];
    std::size_t used = 0;
    double value = -1.0;
    try {
      value = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || !std::isfinite(value) || value < 0.0) {
      throw InputError(path_, where(), "an edge cost as a finite nonnegative number", text);
    }
    return value;
  }
  void expect_fields(const std::vector<std::string>& fields, std::size_t n, const char* layout) {
    if (fields.size() != n) {
      throw InputError(path_, where(), std::string("the ") + std::to_string(n) + " fields " + layout,
                       std::to_string(fields.size()) + " fields");
    }
  }

 private:
  std::string path_;
  std::ifstream in_;
  std::size_t line_number_ = 0;
};

}  // namespace

void floyd_warshall(Eigen::MatrixXd& d) {
  const Eigen::Index n = d.rows();
  // Column-major: for a fixed pivot v, column j is updated from column v, both contiguous.
  for (Eigen::Index v = 0; v < n; ++v) {
    for (Eigen::Index j = 0; j < n; ++j) {
      const double dvj = d(v, j);
      if (dvj == std::numeric_limits<double>::infinity()) continue;
      d.col(j).array() = d.col(j).array().min(d.col(v).array() + dvj);
    }
  }
}

PMedianInstance read_pmedian(const std::string& path) {
  LineReader reader(path);
  std::vector<std::string> fields;
  if (!reader.next(fields)) throw InputError(path, "line 1", "the header `n m p`", "an empty file");
  reader.expect_fields(fields, 3, "`n m p`");
  PMedianInstance instance;
  instance.n = reader.count(fields, 0, "the vertex count n");
  const std::size_t m = reader.count(fields, 1, "the edge count m");
  instance.p = reader.count(fields, 2, "the median count p");
  if (instance.n == 0 || instance.p == 0 || instance.p > instance.n) {
    throw InputError(path, reader.where(), "1 <= p <= n",
                     "n = " + std::to_string(instance.n) + ", p = " + std::to_string(instance.p));
  }
  const auto n = Eigen::Index(instance.n);
  Eigen::MatrixXd d = Eigen::MatrixXd::Constant(n, n, std::numeric_limits<double>::infinity());
  d.diagonal().setZero();
  for (std::size_t e = 0; e < m; ++e) {
    if (!reader.next(fields)) {
      throw InputError(path, "end of file", std::to_string(m) + " edges",
                       std::to_string(e) + " edges");
    }
    reader.expect_fields(fields, 3, "`i j c` of an edge");
    const std::size_t i = reader.count(fields, 0, "a vertex");
    const std::size_t j = reader.count(fields, 1, "a vertex");
    if (i < 1 || i > instance.n || j < 1 || j > instance.n) {
      throw InputError(path, reader.where(), "vertices in 1.." + std::to_string(instance.n),
                       fields[0] + " " + fields[1]);
    }
    const double c = reader.cost(fields, 2);
    if (i != j) {  // a loop never shortens a path; the last occurrence of an edge counts
      d(Eigen::Index(i - 1), Eigen::Index(j - 1)) = c;
      d(Eigen::Index(j - 1), Eigen::Index(i - 1)) = c;
    }
  }
  if (reader.next(fields)) {
    throw InputError(path, reader.where(), "end of file after " + std::to_string(m) + " edges",
                     fields[0]);
  }
  floyd_warshall(d);
  if (!d.allFinite()) {
    throw InputError(path, "graph", "a connected graph", "unreachable vertex pairs");
  }
  instance.distance = std::move(d);
  return instance;
}

std::map<std::string, double> read_pmedian_optima(const std::string& path) {
  LineReader reader(path);
  std::vector<std::string> fields;
  std::map<std::string, double> optima;
  if (!reader.next(fields)) throw InputError(path, "line 1", "a header line", "an empty file");
  while (reader.next(fields)) {
    reader.expect_fields(fields, 2, "`NAME VALUE`");
    const double value = reader.cost(fields, 1);
    if (!optima.emplace(fields[0], value).second) {
      throw InputError(path, reader.where(), "each instance once", "a repeated " + fields[0]);
    }
  }
  return optima;
}

double pmedian_value(const PMedianInstance& instance, std::span<const Element> set) {
  Eigen::VectorXd best = Eigen::VectorXd::Constant(Eigen::Index(instance.n),
                                                   std::numeric_limits<double>::infinity());
  for (Element j : set) best = best.cwiseMin(instance.distance.col(Eigen::Index(j)));
  return best.sum();
}

double max_distance(const PMedianInstance& instance) { return instance.distance.maxCoeff(); }

FacilityLocation to_facility_location(const PMedianInstance& instance) {
  const double D = max_distance(instance);
  return FacilityLocation((Eigen::MatrixXd::Constant(instance.distance.rows(),
                                                     instance.distance.cols(), D) -
                           instance.distance)
                              .eval());
}

}  // namespace subevict::greedy
