#include "core/sha256.hpp"

#include <openssl/evp.h>

#include <stdexcept>

namespace subevict {

namespace {

void check(int ok, const char* what) {
  if (ok != 1) throw std::runtime_error(std::string("sha256: OpenSSL's ") + what + " failed");
}

}  // namespace

Sha256::Sha256() : context_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
  if (!context_) throw std::runtime_error("sha256: OpenSSL's EVP_MD_CTX_new failed");
  check(EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr), "EVP_DigestInit_ex");
}

void Sha256::update(const void* data, std::size_t size) {
  if (finished_) throw std::logic_error("sha256: update() after hex()");
  if (size > 0) check(EVP_DigestUpdate(context_.get(), data, size), "EVP_DigestUpdate");
}

std::string Sha256::hex() {
  if (finished_) throw std::logic_error("sha256: hex() called twice");
  finished_ = true;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  check(EVP_DigestFinal_ex(context_.get(), digest, &size), "EVP_DigestFinal_ex");
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out += kDigits[digest[i] >> 4];
    out += kDigits[digest[i] & 0xf];
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 hash;
  hash.update(bytes.data(), bytes.size());
  return hash.hex();
}

bool is_sha256_hex(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace subevict
