#include "greedy/eviction/process/cache_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>
#include <stdexcept>

#include "core/attention.hpp"
#include "core/input_error.hpp"

namespace subevict::greedy {
namespace {

void check_schedule(const std::vector<int>& last_step, const char* caller) {
  const int n = static_cast<int>(last_step.size());
  for (int j = 0; j < n; ++j) {
    if (last_step[j] < j - 1 || last_step[j] > n - 1) {
      throw std::invalid_argument(std::string(caller) + ": last_step[" + std::to_string(j) +
                                  "] = " + std::to_string(last_step[j]) + " is outside [" +
                                  std::to_string(j - 1) + ", " + std::to_string(n - 1) + "]");
    }
  }
}

}  // namespace

void validate_gains(const Eigen::MatrixXd& gains, const std::string& source) {
  if (gains.rows() != gains.cols()) {
    throw InputError(source, "gain matrix", "a square matrix",
                     std::to_string(gains.rows()) + " x " + std::to_string(gains.cols()));
  }
  for (Eigen::Index j = 0; j < gains.cols(); ++j) {
    for (Eigen::Index i = 0; i < gains.rows(); ++i) {
      const double x = gains(i, j);
      if (i < j && x != 0.0) {
        throw InputError(source, "entry (" + std::to_string(i) + ", " + std::to_string(j) + ")",
                         "0 above the diagonal (causal attention)", std::to_string(x));
      }
      if (!std::isfinite(x) || x < 0.0) {
        throw InputError(source, "entry (" + std::to_string(i) + ", " + std::to_string(j) + ")",
                         "a finite value >= 0", std::to_string(x));
      }
    }
  }
}

void validate_budget(int budget, const std::string& source) {
  if (budget < 0) throw InputError(source, "budget", "an integer >= 0", std::to_string(budget));
}

int validate_instance(const Eigen::MatrixXd& gains, int budget, const std::string& solver) {
  validate_gains(gains, solver);
  validate_budget(budget, solver);
  return static_cast<int>(gains.rows());
}

ScheduleSummary empty_schedule_summary() {
  ScheduleSummary out;
  out.status = ScheduleStatus::kOptimal;
  out.step_mass.resize(0);
  out.upper_bound = 0.0;
  return out;
}

Eigen::MatrixXd gain_matrix(const std::vector<Eigen::MatrixXd>& heads,
                            const Eigen::VectorXd& token_weights) {
  if (heads.empty()) throw InputError("gain_matrix", "heads", "at least one attention matrix");
  const Eigen::Index n = heads.front().rows();
  Eigen::MatrixXd sum = Eigen::MatrixXd::Zero(n, n);
  for (std::size_t h = 0; h < heads.size(); ++h) {
    if (heads[h].rows() != n || heads[h].cols() != n) {
      throw InputError("gain_matrix", "head " + std::to_string(h), "a " + std::to_string(n) +
                       " x " + std::to_string(n) + " matrix like head 0");
    }
    validate_gains(heads[h], "gain_matrix: head " + std::to_string(h));
    sum += heads[h];
  }
  if (token_weights.size() == 0) return sum;
  if (token_weights.size() != n) {
    throw InputError("gain_matrix", "token_weights", "length " + std::to_string(n),
                     std::to_string(token_weights.size()));
  }
  for (Eigen::Index j = 0; j < n; ++j) {
    if (!std::isfinite(token_weights[j]) || token_weights[j] < 0.0) {
      throw InputError("gain_matrix", "token_weights[" + std::to_string(j) + "]",
                       "a finite value >= 0", std::to_string(token_weights[j]));
    }
  }
  return sum * token_weights.asDiagonal();
}

Eigen::MatrixXd gain_matrix(const HeadGroup& group, bool weight_by_value_norm) {
  group.validate();
  const int n = group.tokens();
  Eigen::MatrixXd sum = Eigen::MatrixXd::Zero(n, n);
  for (const ConstHeadMap& q : group.q) sum += causal_attention(q, group.k, group.scale, group.window);
  if (!weight_by_value_norm) return sum;
  const Eigen::VectorXd norms = group.v.cast<double>().rowwise().norm();
  return sum * norms.asDiagonal();
}

std::string to_string(ScheduleStatus status) {
  switch (status) {
    case ScheduleStatus::kOptimal: return "optimal";
    case ScheduleStatus::kFeasible: return "feasible";
    case ScheduleStatus::kFailed: return "failed";
  }
  return "failed";
}

std::vector<int> cache_sizes(const std::vector<int>& last_step) {
  check_schedule(last_step, "cache_sizes");
  const int n = static_cast<int>(last_step.size());
  // Difference array: token j adds 1 on steps j..t_j.
  std::vector<int> delta(static_cast<std::size_t>(n) + 1, 0);
  for (int j = 0; j < n; ++j) {
    if (last_step[j] >= j) {
      ++delta[j];
      --delta[last_step[j] + 1];
    }
  }
  std::vector<int> sizes(n);
  int running = 0;
  for (int i = 0; i < n; ++i) sizes[i] = running += delta[i];
  return sizes;
}

bool is_feasible_schedule(const std::vector<int>& last_step, int budget) {
  const int n = static_cast<int>(last_step.size());
  for (int j = 0; j < n; ++j) {
    if (last_step[j] < j - 1 || last_step[j] > n - 1) return false;
  }
  for (int size : cache_sizes(last_step)) {
    if (size > budget) return false;
  }
  return true;
}

std::vector<int> drop_outside_window(std::vector<int> last_step, int window) {
  if (window < 0) throw std::invalid_argument("drop_outside_window: window must be >= 0");
  if (window == 0) return last_step;
  for (int j = 0; j < static_cast<int>(last_step.size()); ++j) last_step[j] = std::min(last_step[j], j + window - 2);
  return last_step;
}

namespace {

/// True when no t_j outlives its window (t_j ≤ j + W − 2); always for window 0.
bool within_window(const std::vector<int>& last_step, int window) {
  for (int j = 0; window > 0 && j < static_cast<int>(last_step.size()); ++j) {
    if (last_step[j] > j + window - 2) return false;
  }
  return true;
}

}  // namespace

bool is_process_schedule(const std::vector<int>& last_step, int budget, int window) {
  if (window < 0) throw std::invalid_argument("is_process_schedule: window must be >= 0");
  if (!is_feasible_schedule(last_step, budget) || !within_window(last_step, window)) return false;
  const std::vector<int> sizes = cache_sizes(last_step);
  for (int i = 0; i < static_cast<int>(sizes.size()); ++i) {
    if (sizes[i] != std::min(i + 1 - first_visible_key(i + 1, window), budget)) return false;
  }
  return true;
}

std::vector<int> to_process_schedule(const std::vector<int>& last_step, int budget, int window) {
  if (window < 0) throw std::invalid_argument("to_process_schedule: window must be >= 0");
  if (!is_feasible_schedule(last_step, budget)) {
    throw std::invalid_argument("to_process_schedule: the schedule exceeds the budget " +
                                std::to_string(budget) + " or has a step outside its range");
  }
  if (!within_window(last_step, window)) {
    throw std::invalid_argument("to_process_schedule: a token outlives the window of " + std::to_string(window) +
                                " keys (apply drop_outside_window first)");
  }
  const int n = static_cast<int>(last_step.size());
  std::vector<int> out(n);
  // The cache G'_i keyed by (original last step, index): its first entry is the one to evict.
  std::set<std::pair<int, int>> cache;
  for (int i = 0; i < n; ++i) {
    cache.emplace(last_step[i], i);
    const int exit = window > 0 ? i + 1 - window : -1;  // leaves the window first: not an eviction
    if (exit >= 0 && cache.erase({last_step[exit], exit}) > 0) out[exit] = i - 1;
    if (static_cast<int>(cache.size()) > budget) {
      const auto victim = cache.begin();
      out[victim->second] = i - 1;
      cache.erase(victim);
    }
  }
  for (const auto& [t, j] : cache) out[j] = n - 1;
  return out;
}

Eigen::VectorXd schedule_step_mass(const Eigen::MatrixXd& gains, const std::vector<int>& last_step) {
  check_schedule(last_step, "schedule_step_mass");
  const Eigen::Index n = gains.rows();
  if (gains.cols() != n || static_cast<Eigen::Index>(last_step.size()) != n) {
    throw std::invalid_argument("schedule_step_mass: gains must be n x n with n = last_step.size()");
  }
  Eigen::VectorXd mass = gains.diagonal();
  // Token j is in G_i for i = j + 1 .. t_j + 1 (capped at n - 1); column-major access.
  for (Eigen::Index j = 0; j < n; ++j) {
    const Eigen::Index last = std::min<Eigen::Index>(last_step[j] + 1, n - 1);
    for (Eigen::Index i = j + 1; i <= last; ++i) mass[i] += gains(i, j);
  }
  return mass;
}

double schedule_value(const Eigen::MatrixXd& gains, const std::vector<int>& last_step) {
  return schedule_step_mass(gains, last_step).sum();
}

std::vector<int> schedule_from_caches(const std::vector<std::vector<int>>& sets) {
  const int n = static_cast<int>(sets.size());
  std::vector<int> last(n);
  for (int j = 0; j < n; ++j) last[j] = j - 1;
  for (int i = 0; i < n; ++i) {
    for (int j : sets[i]) {
      if (j < 0 || j > i) {
        throw std::invalid_argument("schedule_from_caches: S_" + std::to_string(i) +
                                    " holds token " + std::to_string(j));
      }
      if (last[j] != i - 1) {
        throw std::invalid_argument("schedule_from_caches: token " + std::to_string(j) +
                                    " returns to S_" + std::to_string(i) + " after eviction");
      }
      last[j] = i;
    }
  }
  return last;
}

void finish_summary(const Eigen::MatrixXd& gains, ScheduleSummary& summary) {
  summary.step_mass = schedule_step_mass(gains, summary.last_step);
  summary.value = summary.step_mass.sum();
}

}  // namespace subevict::greedy
