#pragma once
/// \file
/// Weighted sums of rows, rows^T W: the outputs sum_e w_eh v_e of attention weights W over a set
/// of value rows (the simulator's tracked outputs at every step), on a CPU path
/// (core/cpu_path.hpp).

#include <Eigen/Core>
#include <span>

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

/// out(b, c) = sum over u = 0, 1, ... of weights(b, u) rows(index[u], c): value rows gathered by
/// token (rows n x d float, converted exactly; weights q x count, out q x d, both row-major), each
/// sum from 0 with one fused multiply-add per u in ascending u, so both paths give the scalar
/// std::fma loop's bits (kAvx2Fma four queries and eight dimensions per register tile). A zero
/// weight adds exactly nothing: the sum over a subset of the rows, in ascending u, is the sum over
/// all of them with zeros elsewhere. Query rows are dealt to `threads` OpenMP threads (one inside
/// another parallel region; the bits do not depend on the count). Throws std::invalid_argument
/// when the sizes disagree, an index is outside the rows or threads < 1, InputError for kAvx2Fma
/// where cpu_supports_avx2_fma() is false.
void gathered_weighted_rows(const Eigen::Ref<const RowMatrixf>& rows, std::span<const int> index,
                            const Eigen::Ref<const RowMatrixd>& weights, Eigen::Ref<RowMatrixd> out, CpuPath path,
                            int threads = 1);

}  // namespace subevict
