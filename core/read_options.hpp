#pragma once
/// \file
/// Options shared by the file readers (.npy, .safetensors, workload files).

#include <cstdint>

namespace subevict {

/// What the readers accept beyond the format itself.
struct ReadOptions {
  /// Accept NaN and +-Inf values. Off by default: one non-finite entry poisons every attention
  /// statistic downstream, so a file holding one is treated as malformed.
  bool allow_nonfinite = false;
  /// Upper bound, in bytes, on the file size and on each tensor's data both as stored in the file
  /// and as decoded in memory. A guard against absurd declared sizes; default 64 GiB.
  std::uint64_t max_bytes = std::uint64_t{64} << 30;
};

}  // namespace subevict
