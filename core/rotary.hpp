#pragma once
/// \file
/// Rotary position embedding (RoPE) as the workload files record it (core/workload_io.hpp,
/// "rotary_*" metadata): the rotation a layer applies to its pre-RoPE queries and keys, and the
/// average rotation over a run of future positions that kvpress's query-statistics scorers apply.

#include <Eigen/Core>
#include <string>

namespace subevict {

/// One layer's RoPE, in Hugging Face's rotate_half pairing (GPT-NeoX's; the only one workload files
/// record): of a head_dim-vector x, the first `dims` entries rotate in pairs (x_j, x_{j+dims/2}),
/// j < dims/2, by the angle p θ_j at position p, θ_j = base^(−2j/dims):
///   x'_j = x_j cos(p θ_j) − x_{j+dims/2} sin(p θ_j),  x'_{j+dims/2} = x_{j+dims/2} cos(p θ_j) + x_j sin(p θ_j);
/// entries dims..head_dim−1 pass unrotated (partial rotary). No position scaling.
struct Rotary {
  double base = 10000.0;  ///< the frequency base (rope_theta), finite and > 1
  int dims = 0;           ///< the rotated entries, even, 2 ≤ dims ≤ head_dim

  /// Throws std::invalid_argument unless base is finite and > 1 and dims is even with
  /// 2 ≤ dims ≤ head_dim.
  void validate(int head_dim) const;

  friend bool operator==(const Rotary&, const Rotary&) = default;
};

/// The metadata value of `rotary_pairing` for the rule above.
inline constexpr const char* kRotaryPairing = "rotate_half";

/// R(p), the head_dim × head_dim matrix of the rotation to position `position` (x' = R(p) x),
/// in double. Precondition: rotary.validate(head_dim) passes.
[[nodiscard]] Eigen::MatrixXd rotation(const Rotary& rotary, int head_dim, double position);

/// (1/count) Σ_{p = first}^{first + count − 1} R(p): kvpress's average RoPE matrix of the next
/// `count` positions after a prompt of `first` tokens (ExpectedAttentionPress.apply_avg_rope,
/// CapPress._avg_rope_matrix), in double. The identity when count ≤ 0.
[[nodiscard]] Eigen::MatrixXd average_rotation(const Rotary& rotary, int head_dim, long first, int count);

}  // namespace subevict
