#pragma once
/// \file
/// Weighted sums of rows, rows^T W: the outputs sum_e w_eh v_e of attention weights W over a set
/// of value rows (the simulator's tracked outputs at every step), on a CPU path
/// (core/cpu_path.hpp).

#include <Eigen/Core>

#include "core/cpu_path.hpp"
#include "core/exact_attention_rows.hpp"

namespace subevict {

/// out = rows^T weights: out(c, h) = sum_e weights(e, h) rows(e, c), with float rows m x d
/// (converted to double exactly), weights m x g, out d x g (sized by the caller). Portable:
/// Eigen's product of the converted rows; AVX2 (where weights and out are contiguous columns; else
/// the portable product): FMA, e ascending, reading the floats (half the bytes of doubles: the
/// simulator's per-step product is bound by reading the cache). Both in double; they differ by at
/// most 2 Tol<double>::sum(m) sum_e |weights(e, h) rows(e, c)| (two m-term sums in other orders).
/// Throws std::invalid_argument when the sizes disagree, InputError for kAvx2Fma where
/// cpu_supports_avx2_fma() is false.
void weighted_rows(const Eigen::Ref<const RowMatrixf>& rows,
                   const Eigen::Ref<const Eigen::MatrixXd>& weights,
                   Eigen::Ref<Eigen::MatrixXd> out, CpuPath path);

}  // namespace subevict
