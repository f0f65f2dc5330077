#pragma once
/// \file
/// A directory's new contents, written into a temporary sibling and published by renames, so an
/// error never leaves a half-written output directory that looks complete. Used by every command
/// that writes a directory of results (simulate, verify, sweep report).

#include <filesystem>
#include <string>

namespace subevict {

/// Staging area for the files of one output directory.
class StagedDirectory {
 public:
  /// Creates the empty temporary directory `DIR.tmp.<pid>` beside `dir` (a stale one of the same
  /// name is removed first; a trailing slash on `dir` is ignored). Throws InputError(dir, "output
  /// directory", ...) when it cannot be created.
  explicit StagedDirectory(const std::string& dir);
  /// Removes the temporary directory unless publish() succeeded.
  ~StagedDirectory();
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;

  /// Where to write the new files.
  [[nodiscard]] const std::filesystem::path& path() const { return temp_; }

  /// Moves every file written under path() into `dir` (created if missing) with one rename each,
  /// so each file in `dir` is either its old or its complete new version; files of `dir` that
  /// were not rewritten stay. When `last` is non-empty, `dir/last` is removed first and moved in
  /// after every other file: its presence marks a complete directory. Throws InputError(dir, ...)
  /// with the system's reason on failure.
  void publish(const std::string& last = "");

 private:
  std::string dir_;
  std::filesystem::path target_, temp_;
  bool published_ = false;
};

}  // namespace subevict
