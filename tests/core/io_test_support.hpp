#pragma once
/// \file
/// Helpers shared by the file I/O tests: scratch directories, raw file bytes, bit-exact
/// comparison, RapidCheck generators, and an assertion on InputError messages.

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

#include "core/input_error.hpp"

namespace subevict::testing {

/// Directory of the committed valid reference files (written by tests/data/valid/make_valid.py).
inline const std::string kValidDataDir = SUBEVICT_SOURCE_DIR "/tests/data/valid";

/// A fresh directory under the system temp directory, removed with everything in it on
/// destruction. `path(name)` gives a new path inside it.
class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    dir_ = std::filesystem::temp_directory_path() /
           ("subevict_io_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(dir_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  /// A path not used before in this directory, ending in `suffix`.
  std::string unique(const std::string& suffix) {
    std::string name = std::to_string(next_++);
    name += suffix;
    return path(name);
  }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  int next_ = 0;
};

inline std::vector<std::byte> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> chars((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  for (std::size_t i = 0; i < chars.size(); ++i) bytes[i] = std::byte(chars[i]);
  return bytes;
}

inline void write_bytes(const std::string& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

inline std::vector<std::byte> to_bytes(const std::string& text) {
  std::vector<std::byte> bytes(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) bytes[i] = std::byte(text[i]);
  return bytes;
}

/// Unsigned integer with the width of T (float -> uint32_t, double -> uint64_t).
template <class T>
using BitsOf = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;

/// The values' IEEE bit patterns: comparing these is bit-exact (NaN payloads, signed zeros).
template <class T>
std::vector<BitsOf<T>> bits(const std::vector<T>& values) {
  std::vector<BitsOf<T>> result;
  for (T v : values) result.push_back(std::bit_cast<BitsOf<T>>(v));
  return result;
}

/// Finite T from arbitrary bit patterns (small patterns at small sizes: subnormals, zeros);
/// non-finite patterns are replaced by 1.5.
template <class T>
rc::Gen<T> finite_value() {
  return rc::gen::map(rc::gen::arbitrary<BitsOf<T>>(), [](BitsOf<T> pattern) {
    const T value = std::bit_cast<T>(pattern);
    return std::isfinite(value) ? value : T(1.5);
  });
}

/// Any T, NaN payloads and infinities included.
template <class T>
rc::Gen<T> any_value() {
  return rc::gen::map(rc::gen::arbitrary<BitsOf<T>>(),
                      [](BitsOf<T> pattern) { return std::bit_cast<T>(pattern); });
}

/// A shape of rank 0..4 with dimensions 0..4 (so empty tensors occur).
inline rc::Gen<std::vector<std::size_t>> small_shape() {
  return rc::gen::mapcat(rc::gen::inRange<std::size_t>(0, 5), [](std::size_t rank) {
    return rc::gen::container<std::vector<std::size_t>>(rank, rc::gen::inRange<std::size_t>(0, 5));
  });
}

/// Success when `action` throws an InputError whose message contains every one of `parts`.
template <class Action>
::testing::AssertionResult rejects(Action action, const std::vector<std::string>& parts) {
  try {
    action();
  } catch (const InputError& e) {
    const std::string message = e.what();
    for (const std::string& part : parts) {
      if (message.find(part) == std::string::npos) {
        return ::testing::AssertionFailure()
               << "message \"" << message << "\" lacks \"" << part << "\"";
      }
    }
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-InputError: " << e.what();
  }
  return ::testing::AssertionFailure() << "nothing was thrown";
}

/// Whether `dir` holds a leftover temporary file of the atomic writer.
inline bool has_temporary_files(const std::filesystem::path& dir) {
  for (const auto& item : std::filesystem::directory_iterator(dir)) {
    if (item.path().filename().string().find(".tmp.") != std::string::npos) return true;
  }
  return false;
}

}  // namespace subevict::testing
