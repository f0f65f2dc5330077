#pragma once
/// \file
/// The attention identities of theory.md §1, measured on the workload's heads at random tracked
/// sets: rows of exact attention sum to 1, TV(a, ã) = 1 − r(G), |o − õ| ≤ 2 (1 − r(G)) max |v|.
///
/// Each check is a free function of the workload AND the attention implementation under test
/// (softmax, tracked attention), so a test can pass a broken one and see the check fail (or, for
/// the two identities, its deviation grow); the registered checks pass core/attention.hpp's.
/// The two identities follow from the definitions in one step (softmax normalises; ã = a|_G / r(G)),
/// so they are measurements (Kind::measurement) of the implementation's rounding; the output bound
/// is a claim.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <Eigen/Core>

#include "core/workload.hpp"
#include "proofs_checks/check.hpp"

namespace subevict::proofs_checks {

/// Exact attention weights of one row from its logits (softmax).
using SoftmaxFunction = std::function<Eigen::VectorXd(const Eigen::VectorXd& logits)>;
/// Tracked attention of one row: weights over all positions, given which are in the set G.
using TrackedAttentionFunction =
    std::function<Eigen::VectorXd(const Eigen::VectorXd& logits, const std::vector<bool>& in_set)>;

/// Which rows the identity checks sample: `rows_per_head` query rows per (layer, query head) of
/// `layers` (empty: every layer), uniformly among 1..tokens−1, each with a tracked set holding
/// every earlier token with probability 0.2 and the row's own token; std::mt19937_64(seed).
struct RowSample {
  int rows_per_head = 16;
  std::uint64_t seed = 0;
  std::vector<int> layers{};
};

/// core.row_sums, a measurement: max |Σ_j a_ij − 1| over the sampled rows, a = softmax(logits),
/// and the rows where it exceeds Tol<double>::sum(tokens) ("rows_beyond_rounding"; the first is
/// described in the notes). Outcome `measured`.
CheckResult check_row_sums(const Workload& workload, const RowSample& sample, const SoftmaxFunction& softmax);

/// core.tv_identity, a measurement: max |TV(a, ã) − (1 − r(G))| over the sampled rows,
/// a = softmax(logits), ã = tracked(logits, G), r(G) = Σ_{j∈G} a_j, and the rows where it exceeds
/// Tol<double>::sum(tokens), as for check_row_sums. Outcome `measured`.
CheckResult check_tv_identity(const Workload& workload, const RowSample& sample, const SoftmaxFunction& softmax,
                              const TrackedAttentionFunction& tracked);

/// The factor of the output bound |o − õ| ≤ 2 (1 − r(G)) max_j |v_j| (theory.md §1). It is attained:
/// when the row's weight outside G sits on values −u and inside G on values u, |o − õ| =
/// 2 (1 − r(G)) |u|.
inline constexpr double kOutputBoundFactor = 2.0;

/// core.output_bound: |o − õ| ≤ factor (1 − r(G)) max_j |v_j| + Tol<double>::sum(tokens) max |v|,
/// factor = kOutputBoundFactor unless a test passes a wrong one.
CheckResult check_output_bound(const Workload& workload, const RowSample& sample, const SoftmaxFunction& softmax,
                               const TrackedAttentionFunction& tracked, double factor = kOutputBoundFactor);

/// The registered checks core.row_sums, core.tv_identity, core.output_bound on
/// CheckContext::workload.
std::vector<std::unique_ptr<Check>> attention_identity_checks();

}  // namespace subevict::proofs_checks
