#include "proofs_checks/zero_padding_erratum.hpp"

#include <algorithm>
#include <cmath>

#include "core/attention.hpp"
#include "core/tolerance.hpp"
#include "proofs_checks/format.hpp"

namespace subevict::proofs_checks {

Eigen::VectorXd zero_padded_attention(const Eigen::VectorXd& logits, const std::vector<bool>& in_set) {
  Eigen::VectorXd padded = logits;
  for (Eigen::Index j = 0; j < padded.size(); ++j) {
    if (!in_set[std::size_t(j)]) padded[j] = 0.0;
  }
  return softmax(padded);
}

CheckResult check_erratum_zero_padding(const std::vector<SmallHead>& heads, int budget,
                                       const greedy::PolicyFactory& policy, int rows_per_head,
                                       const TrackedAttentionFn& tracked) {
  CheckResult result;
  long long printed_failures = 0;
  double printed_evicted_max = 0, corrected_evicted_max = 0, corrected_tv_max = 0;
  for (std::size_t c = 0; c < heads.size(); ++c) {
    const SmallHead& head = heads[c];
    const std::vector<std::vector<int>> caches = policy_caches(head, policy, budget, c);
    const int n = head.tokens(), first = std::min(budget + 1, n - 1);
    const double tol = Tol<double>::sum(std::size_t(n));
    for (int r = 0; r < rows_per_head && first < n; ++r) {
      const int i = first + int((long long)r * (n - 1 - first) / std::max(1, rows_per_head - 1));
      std::vector<bool> in_set(std::size_t(i) + 1, false);
      for (int t : caches[std::size_t(i) - 1]) in_set[std::size_t(t)] = true;
      in_set[std::size_t(i)] = true;
      const Eigen::VectorXd logits = head.logits.row(i).head(i + 1).transpose();
      const Eigen::VectorXd exact = head.attention.row(i).head(i + 1).transpose();
      double retained = 0;
      for (int j = 0; j <= i; ++j) retained += in_set[std::size_t(j)] ? exact[j] : 0.0;
      Eigen::VectorXd reference = Eigen::VectorXd::Zero(i + 1);
      for (int j = 0; j <= i; ++j) reference[j] = in_set[std::size_t(j)] ? exact[j] / retained : 0.0;
      const Eigen::VectorXd padded = zero_padded_attention(logits, in_set);
      const Eigen::VectorXd corrected = tracked(logits, in_set);
      double padded_evicted = 0, corrected_evicted = 0;
      for (int j = 0; j <= i; ++j) {
        if (in_set[std::size_t(j)]) continue;
        padded_evicted += padded[j];
        corrected_evicted = std::max(corrected_evicted, std::abs(corrected.size() > j ? corrected[j] : 1.0));
      }
      const double tv = corrected.size() == reference.size() ? 0.5 * (corrected - reference).cwiseAbs().sum() : 1.0;
      printed_evicted_max = std::max(printed_evicted_max, padded_evicted);
      corrected_evicted_max = std::max(corrected_evicted_max, corrected_evicted);
      corrected_tv_max = std::max(corrected_tv_max, tv);
      if (padded_evicted > tol) ++printed_failures;
      ++result.instances;
      ++result.hypotheses_held;
      result.worst_slack = std::min(result.worst_slack, tol - tv);
      if (corrected_evicted != 0.0 || tv > tol) {
        ++result.violations;
        if (!result.counterexample) {
          result.counterexample = Counterexample{
              head.label + ", 0-based step " + std::to_string(i) + ": the tracked attention puts weight " +
                  format_number(corrected_evicted) + " on an evicted position and is " + format_number(tv) +
                  " from a|_G / r(G) in total variation",
              {{"evicted_weight", corrected_evicted, "largest weight on an evicted position"},
               {"total_variation", tv, "TV to a|_G / r(G)"}}};
        }
      }
    }
  }
  conclude(result);
  if (result.outcome == Outcome::held && printed_failures == 0) result.outcome = Outcome::inconclusive;
  result.measurements = {
      {"printed_failures", double(printed_failures), "rows where zero padding leaves weight on evicted positions"},
      {"printed_evicted_mass_max", printed_evicted_max, "largest total weight zero padding gives evicted positions"},
      {"corrected_evicted_weight_max", corrected_evicted_max, "largest weight the tracked attention gives an evicted position"},
      {"corrected_tv_max", corrected_tv_max, "largest TV between the tracked attention and a|_G / r(G)"}};
  result.key_number = "zero padding leaves up to " + format_number(printed_evicted_max) + " on evicted keys (" +
                      std::to_string(printed_failures) + " of " + std::to_string(result.instances) +
                      " rows); masking leaves " + format_number(corrected_evicted_max);
  result.notes = std::to_string(heads.size()) + " heads, budget k = " + std::to_string(budget) +
                 ", rows at evenly spread steps of each head's trajectory after the first eviction.";
  return result;
}

}  // namespace subevict::proofs_checks
