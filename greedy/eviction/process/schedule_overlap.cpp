#include "greedy/eviction/process/schedule_overlap.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/attention.hpp"

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

namespace {

/// The overlap with the masses left at zero: the Jaccard index of every step, from the schedules
/// alone. j ∈ G_i exactly for j ≤ i ≤ t_j + 1.
ScheduleOverlap counted_overlap(const std::vector<int>& first, const std::vector<int>& second, Eigen::Index n) {
  check(first, n, "first");
  check(second, n, "second");
  ScheduleOverlap out{Eigen::VectorXd::Zero(n), Eigen::VectorXd::Zero(n), Eigen::VectorXd::Zero(n)};
  Eigen::VectorXi both = Eigen::VectorXi::Ones(n), either = Eigen::VectorXi::Ones(n);  // i itself
  for (Eigen::Index j = 0; j < n; ++j) {
    const Eigen::Index a = std::min<Eigen::Index>(first[std::size_t(j)] + 1, n - 1);
    const Eigen::Index b = std::min<Eigen::Index>(second[std::size_t(j)] + 1, n - 1);
    for (Eigen::Index i = j + 1; i <= std::max(a, b); ++i) {
      ++either[i];
      if (i <= a && i <= b) ++both[i];
    }
  }
  for (Eigen::Index i = 0; i < n; ++i) out.jaccard[i] = double(both[i]) / double(either[i]);
  return out;
}

/// Adds gain w of token j at step i to the side that alone holds j (nothing when both or neither).
void add_mass(ScheduleOverlap& out, const std::vector<int>& first, const std::vector<int>& second, Eigen::Index i,
              Eigen::Index j, double w) {
  const bool in_a = i <= first[std::size_t(j)] + 1, in_b = i <= second[std::size_t(j)] + 1;
  if (in_a && !in_b) out.only_first_mass[i] += w;
  if (in_b && !in_a) out.only_second_mass[i] += w;
}

}  // namespace

ScheduleOverlap schedule_overlap(const Eigen::MatrixXd& gains, const std::vector<int>& first,
                                 const std::vector<int>& second) {
  const Eigen::Index n = gains.rows();
  if (gains.cols() != n) throw std::invalid_argument("schedule_overlap: the gains must be square");
  ScheduleOverlap out = counted_overlap(first, second, n);
  for (Eigen::Index j = 0; j < n; ++j) {  // column by column (W is column-major), while A or B holds j
    const Eigen::Index last = std::min<Eigen::Index>(std::max(first[std::size_t(j)], second[std::size_t(j)]) + 1, n - 1);
    for (Eigen::Index i = j + 1; i <= last; ++i) add_mass(out, first, second, i, j, gains(i, j));
  }
  return out;
}

ScheduleOverlap schedule_overlap(const HeadGroup& group, const std::vector<int>& first,
                                 const std::vector<int>& second) {
  group.validate();
  ScheduleOverlap out = counted_overlap(first, second, group.tokens());
  constexpr int kBlockRows = 64;
  for (const ConstHeadMap& q : group.q) {
    for_each_attention_block(
        q, group.k, group.scale, kBlockRows,
        [&](int first_row, const Eigen::MatrixXd& probs) {
          for (Eigen::Index r = 0; r < probs.rows(); ++r) {
            const Eigen::Index i = first_row + r;
            for (Eigen::Index j = 0; j < i; ++j) add_mass(out, first, second, i, j, probs(r, j));
          }
        },
        group.window);
  }
  return out;
}

}  // namespace subevict::greedy
