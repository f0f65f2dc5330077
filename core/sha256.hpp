#pragma once
/// \file
/// SHA-256 (FIPS 180-4): the identity of tensors written beside results computed from them, so
/// that a result file read back is checked against the data it is applied to (e.g. the budget
/// curves of budget_curve.csv against the head they were computed on).

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace subevict {

/// An incremental SHA-256: update() with the bytes in order (any split gives the same digest),
/// then hex() once.
class Sha256 {
 public:
  Sha256();
  /// Appends `size` bytes at `data`.
  void update(const void* data, std::size_t size);
  /// The digest of everything appended, as 64 lowercase hexadecimal digits. Finishes the hash:
  /// call it once.
  [[nodiscard]] std::string hex();

 private:
  void block(const std::uint8_t* data);

  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> pending_{};
  std::size_t pending_size_ = 0;
  std::uint64_t length_ = 0;  ///< bytes appended
};

/// The SHA-256 of `bytes` as 64 lowercase hexadecimal digits.
[[nodiscard]] std::string sha256_hex(std::string_view bytes);

/// True when `text` is 64 lowercase hexadecimal digits (what Sha256::hex writes).
[[nodiscard]] bool is_sha256_hex(std::string_view text);

}  // namespace subevict
