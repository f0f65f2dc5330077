#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "core/input_error.hpp"

namespace subevict {
namespace {

/// Where a write step failed and why; turned into an InputError naming the final path.
[[noreturn]] void fail(const std::string& path, const std::string& step, int error) {
  throw InputError(path, "output file", "to be written atomically",
                   step + ": " + std::generic_category().message(error));
}

void write_all(int fd, std::span<const std::byte> bytes, const std::string& path,
               const std::string& temp) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      fail(path, "writing " + temp, errno);
    }
    bytes = bytes.subspan(static_cast<std::size_t>(written));
  }
}

/// Makes the rename durable. Best effort: some file systems refuse fsync on directories, and the
/// new file is already complete and in place at this point.
void sync_parent_directory(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) parent = std::filesystem::path(".");
  const int fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void write_file_atomically(const std::string& path,
                           std::span<const std::span<const std::byte>> chunks) {
  if (path.empty()) throw InputError("(empty path)", "output file", "a non-empty path");
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) fail(path, "creating " + temp, errno);
  try {
    for (std::span<const std::byte> chunk : chunks) write_all(fd, chunk, path, temp);
    if (::fsync(fd) != 0) fail(path, "flushing " + temp, errno);
    const int closed = ::close(fd);
    fd = -1;
    if (closed != 0) fail(path, "closing " + temp, errno);
    if (::rename(temp.c_str(), path.c_str()) != 0) fail(path, "renaming " + temp, errno);
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  sync_parent_directory(path);
}

}  // namespace subevict
