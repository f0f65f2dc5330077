#include "cli/output_directory.hpp"

#include <cstdlib>
#include <iostream>
#include <span>

#include "core/atomic_file.hpp"
#include "core/staged_directory.hpp"

namespace subevict::cli {

void publish_directory(const std::string& dir, const std::map<std::string, std::string>& files,
                       bool run_gnuplot) {
  StagedDirectory staged(dir);
  for (const auto& [name, text] : files) {
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(text.data()), text.size());
    const std::span<const std::byte> chunks[] = {bytes};
    write_file_atomically((staged.path() / name).string(), chunks);
  }
  if (run_gnuplot) {
    const std::string cmd = "cd '" + staged.path().string() + "' && gnuplot plots.gp > /dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      std::cerr << "subevict: warning: gnuplot failed or is missing; plots skipped\n";
    }
  }
  staged.publish();
}

}  // namespace subevict::cli
