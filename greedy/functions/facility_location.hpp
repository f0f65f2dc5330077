#pragma once
/// \file
/// Facility location f(S) = Σ_i max_{j∈S} sim_ij over a dense nonnegative similarity matrix
/// (theory.md §4): rows are clients i, columns are the candidates j, which form the ground set.
/// f(∅) = 0; with sim ≥ 0 (checked by every constructor) f is monotone and submodular.

#include <Eigen/Core>
#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "core/workload.hpp"
#include "greedy/functions/set_function.hpp"

namespace subevict::greedy {

/// f(S) = Σ_i max_{j∈S} sim_ij, max over ∅ = 0. The matrix is stored column-major (Eigen's
/// default) so that candidate j's column, the operand of every gain, is contiguous.
class FacilityLocation final : public SetFunction {
 public:
  /// Takes `similarity` (clients x candidates). Throws std::invalid_argument if it has no rows or
  /// no columns, or an entry that is not finite or negative (naming the entry). O(rows · cols).
  explicit FacilityLocation(Eigen::MatrixXd similarity);

  /// Reads a 2-D float32/float64 .npy (rows = clients, columns = candidates). Throws InputError
  /// naming `path` if the file is unreadable, not 2-D, empty, or holds a NaN, an infinity or a
  /// negative entry.
  static FacilityLocation from_npy(const std::string& path);

  /// The facility location of one attention head: sim = the causal attention matrix
  /// (core/attention.hpp causal_attention), clients = queries, candidates = keys. Memory 8 n² bytes.
  static FacilityLocation from_attention(const ConstHeadMap& q, const ConstHeadMap& k, double scale);

  std::size_t ground_size() const override { return std::size_t(similarity_.cols()); }
  /// O(rows · |S|).
  double evaluate(std::span<const Element> set) const override;
  /// The state keeps, per client, the best similarity in S and which member attains it (lowest
  /// index on ties): value O(1); gain O(rows), one vectorized pass over the candidate's column;
  /// add O(rows); remove O(rows + r·|S|) where r is the number of clients whose best member left
  /// (their maximum is recomputed over the remaining members).
  std::unique_ptr<SetState> empty_state() const override;
  std::string name() const override { return "facility-location"; }
  bool monotone_submodular() const override { return true; }

  /// The similarity matrix (clients x candidates, column-major).
  const Eigen::MatrixXd& similarity() const { return similarity_; }
  /// Number of clients (rows).
  std::size_t clients() const { return std::size_t(similarity_.rows()); }

 private:
  Eigen::MatrixXd similarity_;
};

}  // namespace subevict::greedy
