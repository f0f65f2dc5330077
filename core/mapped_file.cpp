#include "core/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

#include "core/input_error.hpp"

namespace subevict {
namespace {

std::string errno_message(int error) { return std::generic_category().message(error); }

/// Closes a file descriptor when leaving scope.
struct FdGuard {
  int fd;
  ~FdGuard() { ::close(fd); }
};

std::string describe_file_type(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

MappedFile::MappedFile(const std::string& path, std::uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading must not wait for a writer; no effect on regular files.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw InputError(path, "file", "a readable file", errno_message(errno));
  const FdGuard guard{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0)
    throw InputError(path, "file", "a readable file", errno_message(errno));
  if (!S_ISREG(info.st_mode)) {
    throw InputError(path, "file", "a regular file", describe_file_type(info.st_mode));
  }
  const auto size = static_cast<std::uint64_t>(info.st_size);
  if (size > max_bytes) {
    throw InputError(path, "file size",
                     "at most max_bytes = " + std::to_string(max_bytes) + " bytes",
                     std::to_string(size) + " bytes");
  }
  if (size == 0) return;
  void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (mapping == MAP_FAILED) {
    throw InputError(path, "file", "a file that can be memory-mapped", errno_message(errno));
  }
  data_ = static_cast<const std::byte*>(mapping);
  size_ = size;
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::release() noexcept {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace subevict
