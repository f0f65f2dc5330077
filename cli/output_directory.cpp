#include "cli/output_directory.hpp"

#include <iostream>
#include <span>
#include <vector>

#include "core/atomic_file.hpp"
#include "core/plot.hpp"
#include "core/staged_directory.hpp"

namespace subevict::cli {

void publish_directory(const std::string& dir, const std::map<std::string, std::string>& files, bool draw) {
  StagedDirectory staged(dir);
  std::vector<std::string> figures;
  for (const auto& [name, text] : files) {
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(text.data()), text.size());
    const std::span<const std::byte> chunks[] = {bytes};
    write_file_atomically((staged.path() / name).string(), chunks);
    if (name.size() > 3 && name.ends_with(".gp")) figures.push_back(name.substr(0, name.size() - 3));
  }
  if (draw) {
    const plot::Rendering rendering = plot::render(staged.path(), figures);
    if (!rendering.note.empty()) std::cerr << "subevict: warning: " << rendering.note << "\n";
  }
  staged.publish();
}

}  // namespace subevict::cli
