#pragma once
/// \file
/// SHA-256 (FIPS 180-4, computed by OpenSSL's libcrypto): the identity of tensors written beside
/// results computed from them, so that a result file read back is checked against the data it is
/// applied to (e.g. the budget curves of budget_curve.csv against the head they were computed on).

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

struct evp_md_ctx_st;  // OpenSSL's digest context (EVP_MD_CTX), kept out of the header

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
  std::unique_ptr<evp_md_ctx_st, void (*)(evp_md_ctx_st*)> context_;
  bool finished_ = false;
};

/// The SHA-256 of `bytes` as 64 lowercase hexadecimal digits.
[[nodiscard]] std::string sha256_hex(std::string_view bytes);

/// True when `text` is 64 lowercase hexadecimal digits (what Sha256::hex writes).
[[nodiscard]] bool is_sha256_hex(std::string_view text);

}  // namespace subevict
