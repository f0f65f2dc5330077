#pragma once
/// \file
/// Read-only memory maps of whole files: the readers parse the mapped bytes in place, so reading a
/// multi-gigabyte tensor file costs no copy beyond the decoded tensor itself.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace subevict {

/// A whole regular file mapped read-only (POSIX mmap, MAP_PRIVATE). An empty file yields an empty
/// span. Move-only; the mapping lives as long as the object. If another process truncates the file
/// while it is mapped, touching the lost pages raises SIGBUS; the readers assume files are not
/// modified while they are read.
class MappedFile {
 public:
  /// Opens and maps `path`. Throws InputError(path, "file", ...) if it cannot be opened or is not
  /// a regular file (a directory, a FIFO, ...; opening never blocks), and InputError(path,
  /// "file size", ...) if it is larger than max_bytes.
  MappedFile(const std::string& path, std::uint64_t max_bytes);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  /// The file's bytes, valid while this object lives.
  std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  void release() noexcept;

  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace subevict
