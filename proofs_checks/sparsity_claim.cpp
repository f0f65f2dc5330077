#include "proofs_checks/sparsity_claim.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/attention.hpp"
#include "proofs_checks/dynamic_family.hpp"
#include "proofs_checks/format.hpp"

namespace subevict::proofs_checks {
namespace {

/// What the test rows of one instance showed against its calibrated constants.
struct TestTally {
  long long good_rows = 0;   ///< test rows with S₀ ⊆ supp_τ(x) and |supp_τ(x) \ S₀| ≤ α k
  int largest_excess = 0;    ///< max |supp_τ(x) \ S₀| over the test rows
  long long union_size = 0;  ///< |∪_x supp_τ(x) \ S₀| over the test rows
};

TestTally tally_test_rows(const Eigen::MatrixXd& test, const GoodConstants& g) {
  const Eigen::Index n = test.cols();
  std::vector<char> in_s0(std::size_t(n), 0), in_union(std::size_t(n), 0);
  for (int j : g.s0) in_s0[std::size_t(j)] = 1;
  TestTally t;
  for (Eigen::Index r = 0; r < test.rows(); ++r) {
    bool has_s0 = true;
    int excess = 0;
    for (Eigen::Index j = 0; j < n; ++j) {
      const bool in = test(r, j) >= g.tau;
      if (in_s0[std::size_t(j)]) {
        has_s0 = has_s0 && in;
      } else if (in) {
        ++excess;
        in_union[std::size_t(j)] = 1;
      }
    }
    t.good_rows += has_s0 && excess <= g.excess;
    t.largest_excess = std::max(t.largest_excess, excess);
  }
  t.union_size = std::count(in_union.begin(), in_union.end(), 1);
  return t;
}

/// reach[m - 1] = the tokens outside S₀ where one of the first m test rows is non-zero: the
/// largest value |∪ supp_τ(x) \ S₀| over those rows can take (τ > 0).
std::vector<long long> reach_by_rows(const Eigen::MatrixXd& test, const GoodConstants& g) {
  std::vector<char> outside(std::size_t(test.cols()), 1), seen(std::size_t(test.cols()), 0);
  for (int j : g.s0) outside[std::size_t(j)] = 0;
  std::vector<long long> reach;
  long long count = 0;
  for (Eigen::Index r = 0; r < test.rows(); ++r) {
    for (Eigen::Index j = 0; j < test.cols(); ++j) {
      if (test(r, j) > 0 && outside[std::size_t(j)] && !seen[std::size_t(j)]) {
        seen[std::size_t(j)] = 1;
        ++count;
      }
    }
    reach.push_back(count);
  }
  return reach;
}

}  // namespace

GoodConstants calibrate_d33(const Eigen::MatrixXd& calibration, int budget) {
  if (budget < 1 || calibration.rows() < 1 || calibration.cols() < 1) {
    throw std::invalid_argument("calibrate_d33: expected at least one calibration row and a budget k >= 1, got " +
                                std::to_string(calibration.rows()) + " rows and k = " + std::to_string(budget));
  }
  const Eigen::Index n = calibration.cols();
  GoodConstants g;
  double largest_outside = 0.0;  // the largest (k+1)-th largest entry of a row
  std::vector<double> row(static_cast<std::size_t>(n));
  for (Eigen::Index r = 0; r < calibration.rows(); ++r) {
    if (n <= budget) break;
    for (Eigen::Index j = 0; j < n; ++j) row[std::size_t(j)] = calibration(r, j);
    std::nth_element(row.begin(), row.begin() + budget, row.end(), std::greater<>());
    largest_outside = std::max(largest_outside, row[std::size_t(budget)]);
  }
  g.tau = std::nextafter(largest_outside, std::numeric_limits<double>::infinity());
  const auto needed = (long long)std::ceil(kS0Coverage * double(calibration.rows()));
  std::vector<char> in_s0(std::size_t(n), 0);
  for (Eigen::Index j = 0; j < n; ++j) {
    long long rows = 0;
    for (Eigen::Index r = 0; r < calibration.rows(); ++r) rows += calibration(r, j) >= g.tau;
    if (rows >= needed) {
      in_s0[std::size_t(j)] = 1;
      g.s0.push_back(int(j));
    }
  }
  for (Eigen::Index r = 0; r < calibration.rows(); ++r) {
    int excess = 0;
    for (Eigen::Index j = 0; j < n; ++j) excess += calibration(r, j) >= g.tau && !in_s0[std::size_t(j)];
    g.excess = std::max(g.excess, excess);
  }
  g.alpha = double(g.excess) / double(budget);
  return g;
}

CheckResult check_claim_d34(const std::vector<SupportSamples>& samples, int budget) {
  if (budget < 1) throw std::invalid_argument("check_claim_d34: expected a budget k >= 1, got " + std::to_string(budget));
  CheckResult result;
  double s0_min = std::numeric_limits<double>::infinity(), s0_sum = 0, alpha_max = 0, union_over_bound = 0;
  long long test_rows = 0, good_rows = 0;
  std::vector<Measurement> per_instance;
  std::string not_met;
  for (std::size_t c = 0; c < samples.size(); ++c) {
    const SupportSamples& s = samples[c];
    if (s.calibration.rows() < 1 || s.test.rows() < 1 || s.calibration.cols() != s.test.cols()) {
      throw std::invalid_argument("check_claim_d34: instance " + std::to_string(c) +
                                  " needs calibration and test rows of the same length");
    }
    const GoodConstants g = calibrate_d33(s.calibration, budget);
    // The union of the first n rows' supports outside S0 holds at most reach(n) tokens (those outside
    // S0 where one of the rows is non-zero: τ > 0), so the bound α k n can fail only where
    // α k n < reach(n): the claim is tested on the most test rows with that (all of them when they
    // all have it); an instance where no n >= 1 has it is vacuous.
    const std::vector<long long> reach = reach_by_rows(s.test, g);
    long long n = 0;
    for (long long m = 1; m <= (long long)reach.size(); ++m) {
      if ((long long)g.excess * m < reach[std::size_t(m - 1)]) n = m;
    }
    const bool vacuous = n == 0;
    if (vacuous) n = s.test.rows();
    const long long range = reach[std::size_t(n - 1)];
    const TestTally t = tally_test_rows(s.test.topRows(Eigen::Index(n)), g);
    const long long bound = (long long)g.excess * n;  // α k n, exact
    ++result.instances;
    test_rows += n;
    good_rows += t.good_rows;
    s0_min = std::min(s0_min, double(g.s0.size()));
    s0_sum += double(g.s0.size());
    alpha_max = std::max(alpha_max, g.alpha);
    if (bound > 0) union_over_bound = std::max(union_over_bound, double(t.union_size) / double(bound));
    const std::string tag = "instance" + std::to_string(c) + "_";
    per_instance.push_back({tag + "s0", double(g.s0.size()), s.label + ": |S0|"});
    per_instance.push_back({tag + "tau", g.tau, s.label + ": tau"});
    per_instance.push_back({tag + "alpha", g.alpha, s.label + ": alpha = (alpha k) / k"});
    per_instance.push_back({tag + "union", double(t.union_size), s.label + ": |union of test supports minus S0|"});
    per_instance.push_back({tag + "bound", double(bound), s.label + ": alpha k n over the n test rows"});
    per_instance.push_back({tag + "test_rows", double(n), s.label + ": n, the test rows the bound is applied to"});
    per_instance.push_back({tag + "range", double(range),
                            s.label + ": reach(n), the tokens outside S0 the n rows can attend to (the union's largest value)"});
    per_instance.push_back({tag + "good_rows", double(t.good_rows) / double(n),
                            s.label + ": share of test rows that are (alpha, tau, k)-good"});
    if (g.s0.empty()) {
      if (not_met.empty()) not_met = " S0 is empty first on " + s.label + ".";
      continue;
    }
    ++result.hypotheses_held;
    if (vacuous) {
      ++result.vacuous;
      continue;
    }
    result.worst_slack = std::min(result.worst_slack, double(bound - t.union_size));
    if (t.union_size > bound) {
      ++result.violations;
      if (!result.counterexample) {
        result.counterexample = Counterexample{
            s.label + " (" + std::to_string(n) + " test rows of length " + std::to_string(s.test.cols()) +
                "): |union supp \\ S0| = " + std::to_string(t.union_size) + " > alpha k n = " + std::to_string(bound) +
                " with alpha k = " + std::to_string(g.excess) + " (largest test excess " +
                std::to_string(t.largest_excess) + "), k = " + std::to_string(budget) + ", tau = " +
                format_number(g.tau) + ", |S0| = " + std::to_string(g.s0.size()),
            {{"union", double(t.union_size), "|union of supports minus S0|"}, {"bound", double(bound), "alpha k n"}}};
      }
    }
  }
  conclude(result);
  const double instances = double(std::max<long long>(1, result.instances));
  result.measurements = {
      {"s0_min", result.instances > 0 ? s0_min : 0.0, "smallest |S0| over the instances"},
      {"s0_mean", s0_sum / instances, "mean |S0| (tokens in every calibration row's tau-support)"},
      {"alpha_max", alpha_max, "largest alpha fixed on the calibration rows"},
      {"union_over_bound_max", union_over_bound, "largest |union supp minus S0| / (alpha k n) over the instances"},
      {"test_rows_good", test_rows > 0 ? double(good_rows) / double(test_rows) : 0.0,
       "share of test rows with S0 in their support and at most alpha k other tokens"},
      {"instances_with_s0", double(result.hypotheses_held), "instances with a non-empty S0"},
      {"vacuous_instances", double(result.vacuous), "instances where alpha k n >= reach(n) for every n (the bound cannot fail)"}};
  result.measurements.insert(result.measurements.end(), per_instance.begin(), per_instance.end());
  result.key_number = "|S0| >= " + format_number(result.instances > 0 ? s0_min : 0.0) + ", alpha <= " +
                      format_number(alpha_max) + ", union/bound <= " + format_number(union_over_bound) + " (" +
                      std::to_string(result.hypotheses_held) + " of " + std::to_string(result.instances) +
                      " instances with S0 non-empty)";
  result.notes = "Budget k = " + std::to_string(budget) +
                 ". Each instance's calibration rows fix tau (the smallest threshold at which every calibration "
                 "row's tau-support has at most k tokens), S0 (the tokens in the tau-support of at least " +
                 format_number(100 * kS0Coverage) +
                 "% of the calibration rows) and alpha (the largest calibration excess over S0, divided by k) "
                 "before the test rows are read. The union of n rows' supports outside S0 holds at most reach(n) tokens "
                 "(those outside S0 where one of the rows is non-zero), so the bound alpha k n is applied to the most "
                 "test rows n with alpha k n < reach(n): beyond, it cannot fail. test_rows_good is the share of those test rows that are themselves (alpha, tau, k)-good." +
                 not_met;
  return result;
}

std::vector<SupportSamples> attention_row_samples(const Workload& workload, int count, const std::vector<int>& layers) {
  const Shape& s = workload.shape();
  if (s.tokens < 4 || count < 1) {
    throw std::invalid_argument("attention_row_samples: expected at least 4 tokens and count >= 1, got " +
                                std::to_string(s.tokens) + " tokens and count " + std::to_string(count));
  }
  const int first = s.tokens / 2, split = first + (s.tokens - first) / 2;
  std::vector<SupportSamples> out;
  for (int c = 0; c < count; ++c) {
    const auto [layer, q_head] = spread_head(s, c, count, layers);
    const Eigen::MatrixXd a = causal_attention(workload.q(layer, q_head), workload.k(layer, s.kv_head_of(q_head)),
                                               workload.score_scale());
    out.push_back({a.middleRows(first, split - first), a.bottomRows(s.tokens - split),
                   "layer " + std::to_string(layer) + " head " + std::to_string(q_head)});
  }
  return out;
}

}  // namespace subevict::proofs_checks
