#include "core/atomic_file.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>

#include "core/npy.hpp"
#include "core/safetensors.hpp"
#include "io_test_support.hpp"

namespace subevict {
namespace {

using testing::has_temporary_files;
using testing::read_bytes;
using testing::rejects;
using testing::ScratchDir;

/// File size limit for the failed-overwrite test: above the old file, below the new one.
constexpr rlim_t kFileSizeLimit = 4096;
constexpr std::size_t kLargeTensorElements = 1 << 16;  // 256 KiB of floats

/// Lowers RLIMIT_FSIZE for this process (writes beyond it fail with EFBIG; SIGXFSZ is ignored)
/// and restores both on destruction.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t limit) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    previous_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit lowered = saved_;
    lowered.rlim_cur = limit;
    ::setrlimit(RLIMIT_FSIZE, &lowered);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, previous_handler_);
  }

 private:
  rlimit saved_{};
  void (*previous_handler_)(int) = SIG_DFL;
};

TEST(AtomicFile, WritesTheConcatenationOfTheChunks) {
  ScratchDir scratch;
  const std::string path = scratch.path("chunks.bin");
  const std::string a = "hello, ", b = "", c = "world";
  const std::vector<std::span<const std::byte>> chunks = {
      std::as_bytes(std::span(a)), std::as_bytes(std::span(b)), std::as_bytes(std::span(c))};
  write_file_atomically(path, chunks);
  EXPECT_EQ(read_bytes(path), testing::to_bytes("hello, world"));
  EXPECT_FALSE(has_temporary_files(scratch.dir()));
}

TEST(AtomicFile, MissingDirectoryThrowsAndLeavesNothing) {
  ScratchDir scratch;
  const std::string path = scratch.path("missing/out.npy");
  EXPECT_TRUE(rejects(
      [&] {
        write_npy(path, Tensor<float>{{1}, {1.0f}});
      },
      {path, "output file: expected to be written atomically", "creating"}));
  EXPECT_FALSE(std::filesystem::exists(scratch.path("missing")));
  EXPECT_TRUE(std::filesystem::is_empty(scratch.dir()));
}

TEST(AtomicFile, FailedOverwriteKeepsTheOldFileIntact) {
  ScratchDir scratch;
  const std::string path = scratch.path("kept.npy");
  const Tensor<float> old_tensor{{2}, {1.0f, 2.0f}};
  write_npy(path, old_tensor);
  const std::vector<std::byte> old_bytes = read_bytes(path);
  const Tensor<float> large{{kLargeTensorElements}, std::vector<float>(kLargeTensorElements, 3.0f)};
  {
    const FileSizeLimit limit(kFileSizeLimit);
    EXPECT_TRUE(rejects([&] { write_npy(path, large); }, {path, "writing", "File too large"}));
    EXPECT_TRUE(rejects(
        [&] {
          write_safetensors(path, std::map<std::string, Tensor<float>>{{"t", large}});
        },
        {path, "writing"}));
  }
  EXPECT_EQ(read_bytes(path), old_bytes);
  EXPECT_EQ(read_npy<float>(path), old_tensor);
  EXPECT_FALSE(has_temporary_files(scratch.dir()));
}

TEST(AtomicFile, FailedRenameRemovesTheTemporaryFile) {
  ScratchDir scratch;
  const std::string path = scratch.path("occupied");
  std::filesystem::create_directories(path + "/inside");
  EXPECT_TRUE(rejects([&] { write_npy(path, Tensor<float>{{1}, {1.0f}}); }, {path, "renaming"}));
  EXPECT_TRUE(std::filesystem::is_directory(path + "/inside"));
  EXPECT_FALSE(has_temporary_files(scratch.dir()));
}

TEST(AtomicFile, SuccessfulOverwriteReplacesTheContent) {
  ScratchDir scratch;
  const std::string path = scratch.path("replaced.npy");
  write_npy(path, Tensor<float>{{3}, {1, 2, 3}});
  write_npy(path, Tensor<float>{{1}, {9}});
  EXPECT_EQ(read_npy<float>(path), (Tensor<float>{{1}, {9}}));
  EXPECT_FALSE(has_temporary_files(scratch.dir()));
}

}  // namespace
}  // namespace subevict
