#include "proofs_checks/sparsity_claim.hpp"

#include <algorithm>

#include "core/attention.hpp"
#include "proofs_checks/dynamic_family.hpp"
#include "proofs_checks/format.hpp"

namespace subevict::proofs_checks {

AlphaEstimator smallest_good_alpha() {
  return [](const std::vector<int>& excess, int budget) {
    return excess.empty() ? 0.0 : double(*std::max_element(excess.begin(), excess.end())) / double(budget);
  };
}

CheckResult check_claim_d34(const std::vector<Eigen::MatrixXd>& samples, double tau, int budget,
                            const AlphaEstimator& alpha) {
  CheckResult result;
  double alpha_max = 0, s0_mean = 0, union_over_bound = 0;
  long long good_rows = 0, rows = 0;
  for (std::size_t c = 0; c < samples.size(); ++c) {
    const Eigen::MatrixXd& x = samples[c];
    const Eigen::Index m = x.rows(), n = x.cols();
    std::vector<char> in_all(std::size_t(n), 1), in_any(std::size_t(n), 0);
    for (Eigen::Index r = 0; r < m; ++r) {
      for (Eigen::Index j = 0; j < n; ++j) {
        const bool in = x(r, j) >= tau;
        in_all[std::size_t(j)] = char(in_all[std::size_t(j)] && in);
        in_any[std::size_t(j)] = char(in_any[std::size_t(j)] || in);
      }
    }
    const long long s0 = std::count(in_all.begin(), in_all.end(), 1);
    std::vector<int> excess(std::size_t(m), 0);
    for (Eigen::Index r = 0; r < m; ++r) {
      for (Eigen::Index j = 0; j < n; ++j) excess[std::size_t(r)] += x(r, j) >= tau && !in_all[std::size_t(j)];
      good_rows += excess[std::size_t(r)] <= budget;
    }
    rows += m;
    const long long union_size = std::count(in_any.begin(), in_any.end(), 1) - s0;
    const double a = alpha(excess, budget);
    const double bound = a * budget * double(m);
    alpha_max = std::max(alpha_max, a);
    s0_mean += double(s0) / double(samples.size());
    if (bound > 0) union_over_bound = std::max(union_over_bound, double(union_size) / bound);
    ++result.instances;
    ++result.hypotheses_held;
    result.worst_slack = std::min(result.worst_slack, bound - double(union_size));
    if (double(union_size) > bound) {
      ++result.violations;
      if (!result.counterexample) {
        result.counterexample = Counterexample{
            "instance " + std::to_string(c) + " (" + std::to_string(m) + " samples of length " + std::to_string(n) +
                "): |union supp \\ S0| = " + std::to_string(union_size) + " > alpha k m = " + format_number(bound) +
                " with alpha = " + format_number(a) + ", k = " + std::to_string(budget) + ", tau = " +
                format_number(tau) + ", |S0| = " + std::to_string(s0),
            {{"union", double(union_size), "|union of supports minus S0|"}, {"bound", bound, "alpha k m"}}};
      }
    }
  }
  conclude(result);
  result.measurements = {
      {"alpha", alpha_max, "largest alpha (max excess support / k) over instances"},
      {"tau", tau, "support threshold on attention weights"},
      {"s0_mean", s0_mean, "mean |S0| (tokens in every sample's support)"},
      {"union_over_bound_max", union_over_bound, "largest |union supp minus S0| / (alpha k m)"},
      {"k_good_fraction", rows > 0 ? double(good_rows) / double(rows) : 0.0,
       "fraction of samples with |supp minus S0| <= k (alpha = 1)"}};
  result.key_number = "alpha " + format_number(alpha_max) + ", union/bound <= " + format_number(union_over_bound) +
                      " (" + std::to_string(result.instances) + " heads)";
  result.notes = "Samples are exact attention rows; S0 is the intersection of all supports of an instance, the "
                 "largest set the definition admits. The bound is a union bound and is loose by construction; the "
                 "informative numbers are alpha and |S0|.";
  return result;
}

std::vector<Eigen::MatrixXd> attention_row_samples(const Workload& workload, int count) {
  const Shape& s = workload.shape();
  std::vector<Eigen::MatrixXd> out;
  for (int c = 0; c < count; ++c) {
    const auto [layer, q_head] = spread_head(s, c, count);
    const Eigen::MatrixXd a = causal_attention(workload.q(layer, q_head), workload.k(layer, s.kv_head_of(q_head)),
                                               workload.score_scale());
    const int first = s.tokens / 2;
    out.push_back(a.bottomRows(s.tokens - first));
  }
  return out;
}

}  // namespace subevict::proofs_checks
