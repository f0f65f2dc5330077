#include "core/staged_directory.hpp"

#include <unistd.h>

#include "core/input_error.hpp"

namespace subevict {

namespace fs = std::filesystem;

StagedDirectory::StagedDirectory(const std::string& dir) : dir_(dir) {
  target_ = fs::absolute(dir).lexically_normal();
  if (target_.filename().empty()) target_ = target_.parent_path();  // "out/"
  temp_ = target_.parent_path() / (target_.filename().string() + ".tmp." + std::to_string(getpid()));
  std::error_code ec;
  fs::remove_all(temp_, ec);
  if (!fs::create_directories(temp_, ec) || ec) {
    throw InputError(dir, "output directory", "a writable location", ec.message());
  }
}

StagedDirectory::~StagedDirectory() {
  if (published_) return;
  std::error_code ec;
  fs::remove_all(temp_, ec);
}

void StagedDirectory::publish(const std::string& last) {
  try {
    fs::create_directories(target_);
    if (!last.empty()) fs::remove(target_ / last);  // absent while the directory is half updated
    for (const auto& entry : fs::directory_iterator(temp_)) {
      if (entry.path().filename() != last) fs::rename(entry.path(), target_ / entry.path().filename());
    }
    if (!last.empty() && fs::exists(temp_ / last)) fs::rename(temp_ / last, target_ / last);
    fs::remove_all(temp_);
    published_ = true;
  } catch (const fs::filesystem_error& e) {
    throw InputError(dir_, "output directory", "a writable location", e.what());
  }
}

}  // namespace subevict
