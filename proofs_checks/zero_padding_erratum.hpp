#pragma once
/// \file
/// theory.md §9 item 4: H2O Def 2.2/D.10 pad the evicted rows of K with zeros, which gives every
/// evicted position the score <q, 0> = 0 and so the weight exp(0) / Z instead of 0. The corrected
/// tracked attention (core/attention.hpp tracked_attention) gives evicted positions exactly zero
/// weight and equals a|_G / r(G) (theory.md §1).

#include <Eigen/Core>
#include <functional>
#include <vector>

#include "proofs_checks/check.hpp"
#include "proofs_checks/dynamic_family.hpp"

namespace subevict::proofs_checks {

/// The tracked attention under test: weights over positions 0..i from the logits s_i0..s_ii and
/// the tracked set (in_set[j]: j ∈ G).
using TrackedAttentionFn = std::function<Eigen::VectorXd(const Eigen::VectorXd& logits, const std::vector<bool>& in_set)>;

/// The printed form: softmax over all positions with the logits of positions outside the set
/// replaced by 0 (a zero key row).
[[nodiscard]] Eigen::VectorXd zero_padded_attention(const Eigen::VectorXd& logits, const std::vector<bool>& in_set);

/// h2o.erratum_zero_padding: at `rows_per_head` steps of each head's trajectory where the cache
/// has evicted something, compares `tracked` and the printed zero-padded form with the reference
/// a|_G / r(G) computed from the exact row. A row demonstrates the printed failure when the
/// padded form puts weight > tolerance on evicted positions; the corrected form fails when
/// `tracked` puts any nonzero weight on an evicted position or differs from the reference by
/// more than the tolerance in total variation. Held: the printed form failed on some row and the
/// corrected form on none.
[[nodiscard]] CheckResult check_erratum_zero_padding(const std::vector<SmallHead>& heads, int budget,
                                                     const greedy::PolicyFactory& policy, int rows_per_head,
                                                     const TrackedAttentionFn& tracked);

}  // namespace subevict::proofs_checks
