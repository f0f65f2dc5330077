#include "greedy/eviction/process/schedule_overlap.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace subevict::greedy {
namespace {

void check(const std::vector<int>& last_step, Eigen::Index n, const char* which) {
  if (Eigen::Index(last_step.size()) != n) {
    throw std::invalid_argument(std::string("schedule_overlap: the ") + which + " schedule has " +
                                std::to_string(last_step.size()) + " tokens, the gains " + std::to_string(n));
  }
  for (Eigen::Index j = 0; j < n; ++j) {
    const int t = last_step[std::size_t(j)];
    if (t < j - 1 || t > n - 1) {
      throw std::invalid_argument(std::string("schedule_overlap: the ") + which + " schedule's t_" +
                                  std::to_string(j) + " = " + std::to_string(t) + " is outside [" +
                                  std::to_string(j - 1) + ", " + std::to_string(n - 1) + "]");
    }
  }
}

double mean(const Eigen::VectorXd& v) { return v.size() == 0 ? 0.0 : v.mean(); }

}  // namespace

double ScheduleOverlap::mean_jaccard() const { return mean(jaccard); }
double ScheduleOverlap::mean_only_first_mass() const { return mean(only_first_mass); }
double ScheduleOverlap::mean_only_second_mass() const { return mean(only_second_mass); }

ScheduleOverlap schedule_overlap(const Eigen::MatrixXd& gains, const std::vector<int>& first,
                                 const std::vector<int>& second) {
  const Eigen::Index n = gains.rows();
  if (gains.cols() != n) throw std::invalid_argument("schedule_overlap: the gains must be square");
  check(first, n, "first");
  check(second, n, "second");
  ScheduleOverlap out{Eigen::VectorXd::Zero(n), Eigen::VectorXd::Zero(n), Eigen::VectorXd::Zero(n)};
  Eigen::VectorXi both = Eigen::VectorXi::Ones(n), either = Eigen::VectorXi::Ones(n);  // i itself
  // j ∈ G_i exactly for j ≤ i ≤ t_j + 1; walk each column (W is column-major).
  for (Eigen::Index j = 0; j < n; ++j) {
    const Eigen::Index a = std::min<Eigen::Index>(first[std::size_t(j)] + 1, n - 1);
    const Eigen::Index b = std::min<Eigen::Index>(second[std::size_t(j)] + 1, n - 1);
    for (Eigen::Index i = j + 1; i <= std::max(a, b); ++i) {
      const bool in_a = i <= a, in_b = i <= b;
      ++either[i];
      if (in_a && in_b) {
        ++both[i];
      } else if (in_a) {
        out.only_first_mass[i] += gains(i, j);
      } else {
        out.only_second_mass[i] += gains(i, j);
      }
    }
  }
  for (Eigen::Index i = 0; i < n; ++i) out.jaccard[i] = double(both[i]) / double(either[i]);
  return out;
}

}  // namespace subevict::greedy
